package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// Input is read in chunks of whole lines by a goroutine, so that reading
// overlaps hashing, and no line is ever split: a line longer than a chunk
// grows the chunk (up to maxLine) instead of being cut in two.

const (
	// chunkSize is the size of a read buffer.
	chunkSize = 1 << 20
	// maxLine is the longest line accepted; a longer one is an error, not a
	// silently split key.
	maxLine = 64 << 20
	// chunkBuffers is how many buffers circulate between reader and consumer.
	chunkBuffers = 3
)

// errLineTooLong reports a line above maxLine.
var errLineTooLong = fmt.Errorf("a line is longer than %d MiB", maxLine>>20)

// chunk is a run of whole lines; only the last chunk of an input may end
// without a newline. err is set on the final chunk when reading failed.
type chunk struct {
	data []byte
	buf  []byte // to hand back with release
	err  error
}

// chunkReader reads r in a goroutine and delivers chunks of whole lines.
type chunkReader struct {
	c     chan chunk
	free  chan []byte
	bytes atomic.Int64 // bytes read so far, for progress
}

// newChunkReader starts reading r. The caller receives from next until it
// returns ok = false and hands every chunk's buffer back with release.
// A consumer that stops early may simply abandon the reader.
func newChunkReader(r io.Reader) *chunkReader {
	cr := &chunkReader{c: make(chan chunk, chunkBuffers-1), free: make(chan []byte, chunkBuffers)}
	for range chunkBuffers {
		cr.free <- make([]byte, chunkSize)
	}
	go cr.loop(r)
	return cr
}

func (cr *chunkReader) loop(r io.Reader) {
	defer close(cr.c)
	buf := (<-cr.free)[:0]
	for {
		if len(buf) == cap(buf) {
			// A line longer than the buffer: grow it rather than split it.
			if cap(buf) >= maxLine+1 {
				cr.c <- chunk{err: errLineTooLong}
				return
			}
			bigger := make([]byte, len(buf), min(2*cap(buf), maxLine+1))
			copy(bigger, buf)
			buf = bigger
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		cr.bytes.Add(int64(n))
		start := len(buf)
		buf = buf[:len(buf)+n]
		if err != nil {
			if len(buf) > 0 {
				cr.c <- chunk{data: buf, buf: buf}
			}
			if !errors.Is(err, io.EOF) {
				cr.c <- chunk{err: err}
			}
			return
		}
		// Send the whole lines, keep the tail for the next buffer. Only the
		// bytes just read can hold the last newline of interest.
		i := bytes.LastIndexByte(buf[start:], '\n')
		if i < 0 {
			continue
		}
		// Send at once, even a short chunk: a slow producer's lines must
		// not wait for a full buffer.
		i += start
		next := (<-cr.free)[:0]
		next = append(next, buf[i+1:]...)
		cr.c <- chunk{data: buf[:i+1], buf: buf}
		buf = next
	}
}

// next returns the next chunk; ok is false when the input is done.
func (cr *chunkReader) next() (chunk, bool) {
	c, ok := <-cr.c
	return c, ok
}

// release hands a chunk's buffer back for reuse. Buffers grown for a long
// line are dropped once used, so memory stays bounded by normal chunks.
func (cr *chunkReader) release(c chunk) {
	if c.buf == nil {
		return
	}
	if cap(c.buf) > chunkSize {
		c.buf = make([]byte, chunkSize)
	}
	cr.free <- c.buf[:0]
}

// cutLine splits the first line off data: line holds its bytes with the
// newline, if any; rest what follows.
func cutLine(data []byte) (line, rest []byte) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return data[:i+1], data[i+1:]
	}
	return data, nil
}

// trimEOL removes a trailing "\n" or "\r\n": the key of a line.
func trimEOL(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
	}
	return line
}

// fieldSpec picks the key out of a line: the whole line, or one column of a
// CSV or TSV record.
type fieldSpec struct {
	field   int  // 1-based column; 0 for the whole line
	delim   byte // column separator
	scratch []byte
}

// parseDelim accepts a single byte or a name: tab, \t, comma, space, pipe.
func parseDelim(s string) (byte, error) {
	switch s {
	case `\t`, "tab", "TAB":
		return '\t', nil
	case "comma":
		return ',', nil
	case "space":
		return ' ', nil
	case "pipe":
		return '|', nil
	case "semicolon":
		return ';', nil
	}
	if len(s) != 1 || s[0] == '\n' || s[0] == '"' || s[0] == '\r' {
		return 0, fmt.Errorf("--delim %q: want one character such as , or tab", s)
	}
	return s[0], nil
}

// key returns the key of a line (without its line ending). ok is false when
// the line has fewer columns than asked for. A column may be quoted as in
// RFC 4180 ("a, b" or "say ""hi"""); records must not span lines. The
// returned slice is valid until the next call.
func (fs *fieldSpec) key(line []byte) (key []byte, ok bool) {
	line = trimEOL(line)
	if fs.field == 0 {
		return line, true
	}
	for col := 1; ; col++ {
		var val []byte
		if len(line) > 0 && line[0] == '"' {
			val, line = fs.quoted(line[1:])
		} else if i := bytes.IndexByte(line, fs.delim); i >= 0 {
			val, line = line[:i], line[i:]
		} else {
			val, line = line, nil
		}
		if col == fs.field {
			return val, true
		}
		if len(line) == 0 || line[0] != fs.delim {
			return nil, false
		}
		line = line[1:]
	}
}

// quoted reads a quoted column whose opening quote was already consumed and
// returns its value and what follows the closing quote. A missing closing
// quote ends the value at the end of the line.
func (fs *fieldSpec) quoted(s []byte) (val, rest []byte) {
	i := bytes.IndexByte(s, '"')
	if i >= 0 && i+1 < len(s) && s[i+1] == '"' {
		// An escaped quote: the value needs unescaping into scratch.
		fs.scratch = fs.scratch[:0]
		for {
			j := bytes.IndexByte(s, '"')
			if j < 0 {
				return append(fs.scratch, s...), nil
			}
			fs.scratch = append(fs.scratch, s[:j]...)
			if j+1 < len(s) && s[j+1] == '"' {
				fs.scratch = append(fs.scratch, '"')
				s = s[j+2:]
				continue
			}
			return fs.scratch, s[j+1:]
		}
	}
	if i < 0 {
		return s, nil
	}
	return s[:i], s[i+1:]
}

// inScratch reports whether key lives in the scratch buffer, which the next
// call to key overwrites.
func (fs *fieldSpec) inScratch(key []byte) bool {
	return len(key) > 0 && len(fs.scratch) > 0 && &key[0] == &fs.scratch[0]
}
