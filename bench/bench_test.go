package main

// go test benchmarks of the same operations as the report, at 1M keys by
// default (go test -bench . -args -n 10000000 for another size), one key an
// op so that benchstat can compare runs:
//
//	go test -run '^$' -bench . -count 10 | tee new.txt
//	benchstat old.txt new.txt
//
// BenchmarkConcurrent measures bloomkit's lock-free Sync view (AddString and
// TestString) from 1 and 2 goroutines; BenchmarkAddVsSync compares the plain
// AddString with the Sync view's (and bloom.AddMany) in one goroutine.

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/zeebo/xxh3"
)

var benchN = flag.Uint64("n", 1_000_000, "keys in the filters of the go test benchmarks")

var (
	setupOnce sync.Once
	// insertKeys are keys 0..n-1 in order, hitKeys the same keys shuffled,
	// absentKeys n keys that are never added, shuffled.
	insertKeys, hitKeys, absentKeys []string
)

func setup(b *testing.B) {
	setupOnce.Do(func() {
		n := *benchN
		rng := rand.New(rand.NewPCG(1, n))
		var ins, hit, abs keySet
		ins.fill(int(n), func(j int) uint64 { return uint64(j) })
		idx := sample(rng, n, int(n))
		hit.fill(len(idx), func(j int) uint64 { return uint64(idx[j]) })
		idx = sample(rng, n, int(n))
		abs.fill(len(idx), func(j int) uint64 { return n + uint64(idx[j]) })
		insertKeys, hitKeys, absentKeys = ins.keys, hit.keys, abs.keys
	})
	b.ResetTimer()
}

// loop calls fn on consecutive slices of keys, b.N keys in all, wrapping
// around; after each full pass it calls wrapped (if not nil) with the timer
// stopped.
func loop(b *testing.B, keys []string, fn func([]string), wrapped func()) {
	b.ResetTimer()
	pos := 0
	for done := 0; done < b.N; {
		m := min(b.N-done, len(keys)-pos)
		fn(keys[pos : pos+m])
		pos, done = pos+m, done+m
		if pos == len(keys) {
			pos = 0
			if wrapped != nil {
				b.StopTimer()
				wrapped()
				b.StartTimer()
			}
		}
	}
}

var benchRates = []float64{0.01, 0.001}

// forEach runs body for every library and rate (static filters once).
func forEach(b *testing.B, batchOnly bool, body func(b *testing.B, l *lib, p float64)) {
	setup(b)
	for _, l := range libs {
		if batchOnly && !l.batch {
			continue
		}
		for i, p := range benchRates {
			if l.static && i > 0 {
				continue
			}
			name := fmt.Sprintf("%s/p=%s", l.id, rateStr(p))
			if l.static {
				name = l.id + "/p=fixed"
			}
			b.Run(name, func(b *testing.B) { body(b, l, p) })
		}
	}
}

var fullCache = map[string]inst{}

// full returns a filter of l holding all insert keys, built once per
// library and rate and then reused (a benchmark body runs several times).
func full(b *testing.B, l *lib, p float64) inst {
	key := fmt.Sprint(l.id, p)
	if in, ok := fullCache[key]; ok {
		return in
	}
	in := build(b, l, p)
	fullCache[key] = in
	return in
}

func build(b *testing.B, l *lib, p float64) inst {
	in, err := l.make(*benchN, p)
	if err != nil {
		b.Fatal(err)
	}
	in.add(insertKeys)
	if err := in.finish(); err != nil {
		b.Fatal(err)
	}
	return in
}

var sinkCount int

// BenchmarkInsert adds keys one call each into a fresh filter (a new filter
// after every n keys). Static filters (and the ribbon, built at a rate)
// are skipped: they have no insert.
func BenchmarkInsert(b *testing.B) {
	forEach(b, false, func(b *testing.B, l *lib, p float64) {
		if l.static || l.built {
			b.Skip("static filter: see BenchmarkBuild")
		}
		in, _ := l.make(*benchN, p)
		loop(b, insertKeys, in.add, func() { in, _ = l.make(*benchN, p) })
	})
}

// BenchmarkBuild builds a static filter from all n keys (hashing included);
// ns/op is per key. A filter built at a rate (the ribbon) is built at each
// of benchRates.
func BenchmarkBuild(b *testing.B) {
	setup(b)
	for _, l := range libs {
		if !l.static && !l.built {
			continue
		}
		rates := []float64{0}
		if l.built {
			rates = benchRates
		}
		for _, p := range rates {
			name := l.id
			if l.built {
				name += "/p=" + rateStr(p)
			}
			b.Run(name, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					build(b, l, p)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(*benchN), "ns/key")
			})
		}
	}
}

