package server

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/bloomkit/bloomkit/redisbloom"
)

// On-disk files in Config.Dir.
const (
	SnapshotFile = "dump.bkdb"
	AOFFile      = "appendonly.aof"

	snapMagic = "BKSNAP01"
	aofMagic  = "BKAOF001"
	// maxRecord bounds one log record (a command's arguments).
	maxRecord = 1 << 31
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt marks a snapshot or log that failed its checksum or structure checks.
var ErrCorrupt = errors.New("corrupt file")

// appendLog is the append-only log: one record per successful write command,
// u32 length, u32 CRC-32C, then the arguments (u32 count, then u32 length +
// bytes each). Records are buffered under the keyspace lock and written (and
// fsynced, per appendfsync) by flushTo.
type appendLog struct {
	path  string
	mu    sync.Mutex // buf, spare, appended
	buf   []byte
	spare []byte // the previous buffer, reused to avoid garbage
	// appended counts bytes ever appended; written/synced count bytes
	// written to the file and fsynced.
	appended int64
	ioMu     sync.Mutex // f, written, synced
	f        *os.File
	written  int64
	synced   int64
	size     int64
}

func encodeRecord(dst []byte, args [][]byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(args)))
	for _, a := range args {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(a)))
		dst = append(dst, a...)
	}
	payload := dst[start+8:]
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(payload, crcTable))
	return dst
}

func decodeRecord(p []byte) ([][]byte, error) {
	if len(p) < 4 {
		return nil, ErrCorrupt
	}
	n := binary.LittleEndian.Uint32(p)
	p = p[4:]
	if uint64(n) > uint64(len(p))/4 {
		return nil, ErrCorrupt
	}
	args := make([][]byte, 0, n)
	for i := uint32(0); i < n; i++ {
		if len(p) < 4 {
			return nil, ErrCorrupt
		}
		l := binary.LittleEndian.Uint32(p)
		p = p[4:]
		if uint64(l) > uint64(len(p)) {
			return nil, ErrCorrupt
		}
		args = append(args, p[:l:l])
		p = p[l:]
	}
	if len(p) != 0 {
		return nil, ErrCorrupt
	}
	return args, nil
}

// append buffers a record and returns the log position that includes it.
func (a *appendLog) append(args [][]byte) int64 {
	a.mu.Lock()
	before := len(a.buf)
	a.buf = encodeRecord(a.buf, args)
	a.appended += int64(len(a.buf) - before)
	pos := a.appended
	a.mu.Unlock()
	return pos
}

// flushTo writes buffered records and, with sync, fsyncs until position pos
// is durable (group commit: one fsync covers every connection waiting).
func (a *appendLog) flushTo(pos int64, sync bool) error {
	a.ioMu.Lock()
	defer a.ioMu.Unlock()
	if sync && pos > 0 && a.synced >= pos {
		return nil
	}
	a.mu.Lock()
	buf := a.buf
	a.buf, a.spare = a.spare[:0], nil
	end := a.appended
	a.mu.Unlock()
	if a.f == nil {
		return errors.New("append-only log closed")
	}
	if len(buf) > 0 {
		if _, err := a.f.Write(buf); err != nil {
			// Cut any partial record and keep the records for a retry.
			a.f.Truncate(a.size)
			a.mu.Lock()
			a.buf = append(buf, a.buf...)
			a.mu.Unlock()
			return fmt.Errorf("write %s: %w", a.path, err)
		}
		a.size += int64(len(buf))
	}
	if cap(buf) <= 1<<20 {
		a.mu.Lock()
		a.spare = buf[:0]
		a.mu.Unlock()
	}
	a.written = end
	if sync && a.synced < end {
		if err := a.f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", a.path, err)
		}
		a.synced = end
	}
	return nil
}

func (a *appendLog) flush(sync bool) error { return a.flushTo(0, sync) }

func (a *appendLog) close() error {
	a.ioMu.Lock()
	open := a.f != nil
	a.ioMu.Unlock()
	if !open {
		return nil
	}
	err := a.flush(true)
	a.ioMu.Lock()
	if a.f != nil {
		a.f.Close()
		a.f = nil
	}
	a.ioMu.Unlock()
	return err
}

func (s *Server) aofSize() int64 {
	if s.aof == nil {
		return 0
	}
	a := s.aof
	a.ioMu.Lock()
	defer a.ioMu.Unlock()
	return a.size
}

func (s *Server) lastSaveStatus() string {
	if s.saveErr.Load() {
		return "err"
	}
	return "ok"
}

