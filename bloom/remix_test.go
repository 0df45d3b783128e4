package bloom

import (
	"errors"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestRemixPositions pins hash id 2's derivation (docs/format.md) against a
// loop written from the document, and checks that every probing path of
// both classic types, for both hash ids, sets and tests exactly the bits
// Locate names.
func TestRemixPositions(t *testing.T) {
	// From the document: x = lo; probe ⌊x·m/2^64⌋; x = x·0xd1342543de82ef95 + hi.
	spec := func(m uint64, k uint32, h KeyHash) []uint64 {
		var out []uint64
		x := h.Lo
		for range k {
			hi, _ := bits.Mul64(x, m)
			out = append(out, hi)
			x = x*0xd1342543de82ef95 + h.Hi
		}
		return out
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		h := KeyHash{Lo: rng.Uint64(), Hi: rng.Uint64()}
		m, k := 1+rng.Uint64N(1<<40), uint32(1+rng.IntN(MaxK))
		want := spec(m, k, h)
		got := Locate(Params{M: m, K: k}, h, nil)
		got2 := Locate(Params{M: m, K: k, Hash: HashXXH3Remix}, h, nil)
		for i := range want {
			if got[i] != want[i] || got2[i] != want[i] {
				t.Fatalf("m=%d k=%d %+v: Locate gives %v / %v, the document %v", m, k, h, got, got2, want)
			}
		}
	}
	for _, hash := range []uint8{HashXXH3, HashXXH3Remix} {
		for _, k := range []uint32{1, 7, 16, 17, 40} {
			p := Params{M: 5003, K: k, Seed: 5, Hash: hash}
			ks := keys("remix", 0, 300)
			// The bits Locate names, set by hand.
			want, _ := NewFromParams(p)
			for _, key := range ks {
				for _, x := range Locate(p, p.HashKeyString(key), nil) {
					want.words[x/64] |= 1 << (x % 64)
				}
			}
			builds := map[string]func(f *Filter){
				"Add":        func(f *Filter) { forEach(ks, func(s string) { f.Add([]byte(s)) }) },
				"AddString":  func(f *Filter) { forEach(ks, f.AddString) },
				"AddHash":    func(f *Filter) { forEach(ks, func(s string) { f.AddHash(p.HashKeyString(s)) }) },
				"TestAndAdd": func(f *Filter) { forEach(ks, func(s string) { f.TestAndAddString(s) }) },
				"Sync":       func(f *Filter) { forEach(ks, f.Sync().AddString) },
				"AddMany":    func(f *Filter) { AddMany(f, ks) },
			}
			for name, build := range builds {
				f, _ := NewFromParams(p)
				build(f)
				if !f.Equal(want) {
					t.Errorf("hash id %d, k=%d: %s sets other bits than Locate names", hash, k, name)
				}
			}
			c, _ := NewCountingFromParams(p)
			forEach(ks, c.AddString)
			for _, key := range append(ks, keys("other", 0, 3000)...) {
				w := want.TestString(key)
				if c.TestString(key) != w || want.Sync().TestString(key) != w || TestMany(want, []string{key}, nil)[0] != w {
					t.Fatalf("hash id %d, k=%d: %q: the test paths disagree", hash, k, key)
				}
			}
		}
	}
}

func forEach(ks []string, f func(string)) {
	for _, k := range ks {
		f(k)
	}
}

// TestRemixProbesSpread: at small m, the k positions of one key are as
// spread as k independent uniform positions. With hash id 1 at m = 336 and
// k = 23, one key in about 900 had 4 or fewer distinct positions; for 23
// independent positions, 8 or fewer has a chance below 1e-12.
func TestRemixProbesSpread(t *testing.T) {
	statistical(t)
	rng := rand.New(rand.NewPCG(5, 6))
	p := Params{M: 336, K: 23}
	var few, old int
	seen := make(map[uint64]bool)
	for range 200_000 {
		h := KeyHash{Lo: rng.Uint64(), Hi: rng.Uint64()}
		distinct := func(pos []uint64) int {
			clear(seen)
			for _, x := range pos {
				seen[x] = true
			}
			return len(seen)
		}
		if distinct(Locate(p, h, nil)) <= 8 {
			few++
		}
		if distinct(locateV1(p, h, nil)) <= 8 {
			old++
		}
	}
	if few != 0 {
		t.Errorf("%d of 200,000 keys have 8 or fewer distinct positions of 23 in 336 bits", few)
	}
	t.Logf("hash id 1: %d of 200,000 keys have 8 or fewer distinct positions", old)
}

// TestHashIDsDoNotMix: filters with different hash ids set different bits
// for the same key, so they cannot be combined, and a blocked filter has
// only id 1.
func TestHashIDsDoNotMix(t *testing.T) {
	a, _ := NewFromParams(Params{M: 1000, K: 4, Hash: HashXXH3})
	b, _ := NewFromParams(Params{M: 1000, K: 4})
	if b.Params().Hash != HashXXH3Remix {
		t.Errorf("a new filter has hash id %d", b.Params().Hash)
	}
	if err := a.Union(b); !errors.Is(err, ErrIncompatible) {
		t.Errorf("union across hash ids: %v", err)
	}
	if _, err := NewBlockedFromParams(Params{M: 1024, K: 4, Hash: HashXXH3Remix}); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("blocked filter with hash id 2: %v", err)
	}
	if _, err := NewFromParams(Params{M: 1024, K: 4, Hash: 3}); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("hash id 3: %v", err)
	}
	if p := Estimate(1000, 0.01); p.Hash != HashXXH3Remix {
		t.Errorf("Estimate gives hash id %d", p.Hash)
	}
}
