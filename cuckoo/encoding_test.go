package cuckoo

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

	"github.com/bloomkit/bloomkit/internal/format"
)

var update = flag.Bool("update", false, "write golden files that are missing (never overwrites)")

// goldenCases build filters the same way in every version of this package;
// their encodings must never change.
var goldenCases = []struct {
	file  string
	build func(t *testing.T) *Filter
}{
	{"default-v1.cuckoo", func(t *testing.T) *Filter {
		f := mustNew(t, Config{Capacity: 1000, Seed: 0x0123456789abcdef})
		fill(t, f, goldenKeys())
		for _, k := range goldenKeys()[:100] {
			f.DeleteString(k)
		}
		return f
	}},
	{"chained-v1.cuckoo", func(t *testing.T) *Filter {
		// 37 buckets of 2 slots for 1000 keys: grows to several tables.
		f := mustNew(t, Config{Buckets: 37, BucketSize: 2, FingerprintBits: 12, MaxKicks: 20, Seed: 42})
		fill(t, f, goldenKeys())
		for i, k := range goldenKeys() {
			if i%7 == 0 {
				f.DeleteString(k)
			}
		}
		return f
	}},
	{"wide-v1.cuckoo", func(t *testing.T) *Filter {
		// 78-bit buckets, 13-bit fingerprints, duplicates, no growth.
		f := mustNew(t, Config{Buckets: 101, BucketSize: 6, FingerprintBits: 13, Expansion: 4, NoGrow: true})
		for _, k := range goldenKeys()[:250] {
			if err := f.AddString(k); err != nil {
				t.Fatal(err)
			}
			if len(k)%3 == 0 {
				_ = f.AddString(k)
			}
		}
		return f
	}},
}

func fill(t *testing.T, f *Filter, keys []string) {
	t.Helper()
	if _, err := AddMany(f, keys); err != nil {
		t.Fatal(err)
	}
}

// goldenKeys go into the golden filters; goldenProbes are asked of them.
func goldenKeys() []string { return keys("golden", 0, 1000) }

func goldenProbes() []string {
	return append(keys("golden", 0, 1000), keys("never-added", 0, 20_000)...)
}

