package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/bloomkit/bloomkit/internal/format"
)

var update = flag.Bool("update", false, "write golden files that are missing (never overwrites)")

// goldenCase builds a filter the same way in every version of this package;
// its encoding must never change.
type goldenCase struct {
	file  string
	build func() (filter, error)
	read  func([]byte) (filter, error)
}

var goldenCases = []goldenCase{
	{
		// Hash id 1, which earlier versions wrote: read and answered as
		// they were, and still written the same from the same Params.
		file: "classic-v1.bloom",
		build: func() (filter, error) {
			// Estimate(2000, 0.01) as it was, pinned.
			return NewFromParams(Params{M: 19171, K: 7, N: 2000, P: 0.01, Seed: 0x0123456789abcdef, Hash: HashXXH3})
		},
		read: layouts[0].decode,
	},
	{
		file: "classic-unseeded-v1.bloom",
		build: func() (filter, error) {
			return NewFromParams(Params{M: 10_007, K: 5, Hash: HashXXH3}) // m not a multiple of 64
		},
		read: layouts[0].decode,
	},
	{
		// Hash id 2, which new classic filters use.
		file: "classic-hash2-v1.bloom",
		build: func() (filter, error) {
			return NewFromParams(Params{M: 19171, K: 7, N: 2000, P: 0.01, Seed: 0x0123456789abcdef, Hash: HashXXH3Remix})
		},
		read: layouts[0].decode,
	},
	{
		file: "classic-unseeded-hash2-v1.bloom",
		build: func() (filter, error) {
			return NewFromParams(Params{M: 10_007, K: 5}) // 0: the newest id
		},
		read: layouts[0].decode,
	},
	{
		// A small filter at a low rate, where hash id 1 fails.
		file: "classic-small-hash2-v1.bloom",
		build: func() (filter, error) {
			return NewFromParams(Params{M: 336, K: 23, N: 10, P: 1e-7, Seed: 7, Hash: HashXXH3Remix})
		},
		read: layouts[0].decode,
	},
	{
		file: "blocked-v1.bloom",
		build: func() (filter, error) {
			// EstimateBlocked(2000, 0.01), pinned: the sizing model may
			// change, the encoding may not.
			// Hash id 1, which earlier versions wrote for every blocked
			// filter.
			return NewBlockedFromParams(Params{M: 19968, K: 6, N: 2000, P: 0.01, Seed: 0x0123456789abcdef, Hash: HashXXH3})
		},
		read: layouts[1].decode,
	},
	{
		// Hash id 4, which new blocked filters use.
		file: "blocked-hash4-v1.bloom",
		build: func() (filter, error) {
			return NewBlockedFromParams(Params{M: 19968, K: 6, N: 2000, P: 0.01, Seed: 0x0123456789abcdef, Hash: HashXXH3x64})
		},
		read: layouts[1].decode,
	},
	{
		file: "blocked-unseeded-hash4-v1.bloom",
		build: func() (filter, error) {
			return NewBlockedFromParams(Params{M: 10_240, K: 7, Hash: HashXXH3x64}) // the seed-0 fast path
		},
		read: layouts[1].decode,
	},
}

// goldenKeys go into every golden filter; goldenProbes are asked of it.
func goldenKeys() []string { return keys("golden", 0, 1000) }

func goldenProbes() []string {
	return append(keys("golden", 0, 1000), keys("never-added", 0, 20_000)...)
}

func answers(f filter, probes []string) string {
	var b strings.Builder
	for i, ok := range batchTest(f, probes, nil) {
		if ok {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
		if i%100 == 99 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func TestGoldenFiles(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.file, func(t *testing.T) {
			f, err := c.build()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range goldenKeys() {
				f.AddString(k)
			}
			got, err := f.marshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "golden", c.file)
			ansPath := strings.TrimSuffix(path, ".bloom") + ".answers"
			if *update {
				writeOnce(t, path, got)
				writeOnce(t, ansPath, []byte(answers(f, goldenProbes())))
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGoldenFiles -update once to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("encoding changed: %s no longer matches what this version writes (%d vs %d bytes)", path, len(got), len(want))
			}
			// The stored file must load and answer exactly as recorded.
			g, err := c.read(want)
			if err != nil {
				t.Fatalf("reading %s: %v", path, err)
			}
			wantAns, err := os.ReadFile(ansPath)
			if err != nil {
				t.Fatal(err)
			}
			if a := answers(g, goldenProbes()); a != string(wantAns) {
				t.Errorf("%s answers differently from %s", path, ansPath)
			}
			fp := strings.Count(string(wantAns[1010:]), "1")
			t.Logf("%s: %d bytes, %d false positives recorded among 20000 absent keys", c.file, len(want), fp)
		})
	}
}