// BenchmarkHit looks up added keys in random order.
func BenchmarkHit(b *testing.B) {
	forEach(b, false, func(b *testing.B, l *lib, p float64) {
		in := full(b, l, p)
		loop(b, hitKeys, func(k []string) { sinkCount += in.count(k) }, nil)
	})
}

// BenchmarkMiss looks up keys that were never added, in random order.
func BenchmarkMiss(b *testing.B) {
	forEach(b, false, func(b *testing.B, l *lib, p float64) {
		in := full(b, l, p)
		loop(b, absentKeys, func(k []string) { sinkCount += in.count(k) }, nil)
	})
}

// BenchmarkBatch looks up added keys with bloom.TestMany, batchSize keys a
// call (bloomkit only).
func BenchmarkBatch(b *testing.B) {
	forEach(b, true, func(b *testing.B, l *lib, p float64) {
		in := full(b, l, p)
		dst := make([]bool, 0, batchSize)
		loop(b, hitKeys, func(k []string) {
			var c int
			c, dst = in.countBatch(k, dst)
			sinkCount += c
		}, nil)
	})
}

// BenchmarkKeyGen is the cost of generating one key, which the report
// keeps out of every timing.
func BenchmarkKeyGen(b *testing.B) {
	var buf []byte
	for i := 0; i < b.N; i++ {
		buf = appendKey(buf[:0], uint64(i))
	}
	sinkCount += len(buf)
}

// BenchmarkHash is the hashing alone, over the hit keys: bloomkit hashes
// with the 128-bit seeded XXH3, blobloom and the xor filters are given the
// 64-bit XXH3 here.
func BenchmarkHash(b *testing.B) {
	setup(b)
	b.Run("xxh3.HashString", func(b *testing.B) {
		var acc uint64
		loop(b, hitKeys, func(keys []string) {
			for _, k := range keys {
				acc += xxh3.HashString(k)
			}
		}, nil)
		sinkCount += int(acc & 1)
	})
	b.Run("xxh3.HashString128Seed", func(b *testing.B) {
		var acc uint64
		loop(b, hitKeys, func(keys []string) {
			for _, k := range keys {
				h := xxh3.HashString128Seed(k, 0)
				acc += h.Lo ^ h.Hi
			}
		}, nil)
		sinkCount += int(acc & 1)
	})
}

// syncFilter is what the concurrency benchmarks need of Filter and Blocked.
type syncFilter interface {
	AddString(string)
	Sync() bloom.Sync
	TestString(string) bool
	Reset()
}

var syncKinds = []struct {
	name string
	make func(n uint64, p float64) (syncFilter, error)
}{
	{"Filter", func(n uint64, p float64) (syncFilter, error) { return bloom.New(n, p) }},
	{"Blocked", func(n uint64, p float64) (syncFilter, error) { return bloom.NewBlocked(n, p) }},
}

// addMany is bloom.AddMany for either layout behind a syncFilter.
func addMany(f syncFilter, keys []string) {
	switch f := f.(type) {
	case *bloom.Filter:
		bloom.AddMany(f, keys)
	case *bloom.Blocked:
		bloom.AddMany(f, keys)
	}
}

// parallel runs b.N keys through op, split evenly over g goroutines with
// GOMAXPROCS g, in rounds of at most n keys; before each round that would
// pass the end of the keys, reset runs with the timer stopped. ns/op is wall
// time per key, so with 2 goroutines perfect scaling halves it.
func parallel(b *testing.B, g int, reset func(), op func(w, i int)) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(g))
	n := len(insertKeys)
	b.ResetTimer()
	pos := 0
	var wg sync.WaitGroup
	for done := 0; done < b.N; {
		m := min(b.N-done, n-pos)
		for w := 0; w < g; w++ {
			lo, hi := pos+m*w/g, pos+m*(w+1)/g
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := lo; i < hi; i++ {
					op(w, i)
				}
			}()
		}
		wg.Wait()
		pos, done = pos+m, done+m
		if pos == n {
			pos = 0
			if reset != nil {
				b.StopTimer()
				reset()
				b.StartTimer()
			}
		}
	}
}

