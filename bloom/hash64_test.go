package bloom

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"testing"

	"github.com/zeebo/xxh3"
)

// TestBlockedHash4MatchesSpec builds blocked filters of hash id 4 from the
// format's definition alone (docs/format.md: XXH3-64 of the key with the
// seed, the block from the high word of its product with the block count,
// probe i bit (h·s_i mod 2^64) >> 55) and checks that every way of adding
// sets exactly those bits, and every way of testing answers as the bits
// say.
func TestBlockedHash4MatchesSpec(t *testing.T) {
	ks := keys("hash4", 0, 3000)
	absent := keys("hash4-absent", 0, 3000)
	for _, seed := range []uint64{0, 0x0123456789abcdef} {
		t.Run(fmt.Sprintf("seed=%#x", seed), func(t *testing.T) {
			p := Params{M: 40 * BlockBits, K: 7, Seed: seed, Hash: HashXXH3x64}
			spec := make([]uint64, p.M/64)
			set := func(key string) {
				h := xxh3.HashStringSeed(key, seed) // XXH3_64bits_withSeed; seed 0 is the unseeded hash
				b, _ := bits.Mul64(h, p.M/BlockBits)
				for _, s := range blockSalts[:p.K] {
					pos := (h * s) >> 55
					spec[b*8+pos/64] |= 1 << (pos % 64)
				}
			}
			for _, k := range ks {
				set(k)
			}
			adders := map[string]func(*Blocked){
				"AddString":  func(f *Blocked) { forEach(ks, f.AddString) },
				"Add":        func(f *Blocked) { forEach(ks, func(k string) { f.Add([]byte(k)) }) },
				"TestAndAdd": func(f *Blocked) { forEach(ks, func(k string) { f.TestAndAddString(k) }) },
				"AddMany":    func(f *Blocked) { AddMany(f, ks) },
				"Sync":       func(f *Blocked) { forEach(ks, f.Sync().AddString) },
				"AddHash":    func(f *Blocked) { forEach(ks, func(k string) { f.AddHash(f.Params().HashKeyString(k)) }) },
				"SyncHash": func(f *Blocked) {
					forEach(ks, func(k string) { f.Sync().AddHash(f.Params().HashKey([]byte(k))) })
				},
			}
			for name, add := range adders {
				f, err := NewBlockedFromParams(p)
				if err != nil {
					t.Fatal(err)
				}
				add(f)
				if !slices.Equal(f.words, spec) {
					t.Fatalf("%s: the bits differ from the format's definition", name)
				}
				probes := append(slices.Clone(ks), absent...)
				many := TestMany(f, probes, nil)
				fp := 0
				for i, k := range probes {
					h := xxh3.HashStringSeed(k, seed)
					b, _ := bits.Mul64(h, p.M/BlockBits)
					want := true
					for _, s := range blockSalts[:p.K] {
						pos := (h * s) >> 55
						want = want && spec[b*8+pos/64]&(1<<(pos%64)) != 0
					}
					got := []bool{f.TestString(k), f.Test([]byte(k)), f.Sync().TestString(k), f.Sync().Test([]byte(k)),
						f.TestHash(f.Params().HashKeyString(k)), many[i]}
					for j, g := range got {
						if g != want {
							t.Fatalf("%s: key %q: answer %d is %v, the bits say %v", name, k, j, g, want)
						}
					}
					if i >= len(ks) && want {
						fp++
					}
				}
				if fp == len(absent) || fp == 0 {
					t.Fatalf("%s: %d of %d absent keys test present: the test says nothing", name, fp, len(absent))
				}
				block, offs := LocateBlock(p, p.HashKeyString(ks[0]), nil)
				h := xxh3.HashStringSeed(ks[0], seed)
				if b, _ := bits.Mul64(h, p.M/BlockBits); block != b || int(offs[0]) != int((h*blockSalts[0])>>55) {
					t.Fatalf("LocateBlock: block %d offset %d, want %d and %d", block, offs[0], b, (h*blockSalts[0])>>55)
				}
			}
		})
	}
}