func writeOnce(t *testing.T, path string, data []byte) {
	if _, err := os.Stat(path); err == nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}

// sample returns the encoding of a small classic filter with a few keys.
func sample(t testing.TB) []byte {
	f, err := NewFromParams(Params{M: 1000, K: 4})
	if err != nil {
		t.Fatal(err)
	}
	f.AddString("a")
	f.AddString("b")
	b, err := f.marshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// resign recomputes the header and trailer checksums after a forgery, so
// that the decoder's other checks are reached.
func resign(b []byte) []byte {
	binary.LittleEndian.PutUint32(b[72:], crc32.Checksum(b[:72], format.Castagnoli))
	if len(b) >= headerSize+4 {
		binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], format.Castagnoli))
	}
	return b
}

func TestDecodeErrors(t *testing.T) {
	orig := sample(t)
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), orig...)) }
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"bad magic", mod(func(b []byte) []byte { b[0] = 'B'; return b }), ErrBadMagic},
		{"not a filter", []byte(strings.Repeat("hello world ", 20)), ErrBadMagic},
		{"newer version", mod(func(b []byte) []byte { b[8] = 2; return resign(b) }), ErrVersion},
		{"version 0", mod(func(b []byte) []byte { b[8] = 0; return resign(b) }), ErrVersion},
		{"header bit flip", mod(func(b []byte) []byte { b[25] ^= 4; return b }), ErrChecksum},
		{"payload bit flip", mod(func(b []byte) []byte { b[headerSize+3] ^= 1; return b }), ErrChecksum},
		{"trailer bit flip", mod(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrChecksum},
		{"blocked type", mod(func(b []byte) []byte { b[10] = TypeBlocked; return resign(b) }), ErrType},
		{"blocked type, hash id 1", mod(func(b []byte) []byte { b[10], b[11] = TypeBlocked, HashXXH3; return resign(b) }), ErrType},
		{"hash id 0", mod(func(b []byte) []byte { b[11] = 0; return resign(b) }), ErrHash},
		{"hash id 3", mod(func(b []byte) []byte { b[11] = 3; return resign(b) }), ErrHash},
		{"unknown type", mod(func(b []byte) []byte { b[10] = 200; return resign(b) }), ErrType},
		{"unknown hash", mod(func(b []byte) []byte { b[11] = 9; return resign(b) }), ErrHash},
		{"flags set", mod(func(b []byte) []byte { b[12] = 1; return resign(b) }), ErrCorrupt},
		{"reserved set", mod(func(b []byte) []byte { b[77] = 1; return resign(b) }), ErrCorrupt},
		{"k = 0", mod(func(b []byte) []byte { b[32] = 0; return resign(b) }), ErrCorrupt},
		{"k too big", mod(func(b []byte) []byte { b[32] = MaxK + 1; return resign(b) }), ErrCorrupt},
		{"m = 0", mod(func(b []byte) []byte { clear(b[24:32]); return resign(b) }), ErrCorrupt},
		{"m disagrees with payload", mod(func(b []byte) []byte { b[25] += 1; return resign(b) }), ErrCorrupt},
		{"payload length forged", mod(func(b []byte) []byte { b[64] += 8; return resign(b) }), ErrCorrupt},
		{"bits beyond m", mod(func(b []byte) []byte { b[headerSize+125] |= 0x80; return resign(b) }), ErrCorrupt},
		{"m above limit", mod(func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[24:], MaxBits*2)
			return resign(b)
		}), ErrTooLarge},
		{"trailing data", append(append([]byte(nil), orig...), 0), ErrCorrupt},
	}
	for _, c := range cases {
		var f Filter
		err := f.unmarshalBinary(c.data)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
		if f.words != nil {
			t.Errorf("%s: failed decode changed the filter", c.name)
		}
	}
}