// load reads the snapshot and replays the log (called by New).
func (s *Server) load() error {
	if err := os.MkdirAll(s.cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("server: data directory: %w", err)
	}
	snapPath := filepath.Join(s.cfg.Dir, SnapshotFile)
	gen, n, err := s.loadSnapshot(snapPath)
	if err != nil {
		return err
	}
	if n >= 0 {
		s.log.Info("snapshot loaded", "file", snapPath, "keys", n, "generation", gen)
	}
	s.gen = gen
	aofPath := filepath.Join(s.cfg.Dir, AOFFile)
	s.db.loading = true
	replayed, err := s.replayAOF(aofPath, gen)
	s.db.loading = false
	if err != nil {
		return err
	}
	if replayed < 0 {
		// No usable log for this generation: start a fresh one.
		if err := writeEmptyAOF(aofPath, gen); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(aofPath, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("server: open %s: %w", aofPath, err)
	}
	st, _ := f.Stat()
	s.aof = &appendLog{path: aofPath, f: f, size: st.Size()}
	s.db.onExpire = func(key string) {
		s.aof.append([][]byte{[]byte("DEL"), []byte(key)})
	}
	s.db.recount()
	s.db.dirty = 0
	return nil
}

func writeEmptyAOF(path string, gen uint64) error {
	hdr := make([]byte, 16)
	copy(hdr, aofMagic)
	binary.LittleEndian.PutUint64(hdr[8:], gen)
	return writeFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(hdr)
		return err
	})
}

// replayAOF replays the log if its generation is current; it returns the
// number of records replayed, or -1 if there was no log for this generation.
func (s *Server) replayAOF(path string, gen uint64) (int, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return -1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("server: open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("server: stat %s: %w", path, err)
	}
	size := st.Size()
	r := bufio.NewReaderSize(f, 1<<20)
	hdr := make([]byte, 16)
	if _, err := io.ReadFull(r, hdr); err != nil || string(hdr[:8]) != aofMagic {
		return 0, fmt.Errorf("server: %s: not a bloomkit append-only log (bad header): %w", path, ErrCorrupt)
	}
	fileGen := binary.LittleEndian.Uint64(hdr[8:])
	if fileGen < gen {
		s.log.Info("append-only log predates the snapshot; starting a new one", "file", path, "log_generation", fileGen, "snapshot_generation", gen)
		return -1, nil
	}
	if fileGen > gen {
		return 0, fmt.Errorf("server: %s: log generation %d is newer than the snapshot's (%d): snapshot missing or stale: %w", path, fileGen, gen, ErrCorrupt)
	}
	off := int64(16)
	sess := &Session{authed: true, ID: 0}
	var reply Reply
	count := 0
	var rec []byte
	for {
		var h [8]byte
		n, err := io.ReadFull(r, h[:])
		if err == io.EOF {
			break
		}
		torn := func(why string) (int, error) {
			s.log.Warn("append-only log ends with a torn record; cutting it off", "file", path, "offset", off, "reason", why, "dropped_bytes", size-off)
			if err := f.Truncate(off); err != nil {
				return 0, fmt.Errorf("server: truncate %s: %w", path, err)
			}
			if err := f.Sync(); err != nil {
				return 0, fmt.Errorf("server: fsync %s: %w", path, err)
			}
			return count, nil
		}
		if err != nil {
			return torn(fmt.Sprintf("partial record header (%d bytes)", n))
		}
		l := int64(binary.LittleEndian.Uint32(h[:4]))
		sum := binary.LittleEndian.Uint32(h[4:])
		if off+8+l > size {
			return torn("record extends past end of file")
		}
		if l == 0 && sum == 0 && allZero(r) {
			return torn("zero-filled tail")
		}
		if l > maxRecord {
			return 0, fmt.Errorf("server: %s: record at offset %d: impossible length %d: %w", path, off, l, ErrCorrupt)
		}
		if int64(cap(rec)) < l {
			rec = make([]byte, l)
		}
		rec = rec[:l]
		if _, err := io.ReadFull(r, rec); err != nil {
			return torn("partial record")
		}
		if crc32.Checksum(rec, crcTable) != sum {
			return 0, fmt.Errorf("server: %s: checksum mismatch in record at offset %d; refusing to start (move the file away to start without it, losing its writes): %w", path, off, ErrCorrupt)
		}
		args, err := decodeRecord(rec)
		if err != nil || len(args) == 0 {
			return 0, fmt.Errorf("server: %s: malformed record at offset %d: %w", path, off, ErrCorrupt)
		}
		s.replay(sess, args, &reply)
		off += 8 + l
		count++
	}
	if count > 0 {
		s.log.Info("append-only log replayed", "file", path, "records", count)
	}
	return count, nil
}

