package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
)

// This file opens the inputs that build, dedup and test read lines from.
// An input is opened once and read once: a pipe, a FIFO or stdin cannot be
// read twice, so only regular files are ever counted before being read.
// Compressed inputs are recognised by their first bytes, not their names,
// and decompressed as they are read.

// Magic numbers of the compressed formats read transparently.
var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// input is one opened input.
type input struct {
	name string    // as given; "-" for stdin
	r    io.Reader // the input's lines, decompressed
	// raw counts the bytes read from the file itself (compressed or not),
	// to compare with size for progress.
	raw         *countingReader
	size        int64  // the file's size when it is a regular file, else 0
	compression string // "gzip", "zstd" or ""
	close       func()
}

// countingReader counts the bytes read through it; the count may be read
// from another goroutine.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// openInput opens a named input, or stdin for "-", and decompresses it when
// its first bytes are those of gzip or zstd.
func openInput(name string, stdin io.Reader) (*input, error) {
	in := &input{name: name, close: func() {}}
	var src io.Reader = stdin
	if name == "-" {
		if f, ok := stdin.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
				in.size = fi.Size()
			}
		}
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		if fi.IsDir() {
			f.Close()
			return nil, fmt.Errorf("%s: is a directory", name)
		}
		if fi.Mode().IsRegular() {
			in.size = fi.Size()
		}
		src, in.close = f, func() { f.Close() }
	}
	in.raw = &countingReader{r: src}
	head, err := readHead(in.raw)
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(head), errReader{err, in.raw}), 64<<10)
	in.r = br
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		zr, err := gzip.NewReader(br)
		if err != nil {
			in.close()
			return nil, fmt.Errorf("%s: gzip: %w", displayName(name), err)
		}
		in.r, in.compression = zr, "gzip"
	case bytes.HasPrefix(head, zstdMagic):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1))
		if err != nil {
			in.close()
			return nil, fmt.Errorf("%s: zstd: %w", displayName(name), err)
		}
		closeFile := in.close
		in.r, in.compression = zr, "zstd"
		in.close = func() { zr.Close(); closeFile() }
	}
	return in, nil
}

// readHead reads the first bytes of r, enough to tell a compressed stream,
// without waiting for more than a live pipe has sent: it stops as soon as
// the bytes cannot begin a magic number (so "a\n" from a slow writer is
// handed on at once).
func readHead(r io.Reader) ([]byte, error) {
	head := make([]byte, 0, len(zstdMagic))
	for len(head) < cap(head) {
		n, err := r.Read(head[len(head):cap(head)])
		head = head[:len(head)+n]
		if err != nil {
			return head, err
		}
		if !bytes.HasPrefix(gzipMagic, head[:min(len(head), len(gzipMagic))]) &&
			!bytes.HasPrefix(zstdMagic, head) {
			break
		}
		if bytes.HasPrefix(head, gzipMagic) {
			break
		}
	}
	return head, nil
}

// errReader returns err (when set) instead of reading r: an error met while
// reading the head is reported after the head's bytes.
type errReader struct {
	err error
	r   io.Reader
}

func (e errReader) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return e.r.Read(p)
}

func displayName(in string) string {
	if in == "-" {
		return "stdin"
	}
	return in
}

// isRegularInput reports whether a named input is a regular file, the only
// kind that can be read twice (once to count its lines).
func isRegularInput(name string) bool {
	if name == "-" {
		return false
	}
	fi, err := os.Stat(name)
	return err == nil && fi.Mode().IsRegular()
}

// countLines counts the lines of the named inputs (decompressed), for sizing
// a filter when -n is not given. Every input must be a regular file: a pipe,
// FIFO or stdin would be consumed by the count.
func countLines(inputs []string, header bool) (uint64, error) {
	var total uint64
	buf := make([]byte, chunkSize)
	for _, name := range inputs {
		if !isRegularInput(name) {
			if _, err := os.Stat(name); name != "-" && err != nil {
				return 0, err
			}
			return 0, fmt.Errorf("-n is required: %s is a pipe, FIFO or terminal, which can be read only once, "+
				"so its lines cannot be counted first (give -n N, the number of distinct keys to size for)", displayName(name))
		}
		in, err := openInput(name, nil)
		if err != nil {
			return 0, err
		}
		var lines uint64
		last := byte('\n')
		for {
			k, err := in.r.Read(buf)
			if k > 0 {
				lines += uint64(bytes.Count(buf[:k], []byte{'\n'}))
				last = buf[k-1]
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				in.close()
				return 0, fmt.Errorf("%s: %w", name, err)
			}
		}
		in.close()
		if last != '\n' {
			lines++
		}
		if header && lines > 0 {
			lines--
		}
		total += lines
	}
	return total, nil
}