func TestDecodeEveryTruncation(t *testing.T) {
	for _, l := range layouts {
		f := mustNew(t, l, 300, 0.01)
		f.AddString("x")
		b, _ := f.marshalBinary()
		for n := range len(b) {
			if _, err := l.decode(b[:n]); !errors.Is(err, ErrTruncated) {
				t.Fatalf("%s: %d of %d bytes: err = %v", l.name, n, len(b), err)
			}
			// The same through a reader that hides its length and returns
			// one byte at a time.
			var g Filter
			var h Blocked
			r := iotest.OneByteReader(bytes.NewReader(b[:n]))
			var err error
			if l.name == "classic" {
				_, err = g.ReadFrom(r)
			} else {
				_, err = h.ReadFrom(r)
			}
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("%s streamed: %d of %d bytes: err = %v", l.name, n, len(b), err)
			}
		}
	}
}

// forgedHuge returns a valid header announcing a filter of MaxBits bits,
// followed by a little payload.
func forgedHuge() []byte {
	h := format.Header{Type: TypeClassic, M: MaxBits, K: 7, PayloadLen: MaxBits / 8}
	return append(h.Marshal(), make([]byte, 1<<16)...)
}

func TestForgedSizeDoesNotAllocate(t *testing.T) {
	data := forgedHuge()
	readers := map[string]func() io.Reader{
		"sized":    func() io.Reader { return bytes.NewReader(data) },
		"streamed": func() io.Reader { return io.MultiReader(bytes.NewReader(data)) },
	}
	for name, r := range readers {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var f Filter
		_, err := f.ReadFrom(r())
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrTruncated) {
			t.Errorf("%s: err = %v", name, err)
		}
		// A 1 TiB header on a 64 KiB stream may cost at most the eager
		// allocation (1 MiB) and a read buffer, never the announced size.
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
			t.Errorf("%s: reading a forged header allocated %d MiB", name, grew>>20)
		}
	}
}

// TestReadKeepsLength: Read sees the header before the filter type does,
// and must hand the type's decoder an input that still tells its length,
// so that a header announcing more than the input holds is refused before
// anything is allocated for it: 88 bytes in a bytes.Reader or a file used
// to cost 64 MiB through Read (and nothing through unmarshalBinary).
func TestReadKeepsLength(t *testing.T) {
	data := forgedHuge()[:88]
	path := filepath.Join(t.TempDir(), "forged.bloom")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	readers := map[string]func() io.Reader{
		"bytes.Reader": func() io.Reader { return bytes.NewReader(data) },
		"os.File": func() io.Reader {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		},
	}
	for name, r := range readers {
		in := r()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := Read(in)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrTruncated) {
			t.Errorf("%s: err = %v", name, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
			t.Errorf("%s: Read of an 88-byte forged header allocated %d KiB", name, grew>>10)
		}
	}
	// The length still counts down correctly: a real filter after a
	// forged-looking prefix is not needed, but two filters back to back
	// in one file are each read whole.
	a, _ := New(1000, 0.01)
	b, _ := NewBlocked(1000, 0.01)
	a.AddString("x")
	b.AddString("y")
	var buf bytes.Buffer
	a.WriteTo(&buf)
	b.WriteTo(&buf)
	both := filepath.Join(t.TempDir(), "two.bloom")
	if err := os.WriteFile(both, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(both)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, k := range []string{"x", "y"} {
		g, err := Read(f)
		if err != nil {
			t.Fatal(err)
		}
		if !g.TestString(k) {
			t.Errorf("filter read back lost %q", k)
		}
	}
}

func TestReadFromStopsAtTrailer(t *testing.T) {
	// Two filters back to back in one stream read one after the other.
	a, _ := New(100, 0.01)
	b, _ := NewBlocked(100, 0.01)
	a.AddString("first")
	b.AddString("second")
	var buf bytes.Buffer
	na, _ := a.WriteTo(&buf)
	nb, _ := b.WriteTo(&buf)
	r := io.MultiReader(&buf) // hide Len
	var a2 Filter
	var b2 Blocked
	if n, err := a2.ReadFrom(r); err != nil || n != na {
		t.Fatalf("first: n=%d err=%v, wrote %d", n, err, na)
	}
	if n, err := b2.ReadFrom(r); err != nil || n != nb {
		t.Fatalf("second: n=%d err=%v, wrote %d", n, err, nb)
	}
	if !a2.Equal(a) || !b2.Equal(b) || !a2.TestString("first") || !b2.TestString("second") {
		t.Error("filters read back differ")
	}
}

type failingWriter struct{ after int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.after < len(p) {
		n := max(w.after, 0)
		w.after = 0
		return n, errors.New("disk full")
	}
	w.after -= len(p)
	return len(p), nil
}

func TestWriteErrors(t *testing.T) {
	f, _ := New(100_000, 0.01)
	for _, after := range []int{0, 10, headerSize + 100, headerSize + 1<<16 + 5} {
		if _, err := f.WriteTo(&failingWriter{after: after}); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("write failing after %d bytes: err = %v", after, err)
		}
	}
}

