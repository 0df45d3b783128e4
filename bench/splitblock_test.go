//go:build parquet

package main

// BenchmarkSplitBlock compares bloom.SplitBlock with parquet-go's
// SplitBlockFilter (whose Insert and Check are amd64 assembly, and whose
// InsertBulk is vectorised), both holding the same n keys in bitsets of the
// same size: EstimateSplitBlock(n, 1%), 2 MiB at the default n = 1M. One
// key an op:
//
//	key/…   the key's bytes, hashed with XXH64 (parquet-go's own XXH64 for
//	        its filter, over the string's bytes without a copy)
//	hash/…  the 64-bit hash, precomputed, as Parquet engines hold it
//	many/…  bloom.AddMany and TestMany; parquet-go's InsertBulk of
//	        precomputed hashes (it has no batch check)
//
// add inserts into a filter that is cleared after every n keys; hit tests
// added keys, miss absent ones, in shuffled order.
//
//	go test -run '^$' -bench SplitBlock -benchtime 200000x -count 3

import (
	"testing"
	"unsafe"

	pqbloom "github.com/parquet-go/parquet-go/bloom"

	"github.com/bloomkit/bloomkit/bloom"
)

func strBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

func hashesOf(keys []string) []uint64 {
	h := make([]uint64, len(keys))
	for i, k := range keys {
		h[i] = bloom.SplitBlockHashString(k)
	}
	return h
}

// hashLoop is loop over precomputed hashes.
func hashLoop(b *testing.B, hs []uint64, fn func([]uint64), wrapped func()) {
	b.ResetTimer()
	pos := 0
	for done := 0; done < b.N; {
		m := min(b.N-done, len(hs)-pos)
		fn(hs[pos : pos+m])
		pos, done = pos+m, done+m
		if pos == len(hs) {
			pos = 0
			if wrapped != nil {
				b.StopTimer()
				wrapped()
				b.StartTimer()
			}
		}
	}
}

func BenchmarkSplitBlock(b *testing.B) {
	setup(b)
	p := bloom.EstimateSplitBlock(*benchN, 0.01)
	newOurs := func() *bloom.SplitBlock {
		f, err := bloom.NewSplitBlockFromParams(p)
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	newTheirs := func() pqbloom.SplitBlockFilter { return make(pqbloom.SplitBlockFilter, p.M/bloom.SplitBlockBits) }
	ours, theirs := newOurs(), newTheirs()
	for _, k := range insertKeys {
		ours.AddString(k)
		theirs.Insert(pqbloom.XXH64{}.Sum64(strBytes(k)))
	}
	hitHashes, missHashes, insertHashes := hashesOf(hitKeys), hashesOf(absentKeys), hashesOf(insertKeys)
	sink := 0
	b.Run("key/add/bloomkit", func(b *testing.B) {
		f := newOurs()
		loop(b, insertKeys, func(ks []string) {
			for _, k := range ks {
				f.AddString(k)
			}
		}, f.Reset)
	})
	b.Run("key/add/parquet-go", func(b *testing.B) {
		f := newTheirs()
		loop(b, insertKeys, func(ks []string) {
			for _, k := range ks {
				f.Insert(pqbloom.XXH64{}.Sum64(strBytes(k)))
			}
		}, f.Reset)
	})
	for _, c := range []struct {
		name string
		keys []string
	}{{"hit", hitKeys}, {"miss", absentKeys}} {
		b.Run("key/"+c.name+"/bloomkit", func(b *testing.B) {
			loop(b, c.keys, func(ks []string) {
				for _, k := range ks {
					if ours.TestString(k) {
						sink++
					}
				}
			}, nil)
		})
		b.Run("key/"+c.name+"/parquet-go", func(b *testing.B) {
			loop(b, c.keys, func(ks []string) {
				for _, k := range ks {
					if theirs.Check(pqbloom.XXH64{}.Sum64(strBytes(k))) {
						sink++
					}
				}
			}, nil)
		})
	}
	b.Run("hash/add/bloomkit", func(b *testing.B) {
		f := newOurs()
		hashLoop(b, insertHashes, func(hs []uint64) {
			for _, h := range hs {
				f.AddHash(h)
			}
		}, f.Reset)
	})
	b.Run("hash/add/parquet-go", func(b *testing.B) {
		f := newTheirs()
		hashLoop(b, insertHashes, func(hs []uint64) {
			for _, h := range hs {
				f.Insert(h)
			}
		}, f.Reset)
	})
	for _, c := range []struct {
		name string
		hs   []uint64
	}{{"hit", hitHashes}, {"miss", missHashes}} {
		b.Run("hash/"+c.name+"/bloomkit", func(b *testing.B) {
			hashLoop(b, c.hs, func(hs []uint64) {
				for _, h := range hs {
					if ours.TestHash(h) {
						sink++
					}
				}
			}, nil)
		})
		b.Run("hash/"+c.name+"/parquet-go", func(b *testing.B) {
			hashLoop(b, c.hs, func(hs []uint64) {
				for _, h := range hs {
					if theirs.Check(h) {
						sink++
					}
				}
			}, nil)
		})
	}
	b.Run("many/add/bloomkit", func(b *testing.B) {
		f := newOurs()
		loop(b, insertKeys, func(ks []string) { bloom.AddMany(f, ks) }, f.Reset)
	})
	b.Run("many/add/parquet-go", func(b *testing.B) {
		f := newTheirs()
		hashLoop(b, insertHashes, f.InsertBulk, f.Reset)
	})
	dst := make([]bool, 0, len(hitKeys))
	for _, c := range []struct {
		name string
		keys []string
	}{{"hit", hitKeys}, {"miss", absentKeys}} {
		b.Run("many/"+c.name+"/bloomkit", func(b *testing.B) {
			loop(b, c.keys, func(ks []string) { dst = bloom.TestMany(ours, ks, dst[:0]) }, nil)
		})
	}
	sinkCount += sink
}
