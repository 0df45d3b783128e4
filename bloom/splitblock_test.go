package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"testing/iotest"
)

// refSBBF is Parquet's split-block filter written out from the pseudocode
// of the format's BloomFilter.md, word by word in 32-bit arithmetic, as a
// reference the optimised SplitBlock is checked against.
type refSBBF [][8]uint32

var refSalt = [8]uint32{0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d,
	0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31}

func refMask(x uint32) (m [8]uint32) {
	for i := range m {
		y := x * refSalt[i]
		m[i] = 1 << (y >> 27)
	}
	return m
}

func (f refSBBF) index(h uint64) uint64 { return ((h >> 32) * uint64(len(f))) >> 32 }

func (f refSBBF) insert(h uint64) {
	b := &f[f.index(h)]
	for i, w := range refMask(uint32(h)) {
		b[i] |= w
	}
}

func (f refSBBF) check(h uint64) bool {
	b := &f[f.index(h)]
	for i, w := range refMask(uint32(h)) {
		if b[i]&w == 0 {
			return false
		}
	}
	return true
}

func (f refSBBF) bytes() []byte {
	var out []byte
	for _, b := range f {
		for _, w := range b {
			out = binary.LittleEndian.AppendUint32(out, w)
		}
	}
	return out
}

// TestSplitBlockXXH64: the hash is XXH64 with seed 0 (vectors from the
// xxHash reference implementation, one in each of its length classes).
func TestSplitBlockXXH64(t *testing.T) {
	for _, c := range []struct {
		key  string
		want uint64
	}{
		{"", 0xef46db3751d8e999},
		{"a", 0xd24ec4f1a98c6e5b},
		{"abc", 0x44bc2cf5ad770999},
		{"Nobody inspects the spammish repetition", 0xfbcea83c8a378bf1},
	} {
		if got := SplitBlockHash([]byte(c.key)); got != c.want {
			t.Errorf("SplitBlockHash(%q) = %#x, want %#x", c.key, got, c.want)
		}
		if got := SplitBlockHashString(c.key); got != c.want {
			t.Errorf("SplitBlockHashString(%q) = %#x, want %#x", c.key, got, c.want)
		}
	}
}

// TestSplitBlockMatchesSpec: for sizes of 1 block to a power of two and
// sizes that are not powers of two, a SplitBlock and the spec's reference
// hold the same bitset after the same keys, by every way of adding, and
// answer alike for present and absent keys.
func TestSplitBlockMatchesSpec(t *testing.T) {
	for _, blocks := range []uint64{1, 2, 3, 76, 1024, 1000003} {
		f, err := NewSplitBlockFromParams(Params{M: blocks * SplitBlockBits})
		if err != nil {
			t.Fatal(err)
		}
		ref := make(refSBBF, blocks)
		n := int(min(blocks*20, 100_000))
		ks := keys("sbbf", 0, n)
		third := n / 3
		for i, k := range ks {
			ref.insert(SplitBlockHashString(k))
			switch {
			case i < third:
				f.AddString(k)
			case i < 2*third:
				if i%2 == 0 {
					f.Add([]byte(k))
				} else {
					f.TestAndAddString(k)
				}
			default:
				if i%2 == 0 {
					f.AddHash(SplitBlockHashString(k))
				} else {
					f.Sync().AddString(k)
				}
			}
		}
		// And by AddMany, into a second filter.
		g, _ := NewSplitBlockFromParams(Params{M: blocks * SplitBlockBits})
		AddMany(g, ks)
		want := ref.bytes()
		if got := f.AppendBitset(nil); !bytes.Equal(got, want) {
			t.Fatalf("%d blocks: the bitset differs from the spec's", blocks)
		}
		if got := g.AppendBitset(nil); !bytes.Equal(got, want) {
			t.Fatalf("%d blocks: AddMany's bitset differs from the spec's", blocks)
		}
		probes := append(ks[:min(n, 2000)], keys("absent", 0, 20_000)...)
		got := TestMany(f, probes, nil)
		for i, k := range probes {
			h := SplitBlockHashString(k)
			w := ref.check(h)
			if f.TestString(k) != w || f.Test([]byte(k)) != w || f.TestHash(h) != w || f.Sync().TestString(k) != w || got[i] != w {
				t.Fatalf("%d blocks: key %q: the filter's answers differ from the spec's %v", blocks, k, w)
			}
		}
	}
}

