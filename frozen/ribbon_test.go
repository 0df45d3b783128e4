package frozen

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"

	"github.com/bloomkit/bloomkit/internal/format"
)

// ribbonRates are the rates make test measures: mixed widths (0.1, 1%,
// 0.1%, 1e-4) and one power of two (one width).
var ribbonRates = []float64{0.1, 0.01, 1.0 / 256, 1e-3, 1e-4}

// absentHash is the i-th hash of a key outside every test set: a random
// 64-bit value (a key's hash equals one with probability 2^-64).
func absentHash(i uint64) uint64 { return remix(i, 0x5eed0fab5e17) }

// countFP tests probes absent hashes and returns how many test present.
func countFP(f *Ribbon, probes uint64) uint64 {
	var fp uint64
	for i := range probes {
		if f.TestHash(absentHash(i)) {
			fp++
		}
	}
	return fp
}

// checkRate fails when fp false positives among probes are further from
// the filter's EstimatedFPR than 5 binomial standard deviations.
func checkRate(t *testing.T, what string, f *Ribbon, fp, probes uint64) {
	t.Helper()
	exp := f.EstimatedFPR() * float64(probes)
	if math.Abs(float64(fp)-exp) > 5*math.Sqrt(exp)+3 {
		t.Errorf("%s: %d false positives among %d absent keys, expected %.0f (rate %.4g)", what, fp, probes, exp, f.EstimatedFPR())
	}
}

// TestRibbonNoFalseNegatives: every key a ribbon is built with tests
// present, at every size and rate, before and after a round trip through
// its file, by Test, TestString and TestHash; the rate it reports is at
// most the one asked for.
func TestRibbonNoFalseNegatives(t *testing.T) {
	for _, n := range []int{1, 2, 100, 127, 128, 129, 1000, 20_000} {
		in := keys(0, n)
		for _, p := range append(ribbonRates, 0.5, 0.3, 1e-7, MinRibbonRate) {
			f, err := BuildRibbon(in, p, uint64(n))
			if err != nil {
				t.Fatalf("n=%d p=%g: %v", n, p, err)
			}
			var b bytes.Buffer
			if _, err := f.WriteTo(&b); err != nil {
				t.Fatal(err)
			}
			g, err := ReadRibbon(bytes.NewReader(b.Bytes()))
			if err != nil {
				t.Fatalf("n=%d p=%g: reading back: %v", n, p, err)
			}
			for _, k := range in {
				if !f.Test(k) || !g.Test(k) || !g.TestString(string(k)) || !g.TestHash(Hash64(uint64(n), k)) {
					t.Fatalf("n=%d p=%g: key %q lost", n, p, k)
				}
			}
			if est := g.EstimatedFPR(); est > p || est < p/2 {
				t.Errorf("n=%d p=%g: EstimatedFPR %g", n, p, est)
			}
			if g.Len() != uint64(n) || g.ApproxCount() != uint64(n) || g.Seed() != uint64(n) || g.Rate() != p ||
				g.Slots() != f.Slots() || g.SizeBits() != f.SizeBits() {
				t.Errorf("n=%d p=%g: read back len %d seed %d rate %g slots %d", n, p, g.Len(), g.Seed(), g.Rate(), g.Slots())
			}
		}
	}
}

// TestRibbonRate: at 100,000 keys the rate measured over absent keys is
// the rate the filter reports within 5 binomial standard deviations (400
// false positives expected: ±25%), at each rate make test covers.
func TestRibbonRate(t *testing.T) {
	const n = 100_000
	b, _ := NewRibbonBuilder(0.5, 3)
	for i := range uint64(n) {
		b.AddHash(remix(i, 3))
	}
	for _, p := range ribbonRates {
		b.rate = p
		f, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		probes := uint64(400 / p)
		fp := countFP(f, probes)
		checkRate(t, fmt.Sprintf("p=%g", p), f, fp, probes)
		t.Logf("p=%g: %.3f bits a key, rate %.4g (%d of %d), estimated %.4g", p, float64(f.SizeBits())/n,
			float64(fp)/float64(probes), fp, probes, f.EstimatedFPR())
	}
}