// BenchmarkConcurrent: Sync().AddString of new keys into an empty filter,
// TestString of added keys (random order) on a full one, and a mix (each op
// one Sync().AddString of a new key and one TestString of a random added key)
// at 1 and 2 goroutines; p = 1%.
func BenchmarkConcurrent(b *testing.B) {
	setup(b)
	n := *benchN
	for _, kind := range syncKinds {
		for _, g := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/Sync().AddString/goroutines=%d", kind.name, g), func(b *testing.B) {
				f, _ := kind.make(n, 0.01)
				parallel(b, g, f.Reset, func(_, i int) { f.Sync().AddString(insertKeys[i]) })
			})
			b.Run(fmt.Sprintf("%s/TestString/goroutines=%d", kind.name, g), func(b *testing.B) {
				f, _ := kind.make(n, 0.01)
				addMany(f, insertKeys)
				var hits [2]struct {
					c int
					_ [56]byte // a cache line per goroutine
				}
				parallel(b, g, nil, func(w, i int) {
					if f.Sync().TestString(hitKeys[i]) {
						hits[w].c++
					}
				})
				sinkCount += hits[0].c + hits[1].c
			})
			b.Run(fmt.Sprintf("%s/Mixed/goroutines=%d", kind.name, g), func(b *testing.B) {
				// Half of the keys are added first; each op adds one of the
				// other half and tests a random key of the first half.
				f, _ := kind.make(n, 0.01)
				half := insertKeys[:len(insertKeys)/2]
				reset := func() { f.Reset(); addMany(f, half) }
				reset()
				var sink [2]struct {
					c int
					_ [56]byte
				}
				parallel(b, g, reset, func(w, i int) {
					f.Sync().AddString(insertKeys[i])
					if f.Sync().TestString(hitKeys[i]) {
						sink[w].c++
					}
				})
				sinkCount += sink[0].c + sink[1].c
			})
		}
	}
}

// BenchmarkAddVsSync compares AddString, Sync().AddString and bloom.AddMany
// of new keys into an empty filter, one goroutine; p = 1%.
func BenchmarkAddVsSync(b *testing.B) {
	setup(b)
	n := *benchN
	for _, kind := range syncKinds {
		b.Run(kind.name+"/AddString", func(b *testing.B) {
			f, _ := kind.make(n, 0.01)
			loop(b, insertKeys, func(keys []string) {
				for _, k := range keys {
					f.AddString(k)
				}
			}, f.Reset)
		})
		b.Run(kind.name+"/Sync().AddString", func(b *testing.B) {
			f, _ := kind.make(n, 0.01)
			loop(b, insertKeys, func(keys []string) {
				for _, k := range keys {
					f.Sync().AddString(k)
				}
			}, f.Reset)
		})
		b.Run(kind.name+"/AddMany", func(b *testing.B) {
			f, _ := kind.make(n, 0.01)
			loop(b, insertKeys, func(k []string) { addMany(f, k) }, f.Reset)
		})
	}
}

// TestKeys checks the key format, uniqueness of a range and that added and
// absent key sets are disjoint by construction.
func TestKeys(t *testing.T) {
	if got, want := keyString(123456), "https://www.site23465.example.com/path/to/article-123456.html"; got != want {
		t.Fatalf("key 123456 = %q, want %q", got, want)
	}
	var ks keySet
	ks.fill(200_000, func(j int) uint64 { return uint64(j) })
	seen := map[string]bool{}
	for i, k := range ks.keys {
		if seen[k] {
			t.Fatalf("duplicate key %q", k)
		}
		seen[k] = true
		if k != keyString(uint64(i)) || len(k) != keyLen(uint64(i)) {
			t.Fatalf("key %d = %q, want %q", i, k, keyString(uint64(i)))
		}
	}
	// Refilling in place with other keys must not change lengths wrongly.
	ks.fill(1000, func(j int) uint64 { return 1e9 + uint64(j) })
	for i, k := range ks.keys {
		if k != keyString(1e9+uint64(i)) {
			t.Fatalf("refilled key %d = %q", i, k)
		}
	}
}

// TestSample checks that sample returns distinct in-range indices.
func TestSample(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, h := range []int{10, 1000, 5000} {
		s := sample(rng, 1000, h)
		if len(s) != min(h, 1000) {
			t.Fatalf("len %d", len(s))
		}
		seen := map[uint32]bool{}
		for _, v := range s {
			if v >= 1000 || seen[v] {
				t.Fatalf("bad or repeated index %d", v)
			}
			seen[v] = true
		}
	}
}

// TestLibraries checks every adapter: no false negatives, a plausible rate.
func TestLibraries(t *testing.T) {
	const n = 20000
	var ins, abs keySet
	ins.fill(n, func(j int) uint64 { return uint64(j) })
	abs.fill(n*10, func(j int) uint64 { return n + uint64(j) })
	for _, l := range libs {
		in, err := l.make(n, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		in.add(ins.keys)
		if err := in.finish(); err != nil {
			t.Fatal(err)
		}
		if c := in.count(ins.keys); c != n {
			t.Errorf("%s: %d false negatives", l.name, n-c)
		}
		if l.batch {
			if c, _ := in.countBatch(ins.keys, nil); c != n {
				t.Errorf("%s: batch: %d false negatives", l.name, n-c)
			}
		}
		if fpr := float64(in.count(abs.keys)) / float64(len(abs.keys)); fpr > 0.02 {
			t.Errorf("%s: FPR %.4f", l.name, fpr)
		}
	}
}