// TestHashIDs: new blocked filters take hash id 4 (NewBlocked,
// EstimateBlocked, NewBlockedFromParams with Hash 0), a blocked filter of
// id 1 is still made on request, and the chain and window types, whose only
// id is 1, keep it.
func TestHashIDs(t *testing.T) {
	f, err := NewBlocked(1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewBlockedFromParams(Params{M: 1024, K: 3})
	if err != nil {
		t.Fatal(err)
	}
	old, err := NewBlockedFromParams(Params{M: 1024, K: 3, Hash: HashXXH3})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewScalable(100, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWindow(60e9, 100, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ got, want uint8 }{
		"NewBlocked":             {f.Params().Hash, HashXXH3x64},
		"EstimateBlocked":        {EstimateBlocked(1000, 0.01).Hash, HashXXH3x64},
		"NewBlockedFromParams/0": {g.Params().Hash, HashXXH3x64},
		"NewBlockedFromParams/1": {old.Params().Hash, HashXXH3},
		"Scalable link":          {s.links[0].f.params.Hash, HashXXH3},
		"Window":                 {w.params.Hash, HashXXH3},
		"Window generation":      {w.gens[0].params.Hash, HashXXH3},
	} {
		if c.got != c.want {
			t.Errorf("%s: hash id %d, want %d", name, c.got, c.want)
		}
	}
	for _, id := range []uint8{HashXXH3Remix, HashXXH64, 5} {
		if _, err := NewBlockedFromParams(Params{M: 1024, K: 3, Hash: id}); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("a blocked filter with hash id %d: %v, want ErrInvalidParams", id, err)
		}
	}
	if _, err := NewFromParams(Params{M: 1024, K: 3, Hash: HashXXH3x64}); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("a classic filter with hash id 4: %v, want ErrInvalidParams", err)
	}
}