// TestRibbonBitsPerKey: at a million keys a ribbon costs at most 10% more
// than the bound log2(1/p), for the rate asked for and for the rate
// measured. make test checks 1e-1 to 1e-4 (1e-4 without measuring); the
// long form (BLOOMKIT_LONG=1) 1e-5 to 1e-7 as well, each measured.
func TestRibbonBitsPerKey(t *testing.T) {
	n := uint64(1_000_000)
	rates := []float64{0.1, 0.01, 1e-3, 1e-4}
	maxProbes := uint64(2_000_000)
	if os.Getenv("BLOOMKIT_LONG") != "" {
		rates = append(rates, 1e-5, 1e-6, 1e-7)
		maxProbes = 400_000_000
	}
	b, _ := NewRibbonBuilder(0.5, 5)
	for i := range n {
		b.AddHash(remix(i, 5))
	}
	for _, p := range rates {
		b.rate = p
		f, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		perKey := float64(f.SizeBits()) / float64(n)
		if bound := math.Log2(1 / p); perKey > 1.10*bound {
			t.Errorf("p=%g: %.3f bits a key, %.3f times the bound %.3f", p, perKey, perKey/bound, bound)
		}
		probes := min(maxProbes, uint64(1600/p))
		if float64(probes)*p < 30 {
			t.Logf("p=%g: %.3f bits a key (%.3f × log2(1/p)), rate not measured", p, perKey, perKey/math.Log2(1/p))
			continue
		}
		fp := countFP(f, probes)
		checkRate(t, fmt.Sprintf("p=%g", p), f, fp, probes)
		measured := float64(fp) / float64(probes)
		if bound := math.Log2(1 / measured); perKey > 1.10*bound {
			t.Errorf("p=%g: %.3f bits a key, %.3f times the bound %.3f at the measured rate %.4g",
				p, perKey, perKey/bound, bound, measured)
		}
		t.Logf("p=%g: %.3f bits a key (%.3f × log2(1/p)), measured rate %.4g (%d of %d): %.3f × log2(1/measured)",
			p, perKey, perKey/math.Log2(1/p), measured, fp, probes, perKey/math.Log2(1/measured))
	}
}

// TestRibbonLarge (long form only) checks no key is lost at ten million.
func TestRibbonLarge(t *testing.T) {
	if os.Getenv("BLOOMKIT_LONG") == "" {
		t.Skip("BLOOMKIT_LONG=1: 10 million keys")
	}
	const n = 10_000_000
	b, _ := NewRibbonBuilder(1e-3, 9)
	for i := range uint64(n) {
		b.AddHash(remix(i, 9))
	}
	f, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for i := range uint64(n) {
		if !f.TestHash(remix(i, 9)) {
			t.Fatalf("key %d lost", i)
		}
	}
	t.Logf("%.3f bits a key at 1e-3", float64(f.SizeBits())/n)
}

// TestRibbonRetries: a build whose banding fails retries with another
// remix seed and, after four failures, more slots, and loses no key:
// 256 keys in 256 slots band about once in a hundred tries, 260 never.
func TestRibbonRetries(t *testing.T) {
	for _, n := range []int{256, 260} {
		retried := 0
		for s := range uint64(20) {
			b, _ := NewRibbonBuilder(0.01, s)
			b.slotsFor = func(int) uint64 { return 256 }
			in := keys(int(s)*1000, n)
			for _, k := range in {
				b.Add(k)
			}
			f, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			if f.rseed != remix(1, 0x6a09e667f3bcc909) {
				retried++
			}
			for _, k := range in {
				if !f.Test(k) {
					t.Fatalf("n=%d seed %d (remix seed %#x, %d slots): key %q lost", n, s, f.rseed, f.slots, k)
				}
			}
			if n == 260 && f.slots == 256 {
				t.Fatalf("260 keys banded in 256 slots")
			}
		}
		if retried < 15 {
			t.Errorf("%d keys in 256 slots: %d of 20 builds banded more than once", n, retried)
		}
	}
}

