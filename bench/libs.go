package main

import (
	"github.com/FastFilter/xorfilter"
	bab "github.com/bits-and-blooms/bloom/v3"
	"github.com/bloomkit/bloomkit/bloom"
	"github.com/greatroar/blobloom"
	"github.com/zeebo/xxh3"
)

// An inst is one filter under test. Every method loops over a slice of keys
// itself, so that the loop calls the library directly (no interface call
// per key) and every library is timed the same way: a string key in, a bool
// out, hashing included.
type inst interface {
	// add inserts keys (for a static filter: hashes them for the build).
	add(keys []string)
	// finish completes the insert phase (builds a static filter).
	finish() error
	// count returns how many of keys test present, one call per key.
	count(keys []string) int
	// countBatch is count through the library's batch API, batchSize keys
	// a call; dst is scratch space. Only for libraries with batch set.
	countBatch(keys []string, dst []bool) (int, []bool)
	// nominalBytes is the size of the filter's bit or fingerprint array as
	// the library reports it (a cross-check of the measured heap size).
	nominalBytes() uint64
	// probes is the number of hash probes per key, 0 if not applicable.
	probes() int
}

type lib struct {
	id     string // for -libs
	name   string // in the table
	batch  bool   // has a batch lookup API
	static bool   // built once from the whole set; its rate is fixed
	built  bool   // built once from the whole set at the rate asked for
	big    bool   // also run at the big n
	make   func(n uint64, p float64) (inst, error)
}

var libs = []*lib{
	{id: "filter", name: "bloomkit Filter", batch: true, big: true, make: newBKFilter},
	{id: "blocked", name: "bloomkit Blocked", batch: true, big: true, make: newBKBlocked},
	{id: "bab", name: "bits-and-blooms/bloom/v3", make: newBAB},
	{id: "blobloom", name: "greatroar/blobloom", big: true, make: newBlobloom},
	{id: "xor8", name: "FastFilter Xor8", static: true, make: newXor8},
	{id: "fuse8", name: "FastFilter BinaryFuse8", static: true, make: newFuse8},
}

// batchSize is how many keys one bloom.TestMany call gets.
var batchSize = 1024

func countTrue(dst []bool) int {
	c := 0
	for _, v := range dst {
		if v {
			c++
		}
	}
	return c
}

// bloomkit classic

type bkFilter struct{ f *bloom.Filter }

func newBKFilter(n uint64, p float64) (inst, error) {
	f, err := bloom.New(n, p)
	return &bkFilter{f}, err
}

func (b *bkFilter) add(keys []string) {
	f := b.f
	for _, k := range keys {
		f.AddString(k)
	}
}

func (b *bkFilter) finish() error { return nil }

func (b *bkFilter) count(keys []string) int {
	f, c := b.f, 0
	for _, k := range keys {
		if f.TestString(k) {
			c++
		}
	}
	return c
}

func (b *bkFilter) countBatch(keys []string, dst []bool) (int, []bool) {
	f, c := b.f, 0
	for len(keys) > 0 {
		m := min(len(keys), batchSize)
		dst = bloom.TestMany(f, keys[:m], dst[:0])
		c += countTrue(dst)
		keys = keys[m:]
	}
	return c, dst
}

func (b *bkFilter) nominalBytes() uint64 { return (b.f.Params().M + 63) / 64 * 8 }
func (b *bkFilter) probes() int          { return int(b.f.Params().K) }

// bloomkit blocked

type bkBlocked struct{ f *bloom.Blocked }

func newBKBlocked(n uint64, p float64) (inst, error) {
	f, err := bloom.NewBlocked(n, p)
	return &bkBlocked{f}, err
}

func (b *bkBlocked) add(keys []string) {
	f := b.f
	for _, k := range keys {
		f.AddString(k)
	}
}

func (b *bkBlocked) finish() error { return nil }

func (b *bkBlocked) count(keys []string) int {
	f, c := b.f, 0
	for _, k := range keys {
		if f.TestString(k) {
			c++
		}
	}
	return c
}

