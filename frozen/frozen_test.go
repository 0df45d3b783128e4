package frozen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/bloomkit/bloomkit/internal/format"
)

var update = flag.Bool("update", false, "rewrite testdata/golden")

func keys(from, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "key-%d", from+i)
	}
	return out
}

// TestNoFalseNegativesAndRate: every key built in tests present, before and
// after a round trip through a file; absent keys test present at 2^-bits
// within 5 standard deviations (about ±11% for 8 bits), which catches a
// doubled rate.
func TestNoFalseNegativesAndRate(t *testing.T) {
	const n = 100_000
	in := keys(0, n)
	for _, bits := range []int{8, 16} {
		f, err := Build(in, bits, 42)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := f.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		g, err := Read(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range in {
			if !f.Test(k) || !g.Test(k) || !g.TestString(string(k)) {
				t.Fatalf("%d-bit: key %q lost", bits, k)
			}
		}
		fp := 0
		absent := keys(n, 500_000)
		for _, k := range absent {
			if g.Test(k) {
				fp++
			}
		}
		rate, want := float64(fp)/float64(len(absent)), g.EstimatedFPR()
		exp := want * float64(len(absent))
		if math.Abs(float64(fp)-exp) > 5*math.Sqrt(exp)+3 {
			t.Errorf("%d-bit: %d false positives among %d absent keys, expected %.0f", bits, fp, len(absent), exp)
		}
		perKey := float64(g.SizeBits()) / n
		if perKey > 1.2*float64(bits) {
			t.Errorf("%d-bit: %.2f bits a key", bits, perKey)
		}
		if g.Len() != n || g.ApproxCount() != n || g.Bits() != bits || g.Seed() != 42 {
			t.Errorf("%d-bit: read back len %d bits %d seed %d", bits, g.Len(), g.Bits(), g.Seed())
		}
		t.Logf("%d-bit: %.2f bits a key, rate %.5f (%d of %d)", bits, perKey, rate, fp, len(absent))
	}
}

// TestOrder: the same keys in another order, some repeated, give the same
// file (a rebuilt blacklist does not change because its lines moved).
func TestOrder(t *testing.T) {
	in := keys(0, 50_000)
	f, _ := Build(in, 8, 3)
	var a, b bytes.Buffer
	f.WriteTo(&a)
	shuffled := slices.Clone(in)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	shuffled = append(shuffled, in[:1000]...)
	g, err := Build(shuffled, 8, 3)
	if err != nil {
		t.Fatal(err)
	}
	g.WriteTo(&b)
	// The header counts the keys given; the payload must match.
	if !bytes.Equal(a.Bytes()[format.HeaderSize:len(a.Bytes())-4], b.Bytes()[format.HeaderSize:len(b.Bytes())-4]) {
		t.Error("the same keys in another order built other fingerprints")
	}
	for _, k := range in {
		if !g.Test(k) {
			t.Fatalf("lost %q", k)
		}
	}
}

func TestEmptyAndDuplicates(t *testing.T) {
	f, err := Build(nil, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	f.WriteTo(&b)
	g, err := Read(&b)
	if err != nil || g.TestString("x") || g.EstimatedFPR() != 0 {
		t.Fatalf("empty set: %v", err)
	}
	d, err := Build([][]byte{[]byte("a"), []byte("a"), []byte("b")}, 16, 1)
	if err != nil || !d.TestString("a") || !d.TestString("b") || d.Len() != 3 {
		t.Fatalf("duplicates: %v", err)
	}
	if _, err := NewBuilder(12, 0); !errors.Is(err, ErrParams) {
		t.Errorf("12-bit fingerprints: %v", err)
	}
}

// TestGolden pins the file bytes: the same keys and seed give the same
// file (the fuse construction is deterministic), and the files read back.
func TestGolden(t *testing.T) {
	for _, bits := range []int{8, 16} {
		path := fmt.Sprintf("testdata/golden/frozen%d-1000.bkf", bits)
		f, err := Build(keys(0, 1000), bits, 7)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		f.WriteTo(&b)
		if *update {
			os.WriteFile(path, b.Bytes(), 0o644)
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s: building writes different bytes", path)
		}
		g, err := Read(bytes.NewReader(want))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys(0, 1000) {
			if !g.Test(k) {
				t.Fatalf("%s lost %q", path, k)
			}
		}
	}
}

// resign fixes both checksums after a test edits a file.
func resign(b []byte) []byte {
	binary.LittleEndian.PutUint32(b[72:], crc32.Checksum(b[:72], format.Castagnoli))
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], format.Castagnoli))
	return b
}

func TestReadErrors(t *testing.T) {
	f, _ := Build(keys(0, 500), 8, 3)
	var b bytes.Buffer
	f.WriteTo(&b)
	good := b.Bytes()
	edit := func(off int, v uint32) []byte {
		c := bytes.Clone(good)
		binary.LittleEndian.PutUint32(c[off:], v)
		return resign(c)
	}
	p := format.HeaderSize
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"truncated", good[:len(good)-10], ErrTruncated},
		{"flipped bit", func() []byte { c := bytes.Clone(good); c[p+30] ^= 1; return c }(), format.ErrChecksum},
		{"12-bit fingerprints", edit(32, 12), ErrCorrupt},
		{"segment length not a power of two", edit(p+8, 3), ErrCorrupt},
		{"mask off", edit(p+12, 0), ErrCorrupt},
		{"segment count too big", edit(p+16, 1<<20), ErrCorrupt},
		{"count × length off", edit(p+20, 5), ErrCorrupt},
		{"other type", func() []byte { c := bytes.Clone(good); c[10] = format.TypeClassic; return resign(c) }(), format.ErrType},
	}
	for _, c := range cases {
		if _, err := Read(bytes.NewReader(c.in)); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

// FuzzRead: no input panics or reads out of bounds on a lookup.
func FuzzRead(f *testing.F) {
	for _, bits := range []int{8, 16} {
		g, _ := Build(keys(0, 100), bits, 1)
		var b bytes.Buffer
		g.WriteTo(&b)
		f.Add(b.Bytes())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, k := range keys(0, 200) {
			g.Test(k)
		}
	})
}

// TestHash64: Hash64(seed, key), in bloom.Hash's argument order, is the
// hash TestHash takes, for []byte and string keys; the deprecated
// Hash(key, seed) is the same function with its arguments swapped.
func TestHash64(t *testing.T) {
	const seed = 0x0123456789abcdef
	in := keys(0, 1000)
	f, err := Build(in, 16, seed)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range in {
		h := Hash64(seed, k)
		if !f.TestHash(h) || Hash64String(seed, string(k)) != h || Hash(k, seed) != h {
			t.Fatalf("key %q: Hash64 %#x, Hash64String %#x, Hash %#x, TestHash %v",
				k, h, Hash64String(seed, string(k)), Hash(k, seed), f.TestHash(h))
		}
	}
	// The seed matters: a filter seeded otherwise holds other hashes.
	absent := 0
	for _, k := range in {
		if !f.TestHash(Hash64(seed+1, k)) {
			absent++
		}
	}
	if absent < 990 {
		t.Errorf("%d of 1000 keys hashed with another seed test absent", absent)
	}
}
