package main

import (
	"math/bits"
	"math/rand/v2"
	"time"
	"unsafe"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"
)

// The machine's random-access limits, measured in the same run as the
// filters so that each filter's time can be read against them. They are
// plain Go loops that do nothing but the memory access (and, for the
// lookup references, the hash), over arrays the size of the filter.

// limits holds the references measured at one n.
type limits struct {
	bytes    uint64  // size of the arrays (bloomkit's classic filter at the first p)
	demandNs float64 // independent random 8-byte loads, ordinary pages (wall clock)
	pf       ref     // independent random cache lines, prefetched 128 ahead, huge pages
	lat      ref     // dependent random loads (one at a time), huge pages
	hash128  ref     // XXH3-128 (bloomkit's hash) of one hit key
	hash64   ref     // XXH3-64 (blobloom's, via xxh3.HashString) of one hit key
	// oneLine128[i] and oneLine64[i]: a single-key lookup that touches one
	// random cache line and nothing else (hash the key, load one word the
	// hash picks, in an array the size of bloomkit's blocked filter at the
	// i-th p): the least any one-line-per-key filter with that hash costs
	// in a loop of single-key calls.
	oneLine128, oneLine64 []ref
	// pipe128[i]: a batch lookup that touches one random cache line and
	// nothing else, in an array the size of bloomkit's blocked filter at
	// the i-th p (huge pages): hash the key with XXH3-128, prefetch the line
	// it picks, load one word of the line prefetched 32 keys earlier. What
	// any blocked batch lookup with this file format's hash must do: the
	// batch limit of goal (c).
	pipe128 []ref
}

// ref is a reference time in ns per operation: the median wall-clock and
// thread-CPU time.
type ref struct{ wall, cpu float64 }

// hugeWords returns n words backed by transparent huge pages where the
// kernel allows it (madvise mode), as bloomkit backs its large filters, with
// every page faulted in.
func hugeWords(n uint64) []uint64 {
	const huge = 2 << 20
	w := make([]uint64, n+huge/8)
	start := uintptr(unsafe.Pointer(&w[0]))
	off := (huge - start%huge) % huge / 8
	w = w[off : off+uintptr(n) : off+uintptr(n)]
	if n*8 >= huge {
		_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), n/(huge/8)*huge), unix.MADV_HUGEPAGE)
	}
	for i := range w {
		w[i] = uint64(i)
	}
	return w
}

// xorshift is the index generator of the load loops.
func xorshift(x uint64) uint64 {
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	return x
}

// measureLimits measures the references at n over the hit keys, each the
// median of reps repetitions.
func measureLimits(n uint64, rates []float64, hits []string, reps int) limits {
	l := limits{bytes: filterBytes(n, rates[0])}
	words := max(l.bytes/8, 1)
	const loads = 5_000_000
	// med times f (which returns how many operations it did) reps times
	// and returns the median wall-clock and thread-CPU ns per operation.
	med := func(f func() uint64) ref {
		var wall, cpu []float64
		for r := 0; r < reps; r++ {
			t := now()
			ops := f()
			dw, dc := t.since()
			wall, cpu = append(wall, nsPer(dw, ops)), append(cpu, nsPer(dc, ops))
		}
		return ref{median(wall), median(cpu)}
	}
	l.demandNs = memFloor(l.bytes, loads, reps)

	w := hugeWords(words)
	idx := make([]uint64, loads+128)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range idx {
		x = xorshift(x)
		idx[i], _ = bits.Mul64(x, words)
	}
	l.pf = med(func() uint64 {
		var acc uint64
		for i := 0; i < loads; i++ {
			prefetch(&w[idx[i+128]])
			acc += w[idx[i]]
		}
		floorSink += acc
		return uint64(loads)
	})
	idx = nil

	// A random cyclic permutation (Sattolo), followed for chase steps.
	perm := w
	for i := range perm {
		perm[i] = uint64(i)
	}
	rng := rand.New(rand.NewPCG(1, n))
	for i := len(perm) - 1; i > 0; i-- {
		j := rng.IntN(i)
		perm[i], perm[j] = perm[j], perm[i]
	}
	const chase = 1_000_000
	l.lat = med(func() uint64 {
		j := uint64(0)
		for i := 0; i < chase; i++ {
			j = perm[j]
		}
		floorSink += j
		return uint64(chase)
	})
	w, perm = nil, nil

	l.hash128 = med(func() uint64 {
		var acc uint64
		for _, k := range hits {
			h := xxh3.HashString128(k)
			acc += h.Lo ^ h.Hi
		}
		floorSink += acc
		return uint64(len(hits))
	})
	l.hash64 = med(func() uint64 {
		var acc uint64
		for _, k := range hits {
			acc += xxh3.HashString(k)
		}
		floorSink += acc
		return uint64(len(hits))
	})

	for _, p := range rates {
		lines := max(bloom.EstimateBlocked(n, p).M/512, 1)
		w := hugeWords(lines * 8)
		l.oneLine128 = append(l.oneLine128, med(func() uint64 {
			var acc uint64
			for _, k := range hits {
				h := xxh3.HashString128(k)
				b, _ := bits.Mul64(h.Hi, lines)
				acc += w[b*8] >> (h.Lo & 63)
			}
			floorSink += acc
			return uint64(len(hits))
		}))
		l.pipe128 = append(l.pipe128, med(func() uint64 {
			var ring [64]uint64
			var acc uint64
			for i, k := range hits {
				h := xxh3.HashString128(k)
				b, _ := bits.Mul64(h.Hi, lines)
				prefetch(&w[b*8])
				ring[i%64] = b*8 + h.Lo&7
				if i >= 32 {
					acc += w[ring[(i-32)%64]]
				}
			}
			floorSink += acc
			return uint64(len(hits))
		}))
		l.oneLine64 = append(l.oneLine64, med(func() uint64 {
			var acc uint64
			for _, k := range hits {
				h := xxh3.HashString(k)
				b, _ := bits.Mul64(h, lines)
				acc += w[b*8] >> (h & 63)
			}
			floorSink += acc
			return uint64(len(hits))
		}))
	}
	return l
}

// memFloor measures a reference cost of memory at a filter's size: the time
// per independent random 8-byte load from an array of that many bytes, with
// the index computed by a xorshift generator and nothing else in the loop.
// It is not a lower bound for a lookup: code that prefetches can keep more
// misses in flight than these demand loads. It returns the median over
// reps, in ns per load.
func memFloor(bytes uint64, loads, reps int) float64 {
	w := make([]uint64, max(bytes/8, 1))
	for i := range w {
		w[i] = uint64(i) // fault every page in before timing
	}
	n := uint64(len(w))
	var vals []float64
	for r := 0; r < reps; r++ {
		x := uint64(0x9e3779b97f4a7c15) + uint64(r)
		var acc uint64
		t := time.Now()
		for i := 0; i < loads; i++ {
			x = xorshift(x)
			j, _ := bits.Mul64(x, n)
			acc += w[j]
		}
		vals = append(vals, nsPer(time.Since(t), uint64(loads)))
		floorSink += acc
	}
	return median(vals)
}

var floorSink uint64

// filterBytes is the size of a bloomkit classic filter for n keys at rate p.
func filterBytes(n uint64, p float64) uint64 { return (bloom.OptimalM(n, p) + 63) / 64 * 8 }
