package redisbloom

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"testing"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The BF.SCANDUMP example from RedisBloom's documentation.
func TestBloomDocumentedDump(t *testing.T) {
	b, err := NewBloom(10, 0.1, 2, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Add([]byte("item1")); !ok || err != nil {
		t.Fatalf("add: %v %v", ok, err)
	}
	want := unhex(t, "0100000000000000 01000000 05000000 02000000 0800000000000000 4000000000000000 0100000000000000 9a9999999999a93f 4af7d49edef01840 05000000 0a00000000000000 00")
	if got := b.Header(); !bytes.Equal(got, want) {
		t.Fatalf("header\n got %x\nwant %x", got, want)
	}
	next, chunk := b.Chunk(1)
	if next != 9 || !bytes.Equal(chunk, unhex(t, "0108008000042000")) {
		t.Fatalf("chunk %d %x", next, chunk)
	}
	if next, chunk := b.Chunk(9); next != 0 || len(chunk) != 0 {
		t.Fatalf("end %d %x", next, chunk)
	}
}

// The CF.SCANDUMP example from the semantics notes.
func TestCuckooDocumentedDump(t *testing.T) {
	c, err := NewCuckoo(8, 2, 20, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Insert([]byte("item1")); st != Inserted {
		t.Fatal(st)
	}
	want := unhex(t, "0100000000000000 0400000000000000 0000000000000000 0100000000000000 0200 1400 0100")
	if got := c.Header(); !bytes.Equal(got, want) {
		t.Fatalf("header\n got %x\nwant %x", got, want)
	}
	next, chunk := c.Chunk(1)
	if next != 9 || !bytes.Equal(chunk, []byte{0, 0, 0, 0, 7, 0, 0, 0}) {
		t.Fatalf("chunk %d %x", next, chunk)
	}
	if next, chunk := c.Chunk(9); next != 0 || chunk != nil {
		t.Fatal("no end")
	}
}

func TestBloomInfoSizes(t *testing.T) {
	for _, c := range []struct {
		e          float64
		capacity   uint64
		nonScaling bool
		size       uint64
	}{
		{0.01, 100, false, 240}, {0.001, 100, false, 296}, {0.01, 100, true, 216},
		{0.001, 1000, false, 2080}, {0.01, 10_000_000, false, 13_784_792},
	} {
		b, err := NewBloom(c.capacity, c.e, 2, c.nonScaling, nil)
		if err != nil {
			t.Fatal(err)
		}
		if b.MemUsage() != c.size {
			t.Errorf("%v: size %d, want %d", c, b.MemUsage(), c.size)
		}
	}
	// (1e-6, 300 000 000) -> 1 132 420 232 without allocating it.
	n, err := BloomCreateBytes(300_000_000, 1e-6, false)
	if err != nil || 32+64+n != 1_132_420_232 {
		t.Errorf("big sizing: %d %v", 32+64+n, err)
	}
}

func TestBloomNonScalingFull(t *testing.T) {
	b, _ := NewBloom(2, 0.01, 2, true, nil)
	for _, s := range []string{"a", "b"} {
		if ok, err := b.Add([]byte(s)); !ok || err != nil {
			t.Fatal(s, ok, err)
		}
	}
	if ok, err := b.Add([]byte("a")); ok || err != nil {
		t.Fatalf("present item on full filter: %v %v", ok, err)
	}
	if _, err := b.Add([]byte("c")); err != ErrFull {
		t.Fatalf("want ErrFull, got %v", err)
	}
}

func TestBloomGrowthRefused(t *testing.T) {
	refuse := false
	b, _ := NewBloom(1, 0.01, 2, false, func(n uint64) error {
		if refuse {
			return ErrTooLarge
		}
		return nil
	})
	b.Add([]byte("a"))
	refuse = true
	if _, err := b.Add([]byte("b")); err != ErrInsert {
		t.Fatalf("want ErrInsert, got %v", err)
	}
	if b.NumLinks() != 1 {
		t.Fatal("link added despite refusal")
	}
}

func TestBloomLoadErrors(t *testing.T) {
	b, _ := NewBloom(100, 0.01, 2, false, nil)
	b.Add([]byte("x"))
	hdr := b.Header()
	for name, h := range map[string][]byte{
		"short":      hdr[:10],
		"trailing":   append(append([]byte{}, hdr...), 0),
		"nfilters 0": append(append([]byte{}, hdr[:8]...), append([]byte{0, 0, 0, 0}, hdr[12:20]...)...),
	} {
		if _, err := LoadBloomHeader(h, nil); err != ErrBadData {
			t.Errorf("%s: %v", name, err)
		}
	}
	spin := append([]byte{}, hdr...)
	binary.LittleEndian.PutUint32(spin[20+40:], 2000)                         // hashes
	binary.LittleEndian.PutUint64(spin[20+32:], math.Float64bits(1999.5/ln2)) // bpe to match
	if _, err := LoadBloomHeader(spin, nil); err != ErrBadData {
		t.Errorf("forged hash count: %v", err)
	}
	bad := append([]byte{}, hdr...)
	bad[0] = 9 // size no longer matches the links
	if _, err := LoadBloomHeader(bad, nil); err != ErrBadData {
		t.Errorf("size mismatch: %v", err)
	}
	l, err := LoadBloomHeader(hdr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.LoadChunk(1, hdr); err != ErrBadData {
		t.Errorf("header as chunk: %v", err)
	}
	if err := l.LoadChunk(1000, []byte{1}); err != ErrNoLink {
		t.Errorf("offset: %v", err)
	}
	if err := l.LoadChunk(250, make([]byte, 200)); err != ErrChunkTooBig {
		t.Errorf("too big: %v", err)
	}
}

func TestCuckooFullAndCompact(t *testing.T) {
	c, _ := NewCuckoo(4, 2, 5, 0, nil)
	full := false
	for i := 0; i < 100; i++ {
		if c.Insert([]byte(fmt.Sprint(i))) == NoSpace {
			full = true
			break
		}
	}
	if !full {
		t.Fatal("expansion 0 never filled")
	}
	g, _ := NewCuckoo(4, 2, 5, 1, nil)
	for i := 0; i < 40; i++ {
		if st := g.Insert([]byte(fmt.Sprint(i))); st != Inserted {
			t.Fatal(st)
		}
	}
	if len(g.Filters) < 2 {
		t.Fatal("did not grow")
	}
	for i := 0; i < 40; i++ {
		if !g.Delete([]byte(fmt.Sprint(i))) {
			t.Fatalf("delete %d", i)
		}
	}
	if g.NumItems != 0 || len(g.Filters) != 1 {
		t.Fatalf("after deletes: items %d filters %d", g.NumItems, len(g.Filters))
	}
}

func TestCuckooLoadErrors(t *testing.T) {
	c, _ := NewCuckoo(8, 2, 20, 1, nil)
	c.Insert([]byte("a"))
	h := c.Header()
	if _, err := LoadCuckooHeader(h[:37], 32, nil); err != ErrCFHeader {
		t.Error(err)
	}
	bad := append([]byte{}, h...)
	bad[8] = 3 // 3 buckets: not a power of two
	if _, err := LoadCuckooHeader(bad, 32, nil); err != ErrCFCreate {
		t.Error(err)
	}
	l, _ := LoadCuckooHeader(h, 32, nil)
	if err := l.LoadChunk(9, make([]byte, 9)); err != ErrCFChunk {
		t.Error(err)
	}
	if err := l.LoadChunk(100, []byte{1}); err != ErrCFChunk {
		t.Error(err)
	}
	if err := l.LoadChunk(9, c.Filters[0]); err != nil {
		t.Error(err)
	}
	if !l.Exists([]byte("a")) {
		t.Error("loaded filter lost a")
	}
}

func FuzzLoadHeaders(f *testing.F) {
	b, _ := NewBloom(10, 0.1, 2, false, nil)
	f.Add(b.Header())
	c, _ := NewCuckoo(8, 2, 20, 1, nil)
	f.Add(c.Header())
	f.Fuzz(func(t *testing.T, data []byte) {
		limit := func(n uint64) error {
			if n > 1<<20 {
				return ErrTooLarge
			}
			return nil
		}
		if l, err := LoadBloomHeader(data, limit); err == nil {
			l.Exists([]byte("x"))
			l.Add([]byte("y"))
			l.LoadChunk(int64(len(data)), data)
		}
		if l, err := LoadCuckooHeader(data, 32, limit); err == nil {
			l.Exists([]byte("x"))
			l.Insert([]byte("y"))
			l.Delete([]byte("y"))
			l.LoadChunk(int64(len(data))+1, data)
		}
	})
}

func ExampleBloom() {
	b, _ := NewBloom(1000, 0.01, 2, false, nil)
	added, _ := b.Add([]byte("https://a.example"))
	fmt.Println(added, b.Exists([]byte("https://a.example")), b.Exists([]byte("https://b.example")))
	fmt.Println(b.Capacity(), b.MemUsage())
	// Output:
	// true true false
	// 1000 1480
}

// TestLogRoundedAsC: the bits per element of a link are computed from
// the natural logarithm as the C library rounds it (RedisBloom's
// bloom_init calls log): 0.01 is a rate where Go's math.Log is one unit
// in the last place off, and a link's header (BF.SCANDUMP, DUMP, the RDB)
// then differed from RedisBloom's.
func TestLogRoundedAsC(t *testing.T) {
	// x, then glibc's log(x), as bits.
	for _, c := range [][2]uint64{
		{0x3f847ae147ae147b, 0xc0126bb1bbb55515}, // 0.01 (math.Log: ...516)
		{0x3f347ae147ae147b, 0xc020244dcd88dca5}, // 0.0003125
		{0x3fb999999999999a, 0xc0026bb1bbb55515}, // 0.1
		{0x3f747ae147ae147b, 0xc015317a1b949c53}, // 0.005
		{0x3f50624dd2f1a9fc, 0xc01ba18a998fffa0}, // 0.001
	} {
		x := math.Float64frombits(c[0])
		for range 2 { // computed, then from the cache
			if got := math.Float64bits(logRN(x)); got != c[1] {
				t.Errorf("log(%g) = %016x, C gives %016x", x, got, c[1])
			}
		}
	}
	// RedisBloom's header for BF.RESERVE k 0.02 50 (first link at 0.01).
	s, err := SizeLink(50, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if got := math.Float64bits(s.BPE); got != 0x40232b8cc58a1688 {
		t.Errorf("bits per element at 0.01: %016x, RedisBloom's 40232b8cc58a1688", got)
	}
}