// TestHashMixingNeverSilent: a key added to a filter and then asked for
// with a hash of another kind (another seed, or the 128-bit Hash on a
// blocked filter of the 64-bit id) must not be answered "absent", and a
// key added with such a hash must not be lost: each either answers as for
// the key or refuses by panicking. Before hashes carried their origin,
// TestHash answered false here, silently.
func TestHashMixingNeverSilent(t *testing.T) {
	const k = "mixed-hash-key"
	seeded := func(id uint8) Params { return Params{M: 64 * BlockBits, K: 7, Seed: 7, Hash: id} }
	blocked := func(p Params) filterWithHash {
		f, err := NewBlockedFromParams(p)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	classic := func(p Params) filterWithHash {
		f, err := NewFromParams(p)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	cases := []struct {
		name string
		f    func() filterWithHash
		h    KeyHash
	}{
		{"blocked seed 7, Hash seed 0", func() filterWithHash { return blocked(seeded(0)) }, Hash(0, []byte(k))},
		{"blocked id 1 seed 7, Hash seed 0", func() filterWithHash { return blocked(seeded(HashXXH3)) }, Hash(0, []byte(k))},
		{"blocked id 4 seed 7, Hash seed 7", func() filterWithHash { return blocked(seeded(0)) }, Hash(7, []byte(k))},
		{"classic seed 7, Hash seed 0", func() filterWithHash { return classic(seeded(0)) }, HashString(0, k)},
		{"blocked unseeded, Hash seed 0", func() filterWithHash { return blocked(Params{M: 64 * BlockBits, K: 7}) }, Hash(0, []byte(k))},
		{"blocked seed 7 Sync, Hash seed 0", func() filterWithHash { return syncOf{blocked(seeded(0)).(*Blocked).Sync()} }, Hash(0, []byte(k))},
		{"classic seed 7 Sync, Hash seed 0", func() filterWithHash { return syncOf{classic(seeded(0)).(*Filter).Sync()} }, Hash(0, []byte(k))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := c.f()
			f.AddString(k)
			if got, panicked := try(func() bool { return f.TestHash(c.h) }); !got && !panicked {
				t.Errorf("TestHash of a foreign hash of an added key answered false: a silent false negative")
			}
			g := c.f()
			if _, panicked := try(func() bool { g.AddHash(c.h); return true }); !panicked && !g.TestString(k) {
				t.Errorf("AddHash of a foreign hash lost the key: Test answers false")
			}
		})
	}
}

// filterWithHash is what TestHashMixingNeverSilent needs of a filter.
type filterWithHash interface {
	AddString(string)
	TestString(string) bool
	AddHash(KeyHash)
	TestHash(KeyHash) bool
}

type syncOf struct{ Sync }

func try(fn func() bool) (result, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	return fn(), false
}

// TestHashKeyRefusal: a hash made by Params.HashKey works with its filter,
// and a filter of another hash function or seed refuses it with a panic
// wrapping ErrHashMismatch, which CheckHash returns as an error; a hash
// built from its fields is never refused.
func TestHashKeyRefusal(t *testing.T) {
	const k = "refusal-key"
	b4, _ := NewBlockedFromParams(Params{M: 8 * BlockBits, K: 5, Seed: 3})
	b1, _ := NewBlockedFromParams(Params{M: 8 * BlockBits, K: 5, Seed: 3, Hash: HashXXH3})
	c, _ := NewFromParams(Params{M: 4000, K: 5, Seed: 3})
	b4.AddString(k)
	b1.AddString(k)
	c.AddString(k)
	own := map[string]struct {
		f filterWithHash
		p Params
	}{"blocked id 4": {b4, b4.Params()}, "blocked id 1": {b1, b1.Params()}, "classic": {c, c.Params()}}
	for name, x := range own {
		h := x.p.HashKeyString(k)
		if h != x.p.HashKey([]byte(k)) {
			t.Errorf("%s: HashKey and HashKeyString differ", name)
		}
		if err := x.p.CheckHash(h); err != nil || !x.f.TestHash(h) {
			t.Errorf("%s: its own HashKey: CheckHash %v, TestHash false", name, err)
		}
		if !x.f.TestHash(KeyHash{Lo: h.Lo, Hi: h.Hi}) {
			t.Errorf("%s: the same hash built from its fields tests absent", name)
		}
	}
	// The 128-bit hash serves both ids that use it; the 64-bit one only id 4.
	if !b1.TestHash(c.Params().HashKeyString(k)) || !c.TestHash(b1.Params().HashKeyString(k)) {
		t.Error("hash ids 1 and 2 with one seed refuse each other's hash")
	}
	foreign := []struct {
		name string
		p    Params
		h    KeyHash
	}{
		{"id 4 given XXH3-128", b4.Params(), b1.Params().HashKeyString(k)},
		{"id 1 given XXH3-64", b1.Params(), b4.Params().HashKeyString(k)},
		{"classic given XXH3-64", c.Params(), b4.Params().HashKeyString(k)},
		{"id 4 given another seed", b4.Params(), Params{Seed: 4, Hash: HashXXH3x64}.HashKeyString(k)},
		{"classic given Hash with seed 0", c.Params(), Hash(0, []byte(k))},
	}
	for _, x := range foreign {
		err := x.p.CheckHash(x.h)
		if !errors.Is(err, ErrHashMismatch) {
			t.Errorf("%s: CheckHash = %v, want ErrHashMismatch", x.name, err)
		}
	}
	mustPanic := func(name string, fn func()) {
		t.Helper()
		defer func() {
			r := recover()
			if err, ok := r.(error); !ok || !errors.Is(err, ErrHashMismatch) {
				t.Errorf("%s: recovered %v, want an error wrapping ErrHashMismatch", name, r)
			}
		}()
		fn()
	}
	h128 := Hash(3, []byte(k))
	mustPanic("Blocked.TestHash", func() { b4.TestHash(h128) })
	mustPanic("Blocked.AddHash", func() { b4.AddHash(h128) })
	mustPanic("Sync.TestHash", func() { b4.Sync().TestHash(h128) })
	mustPanic("Sync.AddHash", func() { b4.Sync().AddHash(h128) })
	mustPanic("LocateBlock", func() { LocateBlock(b4.Params(), h128, nil) })
	mustPanic("LocateBlock, Hash 0", func() { LocateBlock(Params{M: b4.Params().M, K: 5, Seed: 3}, h128, nil) })
	mustPanic("Filter.TestHash", func() { c.TestHash(b4.Params().HashKeyString(k)) })
	mustPanic("Filter.AddHash", func() { c.AddHash(Hash(4, []byte(k))) })
	mustPanic("Locate", func() { Locate(c.Params(), b4.Params().HashKeyString(k), nil) })
	// The zero value holds nothing and checks nothing.
	if new(Blocked).TestHash(h128) || new(Filter).TestHash(h128) {
		t.Error("a zero value tests a hash present")
	}
}