func TestLargeRoundTrip(t *testing.T) {
	// Larger than the streaming chunk and than one eager step is not needed:
	// several chunks through a length-hiding reader and through a file.
	f, _ := NewBlocked(200_000, 0.001)
	batchAdd(f, keys("large", 0, 200_000))
	path := filepath.Join(t.TempDir(), "f.bloom")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteTo(out); err != nil {
		t.Fatal(err)
	}
	out.Close()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var g Blocked
	if _, err := g.ReadFrom(in); err != nil {
		t.Fatal(err)
	}
	if !g.Equal(f) || g.Params() != f.Params() {
		t.Error("file round trip changed the filter")
	}
}

func TestReadAnyType(t *testing.T) {
	for _, l := range layouts {
		f := mustNew(t, l, 1000, 0.01)
		f.AddString("k")
		b, _ := f.marshalBinary()
		g, err := Read(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", l.name, err)
		}
		if !g.TestString("k") || g.(filter).Params() != f.Params() {
			t.Errorf("%s: Read returned a different filter", l.name)
		}
		var buf bytes.Buffer
		if _, err := g.WriteTo(&buf); err != nil || !bytes.Equal(buf.Bytes(), b) {
			t.Errorf("%s: re-encoding after Read differs (%v)", l.name, err)
		}
	}
	b := sample(t)
	b[10], b[11] = format.TypeCuckoo, format.HashXXH3
	if _, err := Read(bytes.NewReader(resign(b))); !errors.Is(err, ErrType) {
		t.Errorf("cuckoo file: err = %v", err)
	}
	if _, err := Read(bytes.NewReader(b[:40])); !errors.Is(err, ErrTruncated) {
		t.Errorf("short file: err = %v", err)
	}
}

// A classic or blocked filter does not count its keys, so its header's
// count is 0 (docs/format.md). A file with another count is refused, as
// for the window and split-block types: read and written back, the count
// would silently become 0, and kept, it would be wrong after the first Add.
func TestCountFieldRefused(t *testing.T) {
	for _, l := range layouts {
		f := mustNew(t, l, 300, 0.01)
		f.AddString("x")
		b, err := f.marshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		binary.LittleEndian.PutUint64(b[56:], 1)
		b = resign(b)
		if _, err := l.decode(b); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "count 1") {
			t.Errorf("%s: decoding a file with count 1: err = %v, want ErrCorrupt naming the count", l.name, err)
		}
		if _, err := Read(bytes.NewReader(b)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Read of a file with count 1: err = %v, want ErrCorrupt", l.name, err)
		}
		var g Filter
		var h Blocked
		r := iotest.OneByteReader(bytes.NewReader(b))
		if l.name == "classic" {
			_, err = g.ReadFrom(r)
		} else {
			_, err = h.ReadFrom(r)
		}
		if !errors.Is(err, ErrCorrupt) || g.words != nil || h.words != nil {
			t.Errorf("%s: ReadFrom of a file with count 1: err = %v, or the filter changed", l.name, err)
		}
	}
}

// The window and split-block types count no keys either: a file of one
// with a count is refused by Read and by the type's ReadFrom.
func TestCountFieldRefusedWindowSplitBlock(t *testing.T) {
	w, err := NewWindow(time.Minute, 300, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSplitBlock(300, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		f    interface {
			io.WriterTo
			io.ReaderFrom
		}
		empty io.ReaderFrom
	}{{"window", w, new(Window)}, {"split-block", s, new(SplitBlock)}} {
		var buf bytes.Buffer
		if _, err := c.f.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		binary.LittleEndian.PutUint64(b[56:], 1)
		b = resign(b)
		if _, err := Read(bytes.NewReader(b)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "count 1") {
			t.Errorf("%s: Read of a file with count 1: err = %v, want ErrCorrupt naming the count", c.name, err)
		}
		if _, err := c.empty.ReadFrom(bytes.NewReader(b)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: ReadFrom of a file with count 1: err = %v, want ErrCorrupt", c.name, err)
		}
	}
}