// TestSplitBlockGoldenIsSpec: the golden file's payload is the bitset the
// spec's reference builds from the golden keys, so the pinned bytes are
// Parquet's, not only this package's.
func TestSplitBlockGoldenIsSpec(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "golden", "splitblock-v1.bloom"))
	if err != nil {
		t.Fatal(err)
	}
	ref := make(refSBBF, 76)
	for _, k := range goldenKeys() {
		ref.insert(SplitBlockHashString(k))
	}
	if !bytes.Equal(b[headerSize:len(b)-4], ref.bytes()) {
		t.Error("the golden split-block file's payload is not the spec's bitset")
	}
}

// TestSplitBlockSizing: ParquetSplitBlockBytes is the sizing of Parquet's
// reference writers, −8n/ln(1 − p^(1/8)) bits rounded up to a block, to
// 32 bytes and to a power of two of bytes, at most 128 MiB; and
// EstimateSplitBlock is the smallest power of two at least that large
// whose rate at n keys is at most p.
func TestSplitBlockSizing(t *testing.T) {
	for _, c := range []struct {
		n     uint64
		p     float64
		bytes uint64
	}{
		{0, 0.01, 32},
		{1, 0.01, 32},
		{200, 0.01, 256},   // 1936 bits → 2048
		{256, 0.01, 512},   // 2478 bits → 2560 → 320 bytes → 512
		{300, 0.01, 512},   // 2904 bits
		{1000, 0.01, 2048}, // 9681 bits → 1211 bytes
		{1_000_000, 0.01, 2 << 20},
		{1_000_000, 0.1, 1 << 20},   // 5.6 bits a value
		{1_000_000, 0.001, 2 << 20}, // 14.4
		{1 << 40, 0.01, SplitBlockMaxBytes},
	} {
		if got := ParquetSplitBlockBytes(c.n, c.p); got != c.bytes {
			t.Errorf("ParquetSplitBlockBytes(%d, %g) = %d, want %d", c.n, c.p, got, c.bytes)
		}
	}
	for _, p := range []float64{0.1, 0.01, 0.001, 1e-4} {
		var last uint64
		for n := uint64(0); n < 1<<24; n = n*3/2 + 1 {
			e := EstimateSplitBlock(n, p)
			m, spec := e.M, ParquetSplitBlockBytes(n, p)*8
			if m < last || m&(m-1) != 0 || m < spec || e.K != 8 || e.Hash != HashXXH64 || e.Seed != 0 {
				t.Fatalf("EstimateSplitBlock(%d, %g) = %+v (the previous n had %d bits, the writers' size is %d)", n, p, e, last, spec)
			}
			if SplitBlockFalsePositiveRate(m, n) > p || m > spec && SplitBlockFalsePositiveRate(m/2, n) <= p {
				t.Fatalf("EstimateSplitBlock(%d, %g): m = %d is not the smallest power of two for the rate", n, p, m)
			}
			last = m
		}
	}
	if e := EstimateSplitBlock(1<<40, 0.01); e.M != 0 {
		t.Errorf("EstimateSplitBlock of 2^40 keys: %+v", e)
	}
	if _, err := NewSplitBlock(1<<40, 0.01); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("NewSplitBlock of 2^40 keys: %v", err)
	}
	for _, p := range []float64{0, 1, -1, math.NaN()} {
		if e := EstimateSplitBlock(10, p); e.M != 0 || ParquetSplitBlockBytes(10, p) != 0 {
			t.Errorf("EstimateSplitBlock(10, %v) = %+v", p, e)
		}
		if _, err := NewSplitBlock(10, p); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("NewSplitBlock(10, %v): %v", p, err)
		}
	}
}

// TestSplitBlockSpecTable: the format's table of bits per value and rates
// is what SplitBlockFalsePositiveRate says, within 2%, and what filters
// filled to those ratios measure.
func TestSplitBlockSpecTable(t *testing.T) {
	const blocks, probes = 4096, 200_000
	absent := keys("table-absent", 0, probes)
	for _, c := range []struct{ bitsPerValue, rate float64 }{
		{6.0, 0.10}, {10.5, 0.01}, {16.9, 0.001}, {26.4, 0.0001}, {41, 0.00001},
	} {
		m := uint64(blocks * SplitBlockBits)
		n := uint64(float64(m) / c.bitsPerValue)
		model := SplitBlockFalsePositiveRate(m, n)
		if math.Abs(model-c.rate) > 0.02*c.rate {
			t.Errorf("%.1f bits a value: the model says %g, the format %g", c.bitsPerValue, model, c.rate)
		}
		if c.rate < 0.001 {
			continue // too few false positives to count in a quick test
		}
		f, _ := NewSplitBlockFromParams(Params{M: m})
		AddMany(f, keys("table", 0, int(n)))
		fp := 0
		for _, ok := range TestMany(f, absent, nil) {
			if ok {
				fp++
			}
		}
		mean := c.rate * probes
		if d := math.Abs(float64(fp) - mean); d > 5*math.Sqrt(mean)+0.05*mean {
			t.Errorf("%.1f bits a value: %d false positives in %d, the format says %g", c.bitsPerValue, fp, probes, c.rate)
		}
	}
}