// TestRibbonOrder: the same keys in another order, some repeated, give the
// same payload, and a list of every key three times is sized as the keys
// alone.
func TestRibbonOrder(t *testing.T) {
	in := keys(0, 50_000)
	f, err := BuildRibbon(in, 0.01, 3)
	if err != nil {
		t.Fatal(err)
	}
	shuffled := slices.Clone(in)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	shuffled = append(shuffled, in[:1000]...)
	g, err := BuildRibbon(shuffled, 0.01, 3)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := f.MarshalBinary()
	b, _ := g.MarshalBinary()
	// The header counts the keys given; the payload must match.
	if !bytes.Equal(a[format.HeaderSize:len(a)-4], b[format.HeaderSize:len(b)-4]) {
		t.Errorf("the same keys in another order built another ribbon (%d and %d slots)", f.Slots(), g.Slots())
	}
	thrice := slices.Concat(in, in, in)
	h, err := BuildRibbon(thrice, 0.01, 3)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := h.MarshalBinary()
	if !bytes.Equal(a[format.HeaderSize:len(a)-4], c[format.HeaderSize:len(c)-4]) {
		t.Errorf("every key three times: %d slots, %d for the keys once", h.Slots(), f.Slots())
	}
	if h.Len() != uint64(len(thrice)) {
		t.Errorf("Len %d, want the %d keys given", h.Len(), len(thrice))
	}
}

func TestRibbonEmptyAndParams(t *testing.T) {
	f, err := BuildRibbon(nil, 0.01, 1)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := f.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	g, err := ReadRibbon(&b)
	if err != nil || g.TestString("x") || g.EstimatedFPR() != 0 || g.SizeBits() != 0 || g.Rate() != 0.01 {
		t.Fatalf("empty set: %v", err)
	}
	d, err := BuildRibbon([][]byte{[]byte("a"), []byte("a"), []byte("b")}, 1e-4, 1)
	if err != nil || !d.TestString("a") || !d.TestString("b") || d.Len() != 3 {
		t.Fatalf("duplicates: %v", err)
	}
	for _, p := range []float64{0, -0.1, 0.51, 1, 2e-10, math.NaN(), math.Inf(1)} {
		if _, err := NewRibbonBuilder(p, 0); !errors.Is(err, ErrParams) {
			t.Errorf("rate %g: %v", p, err)
		}
		if _, err := BuildRibbon(nil, p, 0); !errors.Is(err, ErrParams) {
			t.Errorf("BuildRibbon at rate %g: %v", p, err)
		}
	}
	var zb RibbonBuilder
	if _, err := zb.Build(); !errors.Is(err, ErrZero) {
		t.Errorf("zero RibbonBuilder: %v", err)
	}
	var z Ribbon
	if z.TestString("x") || z.EstimatedFPR() != 0 {
		t.Error("a zero Ribbon says present")
	}
	if _, err := z.WriteTo(io.Discard); !errors.Is(err, ErrZero) {
		t.Errorf("writing a zero Ribbon: %v", err)
	}
}

// TestRibbonBuilderReused: more keys after Build and a second Build give
// a filter of all of them.
func TestRibbonBuilderReused(t *testing.T) {
	b, err := NewRibbonBuilder(0.01, 7)
	if err != nil {
		t.Fatal(err)
	}
	first, second := keys(0, 1000), keys(1000, 1000)
	for _, k := range first {
		b.Add(k)
	}
	if _, err := b.Build(); err != nil {
		t.Fatal(err)
	}
	for _, k := range second {
		b.AddString(string(k))
	}
	f, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range slices.Concat(first, second) {
		if !f.Test(k) {
			t.Fatalf("the second Build forgot %q", k)
		}
	}
	if b.Len() != 2000 || f.Len() != 2000 {
		t.Errorf("Len %d and %d, want 2000", b.Len(), f.Len())
	}
}

