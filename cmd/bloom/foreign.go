package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/bloomkit/bloomkit/bitsandblooms"
	"github.com/bloomkit/bloomkit/bloom"
	"github.com/bloomkit/bloomkit/frozen"
	"github.com/bloomkit/bloomkit/guava"
	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/bloomkit/bloomkit/redisbloom"
)

// This file holds the filter files that are not bloomkit's own format:
// Guava's writeTo, bits-and-blooms' WriteTo and RedisBloom dump files
// (saved SCANDUMP streams), which info and test read by their first bytes,
// and the frozen sets (binary fuse and ribbon filters) and foreign
// formats build writes (--static, --format). docs/formats-interop.md describes the formats.

// Names of the foreign file types, as info reports them.
const (
	typeGuava         = "guava"
	typeBitsAndBlooms = "bitsandblooms"
	typeRBBloom       = "redisbloom-bf"
	typeRBCuckoo      = "redisbloom-cf"
)

// formatNames are the values of build's --format.
var formatNames = []string{"bloomkit", typeGuava, typeBitsAndBlooms}

// foreignKind returns the kind build makes for --format name (a classic
// Bloom filter with that library's hashing and layout).
func foreignKind(name string) (*kind, error) {
	switch name {
	case typeGuava:
		return &kind{name: typeGuava, make: makeGuava,
			bits: func(n uint64, p float64) uint64 { m, _ := guava.Estimate(max(n, 1), p); return m },
			rate: classicRate}, nil
	case typeBitsAndBlooms:
		return &kind{name: typeBitsAndBlooms, make: makeBitsAndBlooms,
			bits: func(n uint64, p float64) uint64 { m, _ := bitsandblooms.Estimate(max(n, 1), p); return m },
			rate: classicRate}, nil
	}
	return nil, fmt.Errorf("unknown --format %q: want one of %s", name, strings.Join(formatNames, ", "))
}

func makeGuava(n uint64, p float64, seed uint64) (*newFilter, error) {
	if seed != 0 {
		return nil, fmt.Errorf("--seed: Guava's format has no seed (its hash is MurmurHash3 with seed 0)")
	}
	f, err := guava.New(n, p)
	if err != nil {
		return nil, err
	}
	return classicForeign(f, f.M(), uint32(f.K())), nil
}

func makeBitsAndBlooms(n uint64, p float64, seed uint64) (*newFilter, error) {
	if seed != 0 {
		return nil, fmt.Errorf("--seed: the bits-and-blooms format has no seed")
	}
	f, err := bitsandblooms.NewWithEstimates(max(n, 1), p)
	if err != nil {
		return nil, err
	}
	return classicForeign(f, f.M(), uint32(f.K())), nil
}

// classicForeign wraps a classic Bloom filter of another library's format
// with m bits and k probes.
func classicForeign(f interface {
	Add([]byte)
	io.WriterTo
	filterStats
}, m uint64, k uint32) *newFilter {
	return &newFilter{
		add:      func(key []byte) error { f.Add(key); return nil },
		addMany:  func(keys [][]byte) error { addEach(f.Add, keys); return nil },
		WriterTo: f, stats: f, params: bloom.Params{M: m, K: k},
	}
}

// staticFilter is the newFilter of a filter built offline: its builder
// gathers the keys, and the filter is built when it is written.
func staticFilter[F io.WriterTo](add func([]byte), build func() (F, error)) *newFilter {
	return &newFilter{
		add:     func(k []byte) error { add(k); return nil },
		addMany: func(k [][]byte) error { addEach(add, k); return nil },
		WriterTo: writerFunc(func(w io.Writer) (int64, error) {
			f, err := build()
			if err != nil {
				return 0, err
			}
			return f.WriteTo(w)
		}),
		grows: true,
	}
}

// frozenKind is build --static: a binary fuse filter of bits-bit
// fingerprints. Its rate is fixed by the fingerprint size, not -p.
func frozenKind(bits int) *kind {
	return &kind{name: fmt.Sprintf("frozen (%d-bit)", bits),
		make: func(n uint64, p float64, seed uint64) (*newFilter, error) {
			b, err := frozen.NewBuilder(bits, seed)
			if err != nil {
				return nil, err
			}
			return staticFilter(b.Add, b.Build), nil
		},
		// While building: 8 bytes a key hash, and the construction's
		// arrays (about 24 bytes a key) beside the fingerprints.
		bits: func(n uint64, p float64) uint64 { return satMul(n, 8*32+uint64(bits)*5/4) },
		rate: func(m, n uint64) float64 { return math.Ldexp(1, -bits) },
	}
}