// TestSplitBlockParams: NewSplitBlockFromParams takes any whole number of
// blocks from 1 to 128 MiB, k = 8 and seed 0, and nothing else.
func TestSplitBlockParams(t *testing.T) {
	for _, p := range []Params{
		{M: 0},
		{M: 255},
		{M: 384},
		{M: SplitBlockMaxBytes*8 + SplitBlockBits},
		{M: 256, K: 7},
		{M: 256, Seed: 1},
		{M: 256, Hash: HashXXH3},
		{M: 256, P: 1},
	} {
		if _, err := NewSplitBlockFromParams(p); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("%+v: err = %v", p, err)
		}
	}
	f, err := NewSplitBlockFromParams(Params{M: 3 * 256, N: 5, P: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Params(); got != (Params{M: 768, K: 8, N: 5, P: 0.5, Hash: HashXXH64}) || f.Len() != 96 {
		t.Errorf("Params() = %+v, Len() = %d", got, f.Len())
	}
}

// TestSplitBlockRate: across sizes and rates, no key added tests absent,
// and the share of absent keys that test present agrees with the rate the
// filter's bits give within a 5-sigma bound: a probe scheme that crowded
// or skewed its bits would fail it. SplitBlockFalsePositiveRate is that
// rate for large filters, and at EstimateSplitBlock's size at most p.
// Filters of exactly the reference writers' formula's bits, the worst case
// of ParquetSplitBlockBytes, are checked too.
func TestSplitBlockRate(t *testing.T) {
	const probes = 200_000
	absent := keys("rate-absent", 0, probes)
	for _, c := range []struct {
		n     uint64
		p     float64
		exact bool // size at the formula's bits, not a power of two
	}{
		{100, 0.01, false},
		{1000, 0.01, false},
		{20_000, 0.01, false},
		{20_000, 0.001, false},
		{5000, 0.1, false},
		{30_000, 0.01, true},
		{30_000, 0.001, true},
		{30_000, 1e-4, false},
	} {
		e := EstimateSplitBlock(c.n, c.p)
		if c.exact {
			bits := -8 * float64(c.n) / math.Log(1-math.Pow(c.p, 1.0/8))
			e.M = uint64(math.Ceil(bits/SplitBlockBits)) * SplitBlockBits
		}
		f, err := NewSplitBlockFromParams(e)
		if err != nil {
			t.Fatal(err)
		}
		added := keys("rate-"+strconv.FormatUint(c.n, 10), 0, int(c.n))
		AddMany(f, added)
		for _, ok := range TestMany(f, added, nil) {
			if !ok {
				t.Fatalf("n = %d: a key added tests absent", c.n)
			}
		}
		fp := 0
		for _, ok := range TestMany(f, absent, nil) {
			if ok {
				fp++
			}
		}
		// Given its bits, the filter's rate for a random absent key is
		// Stats' EstimatedFPR exactly; the keys' probes must agree.
		st := f.Stats()
		mean := st.EstimatedFPR * probes
		if d := math.Abs(float64(fp) - mean); d > 5*math.Sqrt(mean)+1 {
			t.Errorf("n = %d, p = %g, m = %d: %d false positives in %d, the filter's fill expects %.0f", c.n, c.p, e.M, fp, probes, mean)
		}
		// And a large filter's fill is what the model expects.
		model := SplitBlockFalsePositiveRate(e.M, c.n)
		if c.n >= 20_000 && math.Abs(st.EstimatedFPR-model) > 0.1*model {
			t.Errorf("n = %d, p = %g: the fill gives rate %g, the model %g", c.n, c.p, st.EstimatedFPR, model)
		}
		t.Logf("n = %6d p = %-5g m = %8d bits (%.1f a key): model %.5f, measured %.5f", c.n, c.p, e.M, float64(e.M)/float64(c.n), model, float64(fp)/probes)
		if !c.exact && model > c.p {
			t.Errorf("n = %d p = %g: EstimateSplitBlock's size gives %g", c.n, c.p, model)
		}
		if c.exact && model > 2.1*c.p {
			t.Errorf("n = %d p = %g: the formula's own size gives %g, more than 2.1p", c.n, c.p, model)
		}
	}
	// The spec's worked example: 1024 blocks and 26,214 values, about 1.26%.
	if r := SplitBlockFalsePositiveRate(1024*256, 26_214); math.Abs(r-0.0126) > 0.0005 {
		t.Errorf("the spec's example: rate %g, the spec says about 1.26%%", r)
	}
}

// TestSplitBlockParquetHeader: WriteParquet writes the Thrift
// BloomFilterHeader of the spec, byte for byte, before the bitset, and
// ReadParquet reads it back, also from a header written with fields in
// another order, long-form field ids and unknown fields.
func TestSplitBlockParquetHeader(t *testing.T) {
	f, _ := NewSplitBlockFromParams(Params{M: 4096 * 8})
	for i := range 500 {
		f.AddString(key("pq", i))
	}
	var buf bytes.Buffer
	n, err := f.WriteParquet(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatal(n, err)
	}
	wantHdr := []byte{0x15, 0x80, 0x40, 0x1c, 0x1c, 0, 0, 0x1c, 0x1c, 0, 0, 0x1c, 0x1c, 0, 0, 0}
	if !bytes.HasPrefix(buf.Bytes(), wantHdr) || buf.Len() != len(wantHdr)+4096 {
		t.Fatalf("header % x, %d bytes", buf.Bytes()[:20], buf.Len())
	}
	if !bytes.Equal(buf.Bytes()[len(wantHdr):], f.AppendBitset(nil)) {
		t.Fatal("the bitset after the header is not AppendBitset's")
	}
	bitset := f.AppendBitset(nil)
	for _, c := range []struct {
		name string
		hdr  []byte
	}{
		{"as written", wantHdr},
		{"reordered, long-form ids", []byte{
			0x4c, 0x1c, 0, 0, // compression (field 4)
			0x0c, 0x04, 0x1c, 0, 0, // algorithm, id 2 long form (zigzag 4)
			0x05, 0x02, 0x80, 0x40, // numBytes, id 1 long form
			0x2c, 0x1c, 0, 0, // hash (field 3)
			0}},
	} {
		r := bytes.NewReader(append(append([]byte(nil), c.hdr...), bitset...))
		g, err := ReadParquet(r)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !g.Equal(f) || r.Len() != 0 {
			t.Errorf("%s: read back differently (%d bytes left)", c.name, r.Len())
		}
	}
	// Unknown fields of every Thrift type are skipped: a string, a list
	// of i32, a nested struct with a bool and a double, a map, and fields
	// inside the known unions' empty structs.
	hdr := []byte{
		0x15, 0x80, 0x40, // numBytes
		0x08, 0x0a, 0x03, 'a', 'b', 'c', // field 10 binary (long form id 5 zigzag = 10)
		0x19, 0x35, 0x02, 0x04, 0x06, // field 11 list<i32> of 3
		0x1c, 0x11, 0x17, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, // field 12 struct {bool true, double 1.0}
		0x1b, 0x01, 0x58, 0x02, 0x01, 'x', // field 13 map<i32,binary> of 1
		0x0c, 0x04, 0x1c, 0x16, 0x02, 0, 0, // algorithm (id 2) with BLOCK {field 1 i64 = 1}
		0x1c, 0x1c, 0, 0, // hash
		0x1c, 0x1c, 0, 0, // compression
		0,
	}
	g, err := ReadParquet(bytes.NewReader(append(hdr, bitset...)))
	if err != nil || !g.Equal(f) {
		t.Fatalf("unknown fields: %v", err)
	}
	// Streams that hide their length read the same, one byte at a time.
	g, err = ReadParquet(iotest.OneByteReader(bytes.NewReader(append(wantHdr, bitset...))))
	if err != nil || !g.Equal(f) {
		t.Fatalf("one byte at a time: %v", err)
	}
}

// TestSplitBlockParquetErrors: each kind of bad Bloom filter data has its
// error, and none panics.
func TestSplitBlockParquetErrors(t *testing.T) {
	good := []byte{0x15, 0x40, 0x1c, 0x1c, 0, 0, 0x1c, 0x1c, 0, 0, 0x1c, 0x1c, 0, 0, 0} // 32 bytes
	bitset := make([]byte, 32)
	with := func(i int, v byte) []byte {
		b := append([]byte(nil), good...)
		b[i] = v
		return append(b, bitset...)
	}
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"header only", good, ErrTruncated},
		{"bitset short", append(append([]byte(nil), good...), bitset[:31]...), ErrTruncated},
		{"numBytes 33", with(1, 0x42), ErrCorrupt},
		{"numBytes 0", with(1, 0), ErrCorrupt},
		{"numBytes negative", with(1, 0x3f), ErrCorrupt},
		{"numBytes 256 MiB", append([]byte{0x15, 0x80, 0x80, 0x80, 0x80, 0x02}, good[2:]...), ErrTooLarge},
		{"numBytes i64", with(0, 0x16), ErrCorrupt},
		{"algorithm other", with(3, 0x2c), ErrType},
		{"hash other", with(7, 0x2c), ErrHash},
		{"compression other", with(11, 0x2c), ErrType},
		{"no compression", append(append(append([]byte(nil), good[:10]...), 0), bitset...), ErrCorrupt},
		{"unknown Thrift type", with(0, 0x5e), ErrCorrupt},
		{"field of type 0", append(append(append([]byte(nil), good[:14]...), 0x1c, 0x10, 0), bitset...), ErrCorrupt},
		{"varint overflow", append([]byte{0x15}, bytes.Repeat([]byte{0xff}, 11)...), ErrCorrupt},
		{"deep nesting", append([]byte{0x15, 0x40}, bytes.Repeat([]byte{0x1c}, 100)...), ErrCorrupt},
		{"endless header", append([]byte{0x15, 0x40}, bytes.Repeat([]byte{0x03, 0x14, 0}, 2000)...), ErrCorrupt},
		{"huge list", append([]byte{0x15, 0x40, 0x49, 0xf5, 0xff, 0xff, 0xff, 0xff, 0x0f}, bytes.Repeat([]byte{0}, 5000)...), ErrCorrupt},
		{"huge string", []byte{0x15, 0x40, 0x48, 0xff, 0xff, 0xff, 0xff, 0x0f}, ErrCorrupt},
	} {
		_, err := ReadParquet(bytes.NewReader(c.data))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
		// The same through a reader that hides its length.
		if _, err2 := ReadParquet(io.MultiReader(bytes.NewReader(c.data))); !errors.Is(err2, c.want) {
			t.Errorf("%s, streamed: err = %v, want %v", c.name, err2, c.want)
		}
	}
	for _, n := range []int{0, 31, 33, 64 + 8} {
		if _, err := SplitBlockFromBitset(make([]byte, n)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("SplitBlockFromBitset of %d bytes: %v", n, err)
		}
	}
	if err := checkBitsetLen(SplitBlockMaxBytes + 32); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a bitset above 128 MiB: %v", err)
	}
}