// TestRibbonGolden pins the file bytes of two ribbons (one rate that mixes
// widths, one that does not): the same keys and seed give the same file,
// and the files read back.
func TestRibbonGolden(t *testing.T) {
	for _, p := range []float64{0.01, 1.0 / 256} {
		path := fmt.Sprintf("testdata/golden/ribbon-%g-1000.bkf", p)
		f, err := BuildRibbon(keys(0, 1000), p, 7)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			os.WriteFile(path, got, 0o644)
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: building writes different bytes", path)
		}
		g, err := ReadRibbon(bytes.NewReader(want))
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

func TestRibbonReadErrors(t *testing.T) {
	f, _ := BuildRibbon(keys(0, 5000), 0.01, 3) // mixed widths
	good, _ := f.MarshalBinary()
	if f.upper == 0 || f.upper == f.slots/ribbonSeg {
		t.Fatalf("want a ribbon of two widths, have wide segments from %d of %d", f.upper, f.slots/ribbonSeg)
	}
	edit := func(off int, v uint64) []byte {
		c := bytes.Clone(good)
		binary.LittleEndian.PutUint64(c[off:], v)
		return resign(c)
	}
	edit32 := func(off int, v uint32) []byte {
		c := bytes.Clone(good)
		binary.LittleEndian.PutUint32(c[off:], v)
		return resign(c)
	}
	p := format.HeaderSize
	h, _ := format.ParseHeader(good)
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"truncated", good[:len(good)-10], ErrTruncated},
		{"header only", good[:p], ErrTruncated},
		{"flipped bit", func() []byte { c := bytes.Clone(good); c[p+30] ^= 1; return c }(), format.ErrChecksum},
		{"result bits not the rate's", edit32(32, 5), ErrCorrupt},
		{"rate above 1/2", edit(48, math.Float64bits(0.7)), ErrCorrupt},
		{"rate NaN", edit(48, math.Float64bits(math.NaN())), ErrCorrupt},
		{"32 result bits and wider blocks", func() []byte {
			c := bytes.Clone(good)
			binary.LittleEndian.PutUint32(c[32:], 32)
			binary.LittleEndian.PutUint64(c[48:], math.Float64bits(MinRibbonRate))
			return resign(c)
		}(), ErrCorrupt},
		{"slots not whole segments", edit(24, h.M+1), ErrCorrupt},
		{"one segment more", edit(24, h.M+ribbonSeg), ErrCorrupt},
		{"one segment", edit(24, ribbonSeg), ErrCorrupt},
		{"slots absurd", edit(24, 1<<50), ErrCorrupt},
		{"no slots, a payload", edit(24, 0), ErrCorrupt},
		{"wide segments from past the end", edit(p+8, h.M/ribbonSeg+1), ErrCorrupt},
		{"one wide segment more", edit(p+8, f.upper-1), ErrCorrupt},
		{"payload longer than the file", edit(64, h.PayloadLen+8), ErrTruncated},
		{"payload shorter than the words", edit(64, h.PayloadLen-8), ErrCorrupt},
		{"count above MaxKeys", func() []byte {
			c := bytes.Clone(good)
			binary.LittleEndian.PutUint64(c[40:], MaxKeys+1)
			binary.LittleEndian.PutUint64(c[56:], MaxKeys+1)
			return resign(c)
		}(), ErrCorrupt},
		{"planned count not the count", edit(40, h.N+1), ErrCorrupt},
		{"hash id 2", func() []byte { c := bytes.Clone(good); c[11] = format.HashXXH3Remix; return resign(c) }(), format.ErrHash},
		{"other type", func() []byte { c := bytes.Clone(good); c[10] = format.TypeFrozen; return resign(c) }(), format.ErrType},
	}
	for _, c := range cases {
		if _, err := ReadRibbon(bytes.NewReader(c.in)); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
		var g Ribbon
		if err := g.UnmarshalBinary(c.in); !errors.Is(err, c.want) || g.words != nil {
			t.Errorf("%s: UnmarshalBinary: got %v, want %v (and the Ribbon unchanged)", c.name, err, c.want)
		}
	}
}