// ribbonKind is build --static -p: a ribbon filter at rate p.
func ribbonKind(p float64) (*kind, error) {
	if _, err := frozen.NewRibbonBuilder(p, 0); err != nil {
		return nil, fmt.Errorf("-p %s: a ribbon filter's rate is from 1/2 down to 2^-32", formatPlanned(p))
	}
	return &kind{name: "ribbon",
		make: func(n uint64, p float64, seed uint64) (*newFilter, error) {
			b, err := frozen.NewRibbonBuilder(p, seed)
			if err != nil {
				return nil, err
			}
			return staticFilter(b.Add, b.Build), nil
		},
		// While building: 8 bytes a key hash, two remixed copies and
		// the banding's rows (20 bytes a slot) beside the solution.
		bits: func(n uint64, p float64) uint64 {
			return satMul(n, 8*45+uint64(math.Ceil(1.05*math.Log2(1/p))))
		},
		rate: func(m, n uint64) float64 { return p },
	}, nil
}

type writerFunc func(io.Writer) (int64, error)

func (f writerFunc) WriteTo(w io.Writer) (int64, error) { return f(w) }

// rbFilter is a RedisBloom filter loaded from a dump file, with the
// method test calls.
type rbFilter struct{ redisbloom.Dumpable }

func (r rbFilter) Test(key []byte) bool { return r.Exists(key) }

// sniffForeign loads a file that is not a bloomkit file when its first
// bytes (head, up to a bloomkit header's length) and size say it is one of
// the foreign formats; ok is false when it is none of them. r reads the
// whole file from its start.
func sniffForeign(path string, head []byte, size int64, r io.Reader) (l *loaded, ok bool, err error) {
	switch {
	case bytes.HasPrefix(head, []byte(redisbloom.DumpMagic)):
		f, err := redisbloom.ReadDump(r, allowDump)
		if err != nil {
			return nil, true, err
		}
		l := &loaded{path: path, size: size, f: rbFilter{f}}
		switch f := f.(type) {
		case *redisbloom.Bloom:
			l.kind = typeRBBloom
			l.hdr = format.Header{M: f.DataBytes() * 8, K: uint32(f.NumLinks()), N: f.Capacity(), Count: f.Size}
			if f.NumLinks() > 0 {
				l.hdr.P = f.Link(0).Error
			}
		case *redisbloom.Cuckoo:
			l.kind = typeRBCuckoo
			l.hdr = format.Header{M: f.NumBuckets, K: uint32(f.BucketSize), Count: f.NumItems}
		}
		return l, true, nil
	case guava.Sniff(head, size):
		f, err := guava.Read(r)
		if err != nil {
			return nil, true, err
		}
		return &loaded{path: path, kind: typeGuava, size: size, f: f,
			hdr: format.Header{M: f.M(), K: uint32(f.K())}}, true, nil
	case bitsandblooms.Sniff(head, size):
		f, err := bitsandblooms.Read(r)
		if err != nil {
			return nil, true, err
		}
		return &loaded{path: path, kind: typeBitsAndBlooms, size: size, f: f,
			hdr: format.Header{M: f.M(), K: uint32(f.K())}}, true, nil
	case len(head) >= guava.HeaderSize && head[0] == guava.StrategyMurmur128Mitz64 && head[1] != 0 &&
		size < guava.HeaderSize+8*int64(binary.BigEndian.Uint32(head[2:])):
		return nil, true, fmt.Errorf("%w: the start looks like a Guava filter of %d bytes, the file has %d",
			guava.ErrTruncated, guava.HeaderSize+8*int64(binary.BigEndian.Uint32(head[2:])), size)
	}
	return nil, false, nil
}

// allowDump refuses dump files whose filter does not fit in memory.
func allowDump(bytes uint64) error {
	return checkMemory(bytes, func(uint64) string { return "" })
}
