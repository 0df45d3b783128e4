package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"unsafe"

	bab "github.com/bits-and-blooms/bloom/v3"
	"github.com/bloomkit/bloomkit/bloom"
	"github.com/greatroar/blobloom"
	"github.com/zeebo/xxh3"
)

// The -one mode does one kind of lookup and nothing else worth counting,
// for valgrind's cachegrind: it builds a filter of n keys (maxOne real keys,
// the rest random hashes, or short keys for bits-and-blooms, which takes no
// hash), then looks up the first -lookups hit or absent keys. Two runs with
// different -lookups differ only in the lookup loop, so the difference of
// their counts divided by the difference of -lookups is the cost of one
// lookup (bench/SPEED.md shows the commands).

const maxOne = 1 << 18

// oneKey is the -one mode's key of index i: the URL-like key of the
// timed runs (58–62 bytes at these indexes), or with -keylen a key of
// exactly that many bytes (index i little-endian in its first bytes, the
// rest a fixed letter), unique while i < 2^(8·keylen).
func oneKey(i uint64) string {
	if *keyLen == 0 {
		return string(appendKey(nil, i))
	}
	b := make([]byte, *keyLen)
	for j := range b {
		b[j] = 'k'
	}
	for j := 0; j < len(b) && j < 8; j++ {
		b[j] = byte(i >> (8 * j))
	}
	return string(b)
}

func one(what string, lookups int) {
	sub, kind, _ := strings.Cut(what, "/")
	if lookups > maxOne || (kind != "hit" && kind != "miss" && kind != "many") {
		fmt.Fprintln(os.Stderr, "lookupdist: -one wants subject/hit, subject/miss or blocked/many and -lookups up to", maxOne)
		os.Exit(2)
	}
	if *keyLen != 0 && (*keyLen < 4 || *keyLen > 4096) {
		fmt.Fprintln(os.Stderr, "lookupdist: -keylen wants 4 to 4096 bytes, or 0")
		os.Exit(2)
	}
	n, p := *nFlag, *pFlag
	if kind == "many" {
		n = *bigN
	}
	real := make([]string, maxOne)
	absent := make([]string, maxOne)
	for i := range real {
		real[i] = oneKey(uint64(i))
		absent[i] = oneKey(n + uint64(i))
	}
	rng := rand.New(rand.NewPCG(*seed, n))
	rng.Shuffle(len(real), func(i, j int) { real[i], real[j] = real[j], real[i] })
	real, absent = compact(real), compact(absent)
	keys := real[:lookups]
	if kind == "miss" {
		keys = absent[:lookups]
	}
	// No garbage collection during the lookups: a cycle's work depends on
	// when it starts, not on the lookups, and would not cancel out.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	fill := n - maxOne
	// The filler's hashes: splitmix64, cheaper to simulate than math/rand.
	var x uint64
	next := func() uint64 {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		return z ^ z>>31
	}
	c := 0
	ready := func() { runtime.GC() }
	switch sub {
	case "blocked", "blocked1":
		// blocked is NewBlocked's filter (hash id 4, XXH3-64); blocked1
		// the same size with hash id 1 (XXH3-128), that of earlier files.
		e := bloom.EstimateBlocked(n, p)
		if sub == "blocked1" {
			e.Hash = bloom.HashXXH3
		}
		f, err := bloom.NewBlockedFromParams(e)
		if err != nil {
			panic(err)
		}
		for _, k := range real {
			f.AddString(k)
		}
		for range fill {
			h := next()
			f.AddHash(bloom.KeyHash{Lo: h, Hi: h}) // one word, as hash id 4 has; id 1 takes it as two equal halves
		}
		ready()
		if kind == "many" {
			dst := make([]bool, 0, *batch)
			for ks := keys; len(ks) > 0; {
				m := min(len(ks), *batch)
				dst = bloom.TestMany(f, ks[:m], dst[:0])
				for _, b := range dst {
					if b {
						c++
					}
				}
				ks = ks[m:]
			}
			break
		}
		for _, k := range keys {
			if f.TestString(k) {
				c++
			}
		}
	case "filter":
		f, err := bloom.New(n, p)
		if err != nil {
			panic(err)
		}
		for _, k := range real {
			f.AddString(k)
		}
		for range fill {
			f.AddHash(bloom.KeyHash{Lo: next(), Hi: next()})
		}
		ready()
		for _, k := range keys {
			if f.TestString(k) {
				c++
			}
		}
	case "blobloom":
		f := blobloom.NewOptimized(blobloom.Config{Capacity: n, FPRate: p})
		for _, k := range real {
			f.Add(xxh3.HashString(k))
		}
		for range fill {
			f.Add(next())
		}
		ready()
		for _, k := range keys {
			if f.Has(xxh3.HashString(k)) {
				c++
			}
		}
	case "bab":
		f := bab.NewWithEstimates(uint(n), p)
		for _, k := range real {
			f.AddString(k)
		}
		var b [8]byte
		for range fill {
			*(*uint64)(unsafe.Pointer(&b)) = next()
			f.Add(b[:])
		}
		ready()
		for _, k := range keys {
			if f.TestString(k) {
				c++
			}
		}
	default:
		fmt.Fprintf(os.Stderr, "lookupdist: unknown subject %q\n", sub)
		os.Exit(2)
	}
	fmt.Printf("%s: %d of %d lookups tested present\n", what, c, lookups)
}