// allZero reports whether everything left in r is zero bytes.
func allZero(r *bufio.Reader) bool {
	for {
		b, err := r.ReadByte()
		if err != nil {
			return true
		}
		if b != 0 {
			r.UnreadByte()
			return false
		}
	}
}

func (s *Server) replay(c *Session, args [][]byte, r *Reply) {
	aof := s.aof
	s.aof = nil
	s.Do(c, args, r)
	s.aof = aof
	if r.failed {
		s.log.Debug("replayed command failed", "cmd", string(args[0]), "reply", string(bytes.TrimSpace(r.Bytes())))
	}
}

// Save writes a snapshot (temp file, fsync, rename) and starts a new,
// empty append-only log. Clients wait while it runs.
func (s *Server) Save() error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	return s.save0()
}

func (s *Server) save() error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	return s.save0()
}

func (s *Server) save0() error {
	if s.cfg.NoPersistence {
		s.lastSave.Store(time.Now().Unix())
		return nil
	}
	start := time.Now()
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	gen := s.gen + 1
	path := filepath.Join(s.cfg.Dir, SnapshotFile)
	err := writeFileAtomic(path, func(w io.Writer) error { return s.writeSnapshot(w, gen) })
	if err != nil {
		s.saveErr.Store(true)
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	s.gen = gen
	// The snapshot holds everything: start the log of the new generation.
	aofPath := filepath.Join(s.cfg.Dir, AOFFile)
	if s.aof != nil {
		a := s.aof
		a.ioMu.Lock()
		a.mu.Lock()
		var err error
		if a.f != nil { // nil: the server closed meanwhile; the old log is stale now
			err = writeEmptyAOF(aofPath, gen)
		}
		if err == nil && a.f != nil {
			var f *os.File
			f, err = os.OpenFile(aofPath, os.O_WRONLY|os.O_APPEND, 0o644)
			if err == nil {
				if a.f != nil {
					a.f.Close()
				}
				a.f = f
				a.buf = nil
				a.size = 16
				a.written, a.synced = a.appended, a.appended
			}
		}
		a.mu.Unlock()
		a.ioMu.Unlock()
		if err != nil {
			s.saveErr.Store(true)
			return fmt.Errorf("rewrite %s: %w", aofPath, err)
		}
	}
	s.saveErr.Store(false)
	if st, err := os.Stat(path); err == nil {
		s.lastSnapSize.Store(st.Size())
	}
	s.lastSave.Store(time.Now().Unix())
	s.dirtyAtSave.Store(s.db.dirty)
	s.metrics.saves.Inc()
	s.log.Info("snapshot saved", "file", path, "keys", len(s.db.keys), "generation", gen, "took", time.Since(start))
	return nil
}

// writeFileAtomic writes path via a temp file in the same directory,
// fsyncs it, renames it into place and fsyncs the directory.
func writeFileAtomic(path string, fill func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err := fill(bw); err != nil {
		tmp.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

type crcWriter struct {
	w io.Writer
	h hash.Hash32
}

// Write writes p and adds it to the checksum.
func (c *crcWriter) Write(p []byte) (int, error) {
	c.h.Write(p)
	return c.w.Write(p)
}

// Snapshot layout: "BKSNAP01", u64 generation, u64 key count; per key:
// u32 key length, key, u8 kind, i64 expiry (unix ms, 0 none), u32 header
// length, the filter's SCANDUMP header, then its arrays in dump order;
// finally the CRC-32C of everything before it.
func (s *Server) writeSnapshot(w io.Writer, gen uint64) error {
	cw := &crcWriter{w: w, h: crc32.New(crcTable)}
	var b []byte
	b = append(b, snapMagic...)
	b = binary.LittleEndian.AppendUint64(b, gen)
	now := s.db.nowMs()
	live := 0
	for _, e := range s.db.keys {
		if e.expireAt == 0 || e.expireAt > now {
			live++
		}
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(live))
	if _, err := cw.Write(b); err != nil {
		return err
	}
	for k, e := range s.db.keys {
		if e.expireAt != 0 && e.expireAt <= now {
			continue
		}
		var hdr []byte
		var arrays [][]byte
		switch e.kind {
		case KindBloom:
			hdr = e.bf.Header()
			for i := range e.bf.Links {
				arrays = append(arrays, e.bf.Links[i].Data)
			}
		case KindCuckoo:
			hdr = e.cf.Header()
			arrays = e.cf.Filters
		}
		b = b[:0]
		b = binary.LittleEndian.AppendUint32(b, uint32(len(k)))
		b = append(b, k...)
		b = append(b, byte(e.kind))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.expireAt))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(hdr)))
		b = append(b, hdr...)
		if _, err := cw.Write(b); err != nil {
			return err
		}
		for _, a := range arrays {
			if _, err := cw.Write(a); err != nil {
				return err
			}
		}
	}
	_, err := w.Write(binary.LittleEndian.AppendUint32(nil, cw.h.Sum32()))
	return err
}

