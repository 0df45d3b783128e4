package main

// go test benchmarks of bloomkit's cuckoo filter against
// github.com/seiflotfy/cuckoofilter and github.com/linvon/cuckoo-filter, one
// key an op, at 1M keys by default (-cuckoo-n for another size), so that
// benchstat can compare runs:
//
//	go test -run '^$' -bench 'Cuckoo' -count 10 | tee new.txt
//
// cmd/cuckoocmp runs the same comparison end to end (with the measured
// false-positive rate and the load reached) and writes CUCKOO.md.

import (
	"flag"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/bloomkit/bloomkit/cuckoo"
	linvon "github.com/linvon/cuckoo-filter"
	seiflotfy "github.com/seiflotfy/cuckoofilter"
)

var cuckooN = flag.Uint64("cuckoo-n", 1_000_000, "keys in the cuckoo filters of the go test benchmarks")

// cuckooSet is the filter interface the cuckoo benchmarks use.
type cuckooSet interface {
	add(k []byte) bool
	test(k []byte) bool
	del(k []byte) bool
}

type cuckooLib struct {
	name string
	make func(n uint64) cuckooSet
}

var cuckooLibs = []cuckooLib{
	{"bloomkit", func(n uint64) cuckooSet {
		f, err := cuckoo.New(n)
		if err != nil {
			panic(err)
		}
		return cuckooBK{f}
	}},
	{"seiflotfy", func(n uint64) cuckooSet { return cuckooSeif{seiflotfy.NewFilter(uint(n))} }},
	{"linvon", func(n uint64) cuckooSet {
		return cuckooLinvon{linvon.NewFilter(4, 8, uint(n), linvon.TableTypeSingle)}
	}},
}

type cuckooBK struct{ f *cuckoo.Filter }

func (c cuckooBK) add(k []byte) bool  { return c.f.Add(k) == nil }
func (c cuckooBK) test(k []byte) bool { return c.f.Test(k) }
func (c cuckooBK) del(k []byte) bool  { return c.f.Delete(k) }

type cuckooSeif struct{ f *seiflotfy.Filter }

func (c cuckooSeif) add(k []byte) bool  { return c.f.Insert(k) }
func (c cuckooSeif) test(k []byte) bool { return c.f.Lookup(k) }
func (c cuckooSeif) del(k []byte) bool  { return c.f.Delete(k) }

type cuckooLinvon struct{ f *linvon.Filter }

func (c cuckooLinvon) add(k []byte) bool  { return c.f.Add(k) }
func (c cuckooLinvon) test(k []byte) bool { return c.f.Contain(k) }
func (c cuckooLinvon) del(k []byte) bool  { return c.f.Delete(k) }

var (
	cuckooOnce sync.Once
	// cuckooIns are keys 0..n-1 in order, cuckooHit the same shuffled,
	// cuckooAbs n keys never added, shuffled.
	cuckooIns, cuckooHit, cuckooAbs [][]byte
)

func cuckooKeys(idx []uint64) [][]byte {
	arena := make([]byte, 0, 64*len(idx))
	out := make([][]byte, len(idx))
	for j, i := range idx {
		off := len(arena)
		arena = append(arena, "https://www.site"...)
		arena = strconv.AppendUint(arena, i%99991, 10)
		arena = append(arena, ".example.com/path/to/article-"...)
		arena = strconv.AppendUint(arena, i, 10)
		arena = append(arena, ".html"...)
		out[j] = arena[off:len(arena):len(arena)]
	}
	return out
}

func cuckooSetup(b *testing.B) {
	cuckooOnce.Do(func() {
		n := *cuckooN
		idx := make([]uint64, n)
		for i := range idx {
			idx[i] = uint64(i)
		}
		cuckooIns = cuckooKeys(idx)
		rng := rand.New(rand.NewPCG(2, n))
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		cuckooHit = cuckooKeys(idx)
		for i := range idx {
			idx[i] += n
		}
		cuckooAbs = cuckooKeys(idx)
	})
	b.ResetTimer()
}

// cuckooLoop calls op on b.N keys, cycling through keys; each time it
// starts a pass it calls reset (if not nil) with the timer stopped.
func cuckooLoop(b *testing.B, keys [][]byte, reset func(), op func(k []byte)) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := i % len(keys)
		if j == 0 && reset != nil && i > 0 {
			b.StopTimer()
			reset()
			b.StartTimer()
		}
		op(keys[j])
	}
}

func cuckooFilled(l cuckooLib) cuckooSet {
	f := l.make(*cuckooN)
	for _, k := range cuckooIns {
		f.add(k)
	}
	return f
}

// BenchmarkCuckooInsert fills a filter sized for n with the n keys,
// starting a new filter every n inserts.
func BenchmarkCuckooInsert(b *testing.B) {
	for _, l := range cuckooLibs {
		b.Run(l.name, func(b *testing.B) {
			cuckooSetup(b)
			f := l.make(*cuckooN)
			cuckooLoop(b, cuckooIns, func() { f = l.make(*cuckooN) }, func(k []byte) { f.add(k) })
		})
	}
}

// BenchmarkCuckooHit tests keys that were added, in random order.
func BenchmarkCuckooHit(b *testing.B) {
	for _, l := range cuckooLibs {
		b.Run(l.name, func(b *testing.B) {
			cuckooSetup(b)
			f := cuckooFilled(l)
			cuckooLoop(b, cuckooHit, nil, func(k []byte) {
				if !f.test(k) {
					b.Fatal("false negative")
				}
			})
		})
	}
}

// BenchmarkCuckooMiss tests keys that were never added.
func BenchmarkCuckooMiss(b *testing.B) {
	for _, l := range cuckooLibs {
		b.Run(l.name, func(b *testing.B) {
			cuckooSetup(b)
			f := cuckooFilled(l)
			fp := 0
			cuckooLoop(b, cuckooAbs, nil, func(k []byte) {
				if f.test(k) {
					fp++
				}
			})
			b.ReportMetric(float64(fp)/float64(b.N), "fp/op")
		})
	}
}

// BenchmarkCuckooDelete deletes the added keys in random order, refilling
// the filter after every n deletions. Deletes of added keys that fail (a
// library that silently dropped a key on insert) are reported as the
// failed-deletes/op metric rather than stopping the run.
func BenchmarkCuckooDelete(b *testing.B) {
	for _, l := range cuckooLibs {
		b.Run(l.name, func(b *testing.B) {
			cuckooSetup(b)
			f := cuckooFilled(l)
			failed := 0
			cuckooLoop(b, cuckooHit, func() { f = cuckooFilled(l) }, func(k []byte) {
				if !f.del(k) {
					failed++
				}
			})
			b.ReportMetric(float64(failed)/float64(b.N), "failed-deletes/op")
		})
	}
}

// TestCuckooLibraries checks every wrapped library on a small set: what is
// added tests present and deletes, what is deleted is gone.
func TestCuckooLibraries(t *testing.T) {
	ks := cuckooKeys([]uint64{1, 2, 3, 4, 5})
	for _, l := range cuckooLibs {
		f := l.make(1000)
		for _, k := range ks {
			if !f.add(k) {
				t.Fatalf("%s: add failed", l.name)
			}
		}
		for _, k := range ks {
			if !f.test(k) || !f.del(k) {
				t.Fatalf("%s: %s not found", l.name, k)
			}
		}
		if f.test(ks[0]) && f.test(ks[1]) && f.test(ks[2]) {
			t.Fatalf("%s: deleted keys still present", l.name)
		}
	}
}