func (b *bkBlocked) countBatch(keys []string, dst []bool) (int, []bool) {
	f, c := b.f, 0
	for len(keys) > 0 {
		m := min(len(keys), batchSize)
		dst = bloom.TestMany(f, keys[:m], dst[:0])
		c += countTrue(dst)
		keys = keys[m:]
	}
	return c, dst
}

func (b *bkBlocked) nominalBytes() uint64 { return b.f.Params().M / 8 }
func (b *bkBlocked) probes() int          { return int(b.f.Params().K) }

// bits-and-blooms/bloom/v3 (murmur3, classic)

type babFilter struct{ f *bab.BloomFilter }

func newBAB(n uint64, p float64) (inst, error) {
	return &babFilter{bab.NewWithEstimates(uint(n), p)}, nil
}

func (b *babFilter) add(keys []string) {
	f := b.f
	for _, k := range keys {
		f.AddString(k)
	}
}

func (b *babFilter) finish() error { return nil }

func (b *babFilter) count(keys []string) int {
	f, c := b.f, 0
	for _, k := range keys {
		if f.TestString(k) {
			c++
		}
	}
	return c
}

func (b *babFilter) countBatch([]string, []bool) (int, []bool) { panic("no batch API") }
func (b *babFilter) nominalBytes() uint64                      { return uint64(b.f.Cap()+63) / 64 * 8 }
func (b *babFilter) probes() int                               { return int(b.f.K()) }

// greatroar/blobloom (blocked; takes a 64-bit hash: xxh3.HashString)

type blobFilter struct {
	f *blobloom.Filter
	k int
}

func newBlobloom(n uint64, p float64) (inst, error) {
	cfg := blobloom.Config{Capacity: n, FPRate: p}
	_, k := blobloom.Optimize(cfg)
	return &blobFilter{blobloom.NewOptimized(cfg), k}, nil
}

func (b *blobFilter) add(keys []string) {
	f := b.f
	for _, k := range keys {
		f.Add(xxh3.HashString(k))
	}
}

func (b *blobFilter) finish() error { return nil }

func (b *blobFilter) count(keys []string) int {
	f, c := b.f, 0
	for _, k := range keys {
		if f.Has(xxh3.HashString(k)) {
			c++
		}
	}
	return c
}

func (b *blobFilter) countBatch([]string, []bool) (int, []bool) { panic("no batch API") }
func (b *blobFilter) nominalBytes() uint64                      { return b.f.NumBits() / 8 }
func (b *blobFilter) probes() int                               { return b.k }

// FastFilter xor and binary fuse filters: static, built from the keys'
// xxh3.HashString values; queried with the hash. Their rate is fixed by the
// 8-bit fingerprint (about 1/256), whatever p is asked for.

type xorInst struct {
	hashes []uint64
	fuse   bool
	x8     *xorfilter.Xor8
	bf8    *xorfilter.BinaryFuse8
}

func newXor8(n uint64, _ float64) (inst, error) {
	return &xorInst{hashes: make([]uint64, 0, n)}, nil
}

func newFuse8(n uint64, _ float64) (inst, error) {
	return &xorInst{hashes: make([]uint64, 0, n), fuse: true}, nil
}

func (x *xorInst) add(keys []string) {
	h := x.hashes
	for _, k := range keys {
		h = append(h, xxh3.HashString(k))
	}
	x.hashes = h
}

func (x *xorInst) finish() (err error) {
	if x.fuse {
		x.bf8, err = xorfilter.PopulateBinaryFuse8(x.hashes)
	} else {
		x.x8, err = xorfilter.Populate(x.hashes)
	}
	x.hashes = nil
	return err
}

func (x *xorInst) count(keys []string) int {
	c := 0
	if x.fuse {
		f := x.bf8
		for _, k := range keys {
			if f.Contains(xxh3.HashString(k)) {
				c++
			}
		}
		return c
	}
	f := x.x8
	for _, k := range keys {
		if f.Contains(xxh3.HashString(k)) {
			c++
		}
	}
	return c
}

func (x *xorInst) countBatch([]string, []bool) (int, []bool) { panic("no batch API") }

func (x *xorInst) nominalBytes() uint64 {
	if x.fuse {
		return uint64(len(x.bf8.Fingerprints))
	}
	return uint64(len(x.x8.Fingerprints))
}

func (x *xorInst) probes() int { return 3 }