type crcReader struct {
	r io.Reader
	h hash.Hash32
}

// Read reads into p and adds what was read to the checksum.
func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	return n, err
}

// loadSnapshot loads path into the keyspace; it returns the generation and
// the key count, or (0, -1) if there is no snapshot.
func (s *Server) loadSnapshot(path string) (uint64, int, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, -1, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("server: open snapshot %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("server: stat snapshot %s: %w", path, err)
	}
	fail := func(what string, err error) (uint64, int, error) {
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrCorrupt) {
			return 0, 0, fmt.Errorf("server: snapshot %s is damaged (%s); refusing to start with a partial database — restore it or move it away: %w", path, what, ErrCorrupt)
		}
		return 0, 0, fmt.Errorf("server: snapshot %s is damaged (%s); refusing to start with a partial database — restore it or move it away: %w: %w", path, what, ErrCorrupt, err)
	}
	cr := &crcReader{r: bufio.NewReaderSize(f, 1<<20), h: crc32.New(crcTable)}
	// Every length read is bounded by the file size, so a forged header
	// cannot make us allocate more than the file could hold.
	remaining := st.Size()
	read := func(n int64) ([]byte, error) {
		if n > remaining {
			return nil, ErrCorrupt
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(cr, p); err != nil {
			return nil, err
		}
		remaining -= n
		return p, nil
	}
	head, err := read(24)
	if err != nil {
		return fail("header", err)
	}
	if string(head[:8]) != snapMagic {
		return fail("bad magic", nil)
	}
	gen := binary.LittleEndian.Uint64(head[8:])
	nkeys := binary.LittleEndian.Uint64(head[16:])
	if nkeys > uint64(remaining) {
		return fail("impossible key count", nil)
	}
	keys := make(map[string]*entry, nkeys)
	for i := uint64(0); i < nkeys; i++ {
		lb, err := read(4)
		if err != nil {
			return fail(fmt.Sprintf("key %d", i), err)
		}
		kb, err := read(int64(binary.LittleEndian.Uint32(lb)))
		if err != nil {
			return fail(fmt.Sprintf("key %d", i), err)
		}
		meta, err := read(13)
		if err != nil {
			return fail(fmt.Sprintf("key %q", kb), err)
		}
		kind := Kind(meta[0])
		exp := int64(binary.LittleEndian.Uint64(meta[1:]))
		hdr, err := read(int64(binary.LittleEndian.Uint32(meta[9:])))
		if err != nil {
			return fail(fmt.Sprintf("key %q header", kb), err)
		}
		e := &entry{kind: kind, expireAt: exp}
		var arrays [][]byte
		// The header's sizes must fit in what is left of the file.
		fits := func(n uint64) error {
			if n > uint64(remaining) {
				return ErrCorrupt
			}
			return nil
		}
		switch kind {
		case KindBloom:
			e.bf, err = redisbloom.LoadBloomHeader(hdr, fits)
			if err == nil {
				for j := range e.bf.Links {
					arrays = append(arrays, e.bf.Links[j].Data)
				}
			}
		case KindCuckoo:
			e.cf, err = redisbloom.LoadCuckooHeader(hdr, math.MaxUint16, fits)
			if err == nil {
				arrays = e.cf.Filters
			}
		default:
			err = ErrCorrupt
		}
		if err != nil {
			return fail(fmt.Sprintf("key %q: bad filter header", kb), err)
		}
		for _, a := range arrays {
			if int64(len(a)) > remaining {
				return fail(fmt.Sprintf("key %q data", kb), nil)
			}
			if _, err := io.ReadFull(cr, a); err != nil {
				return fail(fmt.Sprintf("key %q data", kb), err)
			}
			remaining -= int64(len(a))
		}
		keys[string(kb)] = e
	}
	want := cr.h.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(cr.r, sum[:]); err != nil {
		return fail("missing checksum", err)
	}
	if binary.LittleEndian.Uint32(sum[:]) != want {
		return fail("checksum mismatch", nil)
	}
	if n, _ := cr.r.Read(sum[:1]); n != 0 {
		return fail("trailing data", nil)
	}
	for k, e := range keys {
		s.db.attach(e)
		s.db.keys[k] = e
	}
	return gen, len(keys), nil
}