// TestRibbonForgedSize: a header announcing a ribbon of 2^40 slots (a
// payload of 128 GiB) on a short stream fails as truncated, whether the
// reader can tell its length or not, having allocated little.
func TestRibbonForgedSize(t *testing.T) {
	const slots = 1 << 40
	words := ribbonWords(slots, slots/ribbonSeg, 1)
	h := format.Header{Type: format.TypeRibbon, M: slots, K: 1, N: 1, P: 0.5, Count: 1,
		PayloadLen: ribbonParamsSize + 8*words}
	file := append(h.Marshal(), make([]byte, ribbonParamsSize+4096)...)
	binary.LittleEndian.PutUint64(file[format.HeaderSize+8:], slots/ribbonSeg)
	for _, known := range []bool{true, false} {
		var r io.Reader = bytes.NewReader(file)
		if !known {
			r = io.MultiReader(r) // hides the length
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ReadRibbon(r)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrTruncated) {
			t.Errorf("length known %v: %v, want ErrTruncated", known, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
			t.Errorf("length known %v: allocated %d bytes for a %d-byte input", known, alloc, len(file))
		}
	}
}

// FuzzReadRibbon: no input panics or reads out of bounds on a lookup, and
// what reads back writes the same bytes.
func FuzzReadRibbon(f *testing.F) {
	for _, p := range []float64{0.01, 0.5, 1.0 / 256} {
		for _, n := range []int{0, 3, 300} {
			g, _ := BuildRibbon(keys(0, n), p, 1)
			b, _ := g.MarshalBinary()
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := ReadRibbon(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, k := range keys(0, 200) {
			g.Test(k)
		}
		out, err := g.MarshalBinary()
		if err != nil || !bytes.Equal(out, b[:len(out)]) {
			t.Fatalf("read back and written: %d bytes differ from the input (%v)", len(out), err)
		}
	})
}

// TestRibbonStandardEncoders round-trips a ribbon through MarshalBinary,
// JSON and gob: the copy writes the same file and answers alike.
func TestRibbonStandardEncoders(t *testing.T) {
	in := keys(0, 2000)
	f, err := BuildRibbon(in, 0.02, 7)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	check := func(how string, g *Ribbon) {
		t.Helper()
		again, err := g.MarshalBinary()
		if err != nil || !bytes.Equal(again, bin) {
			t.Fatalf("via %s: the copy writes another file (%v)", how, err)
		}
		for _, k := range keys(0, 20_000) {
			if g.Test(k) != f.Test(k) {
				t.Fatalf("via %s: %q answers differently", how, k)
			}
		}
	}
	var g Ribbon
	if err := g.UnmarshalBinary(bin); err != nil {
		t.Fatal(err)
	}
	check("binary", &g)
	js, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var j Ribbon
	if err := json.Unmarshal(js, &j); err != nil {
		t.Fatal(err)
	}
	check("json", &j)
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(f); err != nil {
		t.Fatal(err)
	}
	var h Ribbon
	if err := gob.NewDecoder(&buf).Decode(&h); err != nil {
		t.Fatal(err)
	}
	check("gob", &h)
	if err := h.UnmarshalBinary(append(bin, 0)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing byte: %v", err)
	}
	if err := j.UnmarshalJSON([]byte(`"not base64!"`)); err == nil {
		t.Fatal("UnmarshalJSON took a string that is not base64")
	}
	var z Ribbon
	if _, err := json.Marshal(&z); !errors.Is(err, ErrZero) {
		t.Fatalf("json.Marshal of a zero Ribbon: %v", err)
	}
}