// answers records Count for each probe, one digit each (9 for 9 or more),
// 100 to a line, and checks that Test agrees with Count.
func answers(t *testing.T, f *Filter, probes []string) string {
	var b strings.Builder
	for i, k := range probes {
		c := f.CountString(k)
		if f.TestString(k) != (c > 0) {
			t.Fatalf("Test and Count disagree on %q", k)
		}
		b.WriteByte('0' + byte(min(c, 9)))
		if i%100 == 99 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func TestGoldenFiles(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.file, func(t *testing.T) {
			f := c.build(t)
			got, err := f.marshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "golden", c.file)
			ansPath := strings.TrimSuffix(path, ".cuckoo") + ".answers"
			if *update {
				writeOnce(t, path, got)
				writeOnce(t, ansPath, []byte(answers(t, f, goldenProbes())))
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGoldenFiles -update once to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("encoding changed: %s no longer matches what this version writes (%d vs %d bytes)", path, len(got), len(want))
			}
			var g Filter
			if err := g.unmarshalBinary(want); err != nil {
				t.Fatalf("reading %s: %v", path, err)
			}
			wantAns, err := os.ReadFile(ansPath)
			if err != nil {
				t.Fatal(err)
			}
			if a := answers(t, &g, goldenProbes()); a != string(wantAns) {
				t.Errorf("%s answers differently from %s", path, ansPath)
			}
			fp := len(wantAns[1010:]) - strings.Count(string(wantAns[1010:]), "0") - strings.Count(string(wantAns[1010:]), "\n")
			t.Logf("%s: %d bytes, %d tables, %d items; %d false positives among 20000 absent keys",
				c.file, len(want), g.Stats().Tables, g.Len(), fp)
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

func TestRoundTrip(t *testing.T) {
	for _, c := range []Config{
		{Capacity: 3000, Seed: 1},
		{Buckets: 9, BucketSize: 3, FingerprintBits: 7, Expansion: 8, MaxKicks: 10},
		{Buckets: 50, BucketSize: 12, FingerprintBits: 31, NoGrow: true},
	} {
		f := mustNew(t, c)
		in := keys("rt", 0, 2000)
		for _, k := range in {
			if err := f.AddString(k); err != nil {
				break
			}
		}
		b, err := f.marshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		g, err := Read(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if !f.Equal(g) {
			t.Fatalf("%+v: decoded filter differs: %+v", c, g.Config())
		}
		probes := append(in, keys("other", 0, 5000)...)
		if answers(t, f, probes) != answers(t, g, probes) {
			t.Fatalf("%+v: decoded filter answers differently", c)
		}
		// The decoded filter keeps working: add and delete more.
		for _, k := range keys("later", 0, 100) {
			if err := g.AddString(k); err != nil && !errors.Is(err, ErrFull) {
				t.Fatal(err)
			}
		}
		for _, k := range in[:50] {
			if f.TestString(k) && !g.DeleteString(k) {
				t.Fatalf("delete after decoding failed")
			}
		}
	}
}

// TestStreams writes filters back to back and reads them from a reader
// that hides its length: ReadFrom must stop at each trailer.
func TestStreams(t *testing.T) {
	a := mustNew(t, Config{Capacity: 100, Seed: 1})
	b := mustNew(t, Config{Buckets: 3, BucketSize: 2, FingerprintBits: 5})
	fill(t, a, keys("a", 0, 100))
	fill(t, b, keys("b", 0, 100)) // grows
	var buf bytes.Buffer
	na, err := a.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	nb, err := b.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if int(na+nb) != buf.Len() {
		t.Fatalf("WriteTo counted %d+%d bytes of %d", na, nb, buf.Len())
	}
	r := iotest.OneByteReader(io.MultiReader(&buf, strings.NewReader("tail")))
	var ga, gb Filter
	if n, err := ga.ReadFrom(r); err != nil || n != na {
		t.Fatalf("first: %d %v", n, err)
	}
	if n, err := gb.ReadFrom(r); err != nil || n != nb {
		t.Fatalf("second: %d %v", n, err)
	}
	rest, _ := io.ReadAll(r)
	if string(rest) != "tail" || !a.Equal(&ga) || !b.Equal(&gb) {
		t.Fatalf("read past a trailer, or decoded differently (rest %q)", rest)
	}
	// A failed write reports the writer's error.
	if _, err := a.WriteTo(failWriter{}); err == nil {
		t.Fatal("write error lost")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// sample returns the encoding of a small filter of two tables.
func sample(t testing.TB) []byte {
	f, err := NewWith(Config{Buckets: 3, BucketSize: 2, FingerprintBits: 8, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys("s", 0, 10) {
		if err := f.AddString(k); err != nil {
			t.Fatal(err)
		}
	}
	if f.Stats().Tables != 2 {
		t.Fatalf("sample has %d tables, want 2", f.Stats().Tables)
	}
	b, err := f.marshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// resign recomputes the header and trailer checksums after a forgery, so
// that the decoder's other checks are reached.
func resign(b []byte) []byte {
	if len(b) >= format.HeaderSize {
		binary.LittleEndian.PutUint32(b[72:], crc32.Checksum(b[:72], format.Castagnoli))
	}
	if len(b) >= format.HeaderSize+4 {
		binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], format.Castagnoli))
	}
	return b
}

// Offsets in the sample's payload (see docs/cuckoo.md).
const (
	hdr      = format.HeaderSize
	offFP    = hdr      // fingerprint bits, u32
	offFlags = hdr + 4  // flags, u32
	offKicks = hdr + 8  // max kicks, u32
	offExp   = hdr + 12 // expansion, u32
	offNT    = hdr + 16 // number of tables, u32; size limit in KiB, u32
	offT0    = hdr + 24 // table 0: buckets, items; table 1: ...
	offSlots = hdr + 24 + 2*16
)

func TestDecodeErrors(t *testing.T) {
	orig := sample(t)
	mod := func(f func(b []byte)) []byte {
		b := append([]byte(nil), orig...)
		f(b)
		return resign(b)
	}
	put32 := func(off int, v uint32) []byte {
		return mod(func(b []byte) { binary.LittleEndian.PutUint32(b[off:], v) })
	}
	put64 := func(off int, v uint64) []byte {
		return mod(func(b []byte) { binary.LittleEndian.PutUint64(b[off:], v) })
	}
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"bad magic", append([]byte("B"), orig[1:]...), ErrBadMagic},
		{"newer version", mod(func(b []byte) { b[8] = 2 }), ErrVersion},
		{"header bit flip", func() []byte { b := append([]byte(nil), orig...); b[25] ^= 4; return b }(), ErrChecksum},
		{"payload bit flip", func() []byte { b := append([]byte(nil), orig...); b[offSlots] ^= 1; return b }(), ErrChecksum},
		{"classic type", mod(func(b []byte) { b[10] = format.TypeClassic }), ErrType},
		{"unknown hash", mod(func(b []byte) { b[11] = 9 }), ErrHash},
		{"bucket size 0", put32(32, 0), ErrCorrupt},
		{"bucket size too big", put32(32, MaxBucketSize+1), ErrCorrupt},
		{"0 buckets", put64(24, 0), ErrCorrupt},
		{"huge first table", put64(24, MaxBits), ErrTooLarge},
		{"rate 1", put64(48, 0x3ff0000000000000), ErrCorrupt},
		{"count disagrees", put64(56, 11), ErrCorrupt},
		{"payload length odd", put64(64, uint64(len(orig)-hdr-4-1)), ErrCorrupt},
		{"payload length short", put64(64, 8), ErrCorrupt},
		{"fingerprint bits 3", put32(offFP, 3), ErrCorrupt},
		{"fingerprint bits 33", put32(offFP, 33), ErrCorrupt},
		{"unknown flag", put32(offFlags, 2), ErrCorrupt},
		{"no-grow with 2 tables", put32(offFlags, 1), ErrCorrupt},
		{"max kicks 0", put32(offKicks, 0), ErrCorrupt},
		{"expansion 3", put32(offExp, 3), ErrCorrupt},
		{"expansion 0", put32(offExp, 0), ErrCorrupt},
		{"0 tables", put64(offNT, 0), ErrCorrupt},
		{"too many tables", put64(offNT, MaxTables+1), ErrCorrupt},
		{"3 tables", put64(offNT, 3), ErrCorrupt},
		{"size limit above MaxBits", put32(offNT+4, 0xffffffff), ErrCorrupt},
		{"table size wrong", put64(offT0+16, 5), ErrCorrupt},
		{"table items above slots", put64(offT0+8, 100), ErrCorrupt},
		{"table items disagree with slots", mod(func(b []byte) {
			binary.LittleEndian.PutUint64(b[offT0+8:], binary.LittleEndian.Uint64(b[offT0+8:])+1)
			binary.LittleEndian.PutUint64(b[offT0+24:], binary.LittleEndian.Uint64(b[offT0+24:])-1)
		}), ErrCorrupt},
		{"bits after the last bucket", mod(func(b []byte) { b[offSlots+7] |= 0x80 }), ErrCorrupt},
		{"trailing data", append(append([]byte(nil), orig...), 0), ErrCorrupt},
	}
	for _, c := range cases {
		var f Filter
		err := f.unmarshalBinary(c.data)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
		if f.tables != nil {
			t.Errorf("%s: a failed decode changed the filter", c.name)
		}
	}
	var f Filter
	if err := f.unmarshalBinary(orig); err != nil {
		t.Fatalf("the unmodified sample: %v", err)
	}
}

func TestDecodeEveryTruncation(t *testing.T) {
	b := sample(t)
	for n := range len(b) {
		var f Filter
		if err := f.unmarshalBinary(b[:n]); !errors.Is(err, ErrTruncated) {
			t.Fatalf("%d of %d bytes: err = %v", n, len(b), err)
		}
		// The same through a reader that hides its length and returns one
		// byte at a time.
		if _, err := f.ReadFrom(iotest.OneByteReader(bytes.NewReader(b[:n]))); !errors.Is(err, ErrTruncated) {
			t.Fatalf("streamed: %d of %d bytes: err = %v", n, len(b), err)
		}
	}
}

// forgedHuge returns a valid header and configuration announcing a filter
// of almost MaxBits bits, followed by a little data.
func forgedHuge() []byte {
	const nb = MaxBits / 32 // 2^38 buckets of 4 8-bit slots
	payload := make([]byte, 24+16)
	binary.LittleEndian.PutUint32(payload[0:], 8)
	binary.LittleEndian.PutUint32(payload[8:], 500)
	binary.LittleEndian.PutUint32(payload[12:], 2)
	binary.LittleEndian.PutUint64(payload[16:], 1)
	binary.LittleEndian.PutUint64(payload[24:], nb)
	h := format.Header{Type: TypeCuckoo, M: nb, K: 4, PayloadLen: uint64(len(payload)) + nb*4}
	return append(append(h.Marshal(), payload...), make([]byte, 1<<16)...)
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
			t.Errorf("%s: err = %v, want ErrTruncated", name, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 200<<20 {
			t.Errorf("%s: a forged 1 TiB header made the reader allocate %d MiB", name, grew>>20)
		}
	}
}

// TestNoPanicOnAnyByteFlip flips every bit of the sample, re-signs it and
// decodes: each must decode or fail with a documented error, never panic.
func TestNoPanicOnAnyByteFlip(t *testing.T) {
	orig := sample(t)
	for i := range len(orig) - 4 {
		for bit := range 8 {
			b := append([]byte(nil), orig...)
			b[i] ^= 1 << bit
			var f Filter
			if err := f.unmarshalBinary(resign(b)); err != nil {
				checkDecodeError(t, err)
				continue
			}
			f.TestString("x")
			f.CountString("x")
		}
	}
}
