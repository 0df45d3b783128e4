package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAllChunks reads r through a chunkReader and returns the chunks.
func readAllChunks(t testing.TB, r io.Reader) ([][]byte, error) {
	cr := newChunkReader(r)
	var out [][]byte
	for {
		c, ok := cr.next()
		if !ok {
			return out, nil
		}
		if c.err != nil {
			return out, c.err
		}
		out = append(out, bytes.Clone(c.data))
		cr.release(c)
	}
}

// checkChunks verifies that chunks put together are data and that every
// chunk but the last ends a line.
func checkChunks(t testing.TB, data []byte, chunks [][]byte) {
	t.Helper()
	if got := bytes.Join(chunks, nil); !bytes.Equal(got, data) {
		t.Fatalf("chunks join to %d bytes, want %d", len(got), len(data))
	}
	for i, c := range chunks {
		if len(c) == 0 {
			t.Fatalf("chunk %d is empty", i)
		}
		if i < len(chunks)-1 && c[len(c)-1] != '\n' {
			t.Fatalf("chunk %d of %d does not end a line", i, len(chunks))
		}
	}
}

func TestChunkReader(t *testing.T) {
	long := strings.Repeat("x", 3*chunkSize+17)
	for name, data := range map[string]string{
		"empty":        "",
		"one line":     "hello\n",
		"no newline":   "hello",
		"many":         keys("line", 200000),
		"long lines":   "a\n" + long + "\n" + long + "b\nc",
		"long last":    "a\n" + long,
		"only newline": strings.Repeat("\n", 3*chunkSize),
	} {
		t.Run(name, func(t *testing.T) {
			for rname, r := range map[string]io.Reader{
				"whole":    strings.NewReader(data),
				"one byte": iotest.OneByteReader(strings.NewReader(data)),
				"half":     iotest.HalfReader(strings.NewReader(data)),
			} {
				if rname == "one byte" && len(data) > 1<<20 {
					continue
				}
				chunks, err := readAllChunks(t, r)
				if err != nil {
					t.Fatalf("%s: %v", rname, err)
				}
				checkChunks(t, []byte(data), chunks)
			}
		})
	}
}

func TestChunkReaderErrors(t *testing.T) {
	_, err := readAllChunks(t, iotest.TimeoutReader(strings.NewReader(keys("k", 100000))))
	if err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("read error: %v", err)
	}
}

// A line above maxLine is an error, not a split key. Zeros from a reader
// that never ends cost no memory to produce. The handoff between the
// reading goroutine and its consumer is the other chunk tests' under
// -race; this one reads 64 MiB, which the race detector makes seconds.
func TestChunkReaderLineTooLong(t *testing.T) {
	outputOnly(t)
	_, err := readAllChunks(t, io.LimitReader(zeros{}, maxLine+10))
	if err != errLineTooLong {
		t.Errorf("over-long line: %v", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestFieldKey(t *testing.T) {
	for _, c := range []struct {
		line  string
		field int
		delim byte
		want  string
		ok    bool
	}{
		{"a,b,c\n", 0, ',', "a,b,c", true},
		{"a,b,c\r\n", 2, ',', "b", true},
		{"a,b,c", 3, ',', "c", true},
		{"a,b,c", 4, ',', "", false},
		{"a,,c", 2, ',', "", true},
		{`"x,y",z`, 1, ',', "x,y", true},
		{`"x,y",z`, 2, ',', "z", true},
		{`1,"say ""hi""",3`, 2, ',', `say "hi"`, true},
		{`1,"say ""hi""",3`, 3, ',', "3", true},
		{`1,"open`, 2, ',', "open", true},
		{`1,"a""`, 2, ',', `a"`, true},
		{`"a"b,c`, 2, ',', "", false},
		{"a\tb\tc\n", 2, '\t', "b", true},
		{"", 1, ',', "", true},
		{"", 2, ',', "", false},
	} {
		fs := &fieldSpec{field: c.field, delim: c.delim}
		got, ok := fs.key([]byte(c.line))
		if string(got) != c.want || ok != c.ok {
			t.Errorf("key(%q, field %d) = %q, %v; want %q, %v", c.line, c.field, got, ok, c.want, c.ok)
		}
	}
}

func FuzzFieldKey(f *testing.F) {
	f.Add([]byte(`1,"say ""hi""",3`), 2, byte(','))
	f.Add([]byte("a\tb\r\n"), 1, byte('\t'))
	f.Fuzz(func(t *testing.T, line []byte, field int, delim byte) {
		fs := &fieldSpec{field: field % 8, delim: delim}
		if fs.field < 0 {
			fs.field = -fs.field
		}
		key, ok := fs.key(line)
		if !ok && key != nil {
			t.Fatalf("no column but key %q", key)
		}
		if fs.field == 0 && !bytes.Equal(key, trimEOL(line)) {
			t.Fatalf("whole-line key %q of %q", key, line)
		}
		if len(key) > len(line) {
			t.Fatalf("key %q longer than line %q", key, line)
		}
	})
}

func FuzzChunkReader(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc"), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		r := io.Reader(bytes.NewReader(data))
		if step%2 == 1 {
			r = iotest.OneByteReader(r)
		}
		chunks, err := readAllChunks(t, r)
		if err != nil {
			t.Fatal(err)
		}
		checkChunks(t, data, chunks)
	})
}
