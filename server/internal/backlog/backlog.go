// Package backlog is the replication stream's recent history: a buffer of
// the bytes a master sent, addressed by their offset in the stream, that
// keeps the last Keep bytes for replicas that reconnect (partial resync)
// and, beyond that, whatever a connected replica has not read yet, up to
// that replica's output limit. One copy serves every replica, as Redis 7's
// shared replication buffer does: a replica is a read position, not a
// buffer of its own.
//
// Appends are O(len) and never block on a reader: a reader that falls
// more than its hard limit behind (or more than its soft limit for longer
// than the soft period) is dropped, and its Wait reports ErrTooSlow.
package backlog

import (
	"errors"
	"sync"
	"time"
)

// blockSize is the unit of allocation and of trimming.
const blockSize = 64 << 10

// ErrTooSlow is returned to a reader dropped for falling behind its limits.
var ErrTooSlow = errors.New("replica output buffer limit reached")

// ErrClosed is returned to a reader after Close.
var ErrClosed = errors.New("reader closed")

// Limits are a reader's output limits (Redis's client-output-buffer-limit
// replica class): it is dropped when Hard bytes behind (0: no hard limit),
// or Soft bytes behind for SoftFor.
type Limits struct {
	Hard, Soft int64
	SoftFor    time.Duration
}

// Buffer holds the stream between offsets First() and End().
type Buffer struct {
	mu      sync.Mutex
	blocks  [][]byte // blocks[0][0] is at offset base; only the last may be partly filled
	base    int64
	end     int64
	keep    int64
	readers map[*Reader]struct{}
	now     func() time.Time
}

// New returns an empty buffer whose stream starts at offset start and that
// keeps at least keep bytes of history.
func New(start, keep int64) *Buffer {
	return &Buffer{base: start, end: start, keep: max(keep, 1), readers: map[*Reader]struct{}{}, now: time.Now}
}

// SetKeep changes how much history is kept (CONFIG SET repl-backlog-size).
func (b *Buffer) SetKeep(keep int64) {
	b.mu.Lock()
	b.keep = max(keep, 1)
	b.trim()
	b.mu.Unlock()
}

// Keep is how much history is kept.
func (b *Buffer) Keep() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.keep
}

// End is the offset after the last byte appended.
func (b *Buffer) End() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.end
}

// First is the offset of the oldest byte held (End when nothing is held).
func (b *Buffer) First() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.base
}

// Reset forgets everything and starts the stream again at offset start
// (a replica after a full resync). Readers are dropped with ErrClosed.
func (b *Buffer) Reset(start int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for r := range b.readers {
		r.drop(ErrClosed)
	}
	b.blocks = nil
	b.base, b.end = start, start
}

// Append adds p at the end of the stream and wakes the readers.
func (b *Buffer) Append(p []byte) {
	if len(p) == 0 {
		return
	}
	b.mu.Lock()
	grew := false
	for len(p) > 0 {
		if n := len(b.blocks); n == 0 || len(b.blocks[n-1]) == blockSize {
			b.blocks = append(b.blocks, make([]byte, 0, blockSize))
			grew = true
		}
		last := &b.blocks[len(b.blocks)-1]
		k := min(len(p), blockSize-len(*last))
		*last = append(*last, p[:k]...)
		p = p[k:]
		b.end += int64(k)
	}
	if grew {
		b.checkLimits()
		b.trim()
	}
	for r := range b.readers {
		select {
		case r.ready <- struct{}{}:
		default:
		}
	}
	b.mu.Unlock()
}

// checkLimits drops readers too far behind (b.mu held).
func (b *Buffer) checkLimits() {
	var now time.Time
	for r := range b.readers {
		behind := b.end - r.pos
		switch {
		case r.lim.Hard > 0 && behind > r.lim.Hard:
			r.drop(ErrTooSlow)
		case r.lim.Soft > 0 && behind > r.lim.Soft:
			if now.IsZero() {
				now = b.now()
			}
			if r.softSince.IsZero() {
				r.softSince = now
			} else if now.Sub(r.softSince) >= r.lim.SoftFor {
				r.drop(ErrTooSlow)
			}
		default:
			r.softSince = time.Time{}
		}
	}
}

// trim lets go of whole blocks that are older than the history kept and
// that no reader still needs (b.mu held).
func (b *Buffer) trim() {
	need := b.end - b.keep
	for r := range b.readers {
		need = min(need, r.pos)
	}
	drop := 0
	for drop < len(b.blocks)-1 && b.base+blockSize <= need {
		b.blocks[drop] = nil
		b.base += blockSize
		drop++
	}
	if drop > 0 {
		b.blocks = append(b.blocks[:0], b.blocks[drop:]...)
	}
}

// Reader reads the stream from its own position on.
type Reader struct {
	b         *Buffer
	pos       int64
	lim       Limits
	ready     chan struct{}
	gone      chan struct{} // closed when dropped
	err       error         // set when dropped (b.mu)
	softSince time.Time
}

// NewReader returns a reader positioned at offset pos, which must be
// within [First, End]; ok is false otherwise (the history is gone).
func (b *Buffer) NewReader(pos int64, lim Limits) (*Reader, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if pos < b.base || pos > b.end {
		return nil, false
	}
	r := &Reader{b: b, pos: pos, lim: lim, ready: make(chan struct{}, 1), gone: make(chan struct{})}
	b.readers[r] = struct{}{}
	return r, true
}

func (r *Reader) drop(err error) {
	r.err = err
	close(r.gone)
	delete(r.b.readers, r)
	select {
	case r.ready <- struct{}{}:
	default:
	}
}

// Close stops the reader; the history it held may be trimmed.
func (r *Reader) Close() {
	r.b.mu.Lock()
	if r.err == nil {
		r.drop(ErrClosed)
	}
	r.b.trim()
	r.b.mu.Unlock()
}

// Pos is the offset of the next byte the reader returns.
func (r *Reader) Pos() int64 {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	return r.pos
}

// Lag is how many bytes the reader is behind the end of the stream.
func (r *Reader) Lag() int64 {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	return r.b.end - r.pos
}

// Read copies the bytes available from the reader's position into p,
// without waiting: 0 and no error when it is at the end. After the reader
// was dropped it returns the reason (ErrTooSlow, ErrClosed).
func (r *Reader) Read(p []byte) (int, error) {
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.err != nil {
		return 0, r.err
	}
	n := 0
	for n < len(p) && r.pos < b.end {
		i := (r.pos - b.base) / blockSize
		off := (r.pos - b.base) % blockSize
		blk := b.blocks[i]
		k := copy(p[n:], blk[off:])
		n += k
		r.pos += int64(k)
	}
	return n, nil
}

// Dropped is closed when the reader is dropped (too slow, Reset, Close):
// a writer blocked on a replica that does not read can give up at once.
func (r *Reader) Dropped() <-chan struct{} { return r.gone }

// Ready is signalled when bytes were appended after the last Read or the
// reader was dropped.
func (r *Reader) Ready() <-chan struct{} { return r.ready }