// TestSplitBlockBitsetRoundTrip: the bitset and bloomkit's file hold the
// same bytes, and each reads back to an equal filter.
func TestSplitBlockBitsetRoundTrip(t *testing.T) {
	f, _ := NewSplitBlock(5000, 0.01)
	AddMany(f, keys("rt", 0, 5000))
	bitset := f.AppendBitset(nil)
	g, err := SplitBlockFromBitset(bitset)
	if err != nil {
		t.Fatal(err)
	}
	// The plan is not in the bitset.
	if g.Params().M != f.Params().M || !bytes.Equal(g.AppendBitset(nil), bitset) {
		t.Fatal("bitset round trip")
	}
	file, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file[headerSize:len(file)-4], bitset) {
		t.Error("the file's payload is not the bitset")
	}
	r, err := Read(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := r.(*SplitBlock); !ok || !h.Equal(f) || h.Params() != f.Params() {
		t.Errorf("Read gives %T %+v", r, r)
	}
}

// TestSplitBlockWhole: Union, Intersect, Clone, Equal, Reset and the zero
// value.
func TestSplitBlockWhole(t *testing.T) {
	a, _ := NewSplitBlock(1000, 0.01)
	b, _ := NewSplitBlock(1000, 0.01)
	AddMany(a, keys("a", 0, 1000))
	AddMany(b, keys("b", 0, 1000))
	u := a.Clone()
	if err := u.Union(b); err != nil {
		t.Fatal(err)
	}
	for _, ok := range TestMany(u, append(keys("a", 0, 1000), keys("b", 0, 1000)...), nil) {
		if !ok {
			t.Fatal("Union lost a key")
		}
	}
	i := u.Clone()
	if err := i.Intersect(a); err != nil || !i.Equal(a) {
		t.Fatalf("(a ∪ b) ∩ a ≠ a: %v", err)
	}
	c, _ := NewSplitBlock(100_000, 0.01)
	if err := a.Union(c); !errors.Is(err, ErrIncompatible) {
		t.Errorf("Union of different sizes: %v", err)
	}
	u.Reset()
	if u.Stats().BitsSet != 0 || u.TestString(key("a", 1)) {
		t.Error("Reset left bits")
	}
	var z SplitBlock
	if z.TestString("x") || z.Sync().TestString("x") || z.Stats().Bits != 0 || len(TestMany(&z, []string{"x"}, nil)) != 1 {
		t.Error("the zero SplitBlock answers")
	}
	if _, err := z.WriteTo(io.Discard); !errors.Is(err, ErrZero) {
		t.Errorf("zero WriteTo: %v", err)
	}
	if _, err := z.WriteParquet(io.Discard); !errors.Is(err, ErrZero) {
		t.Errorf("zero WriteParquet: %v", err)
	}
	for name, add := range map[string]func(){
		"Add":     func() { z.AddString("x") },
		"AddMany": func() { AddMany(&z, []string{"x"}) },
		"Sync":    func() { z.Sync().AddString("x") },
		"nil":     func() { SplitBlockSync{}.AddString("x") },
	} {
		func() {
			defer func() {
				if e, _ := recover().(error); !errors.Is(e, ErrZero) {
					t.Errorf("%s on the zero value: panic %v, want ErrZero", name, e)
				}
			}()
			add()
		}()
	}
}

// TestSplitBlockStats: the fill and the count estimate.
func TestSplitBlockStats(t *testing.T) {
	f, _ := NewSplitBlock(10_000, 0.01)
	AddMany(f, keys("st", 0, 10_000))
	s := f.Stats()
	if s.Bits != f.Params().M || s.Capacity != 10_000 || s.BitsSet == 0 || s.FillRatio != float64(s.BitsSet)/float64(s.Bits) {
		t.Errorf("Stats %+v", s)
	}
	if d := math.Abs(float64(s.ApproxCount) - 10_000); d > 300 {
		t.Errorf("ApproxCount %d for 10,000 keys", s.ApproxCount)
	}
}

// TestSplitBlockSyncConcurrent: goroutines adding and testing through
// Sync at once lose no key (run with -race).
func TestSplitBlockSyncConcurrent(t *testing.T) {
	f, _ := NewSplitBlock(40_000, 0.01)
	s := f.Sync()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10_000 {
				k := key("sync"+strconv.Itoa(g), i)
				if i%2 == 0 {
					s.AddString(k)
				} else {
					s.TestAndAdd([]byte(k))
				}
				s.TestString(key("sync-other", i))
			}
		}()
	}
	wg.Wait()
	for g := range 4 {
		for i := range 10_000 {
			if !f.TestString(key("sync"+strconv.Itoa(g), i)) {
				t.Fatalf("key %d of goroutine %d lost", i, g)
			}
		}
	}
}

// TestSplitBlockNoAllocation: the key methods allocate nothing.
func TestSplitBlockNoAllocation(t *testing.T) {
	f, _ := NewSplitBlock(1000, 0.01)
	s := string(bytes.Repeat([]byte("https://example.com/"), 5))
	b := []byte(s)
	ss := keys("alloc", 0, 100)
	dst := make([]bool, 0, len(ss))
	y := f.Sync()
	h := SplitBlockHashString(s)
	if n := testing.AllocsPerRun(100, func() {
		f.Add(b)
		f.AddString(s)
		f.AddHash(h)
		_ = f.Test(b) && f.TestString(s) && f.TestHash(h) && f.TestAndAdd(b) && f.TestAndAddString(s)
		y.Add(b)
		y.AddString(s)
		y.AddHash(h)
		_ = y.Test(b) && y.TestString(s) && y.TestHash(h) && y.TestAndAdd(b) && y.TestAndAddString(s)
		AddMany(f, ss)
		dst = TestMany(f, ss, dst[:0])
	}); n != 0 {
		t.Errorf("%v allocations a round", n)
	}
}
