package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/bloomkit/bloomkit/cms"
	"github.com/bloomkit/bloomkit/topk"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/bloomkit/bloomkit/cuckoo"
	"github.com/bloomkit/bloomkit/frozen"
	"github.com/bloomkit/bloomkit/internal/format"
)

// This file knows the filter types: how build makes each one and how the
// other subcommands load any filter file. A type whose package is not in
// this build is listed with a nil make function and refused with a clear
// message.

// newFilter is a filter being built: add inserts a key (an error when the
// filter is full, for types that can be), and WriteTo saves it.
type newFilter struct {
	add     func(key []byte) error
	addMany func(keys [][]byte) error // adds a batch; faster for big filters
	io.WriterTo
	// stats is how full the filter is, for the overfill warning and the
	// summary; nil for types that do not say.
	stats filterStats
	// params are the filter's bits and probes (zero for scalable and cuckoo).
	params bloom.Params
	// blocked: the estimate's noise is the blocked layout's.
	blocked bool
	// exact: stats.ApproxCount is an exact count of the distinct keys
	// stored (cuckoo), so any count above n is an overfill.
	exact bool
	// grows: the type grows past n by design (scalable, cuckoo), so holding
	// more keys than planned is no overfill.
	grows bool
}

// filterStats is what a filter tells of its fill: the foreign and frozen
// types have these methods, the bloom package's types report them in
// their Stats (see statsOf).
type filterStats interface {
	ApproxCount() uint64
	EstimatedFPR() float64
}

// bloomStats is the filterStats of a bloom package type.
type bloomStats struct {
	f interface{ Stats() bloom.Stats }
}

func (b bloomStats) ApproxCount() uint64   { return b.f.Stats().ApproxCount }
func (b bloomStats) EstimatedFPR() float64 { return b.f.Stats().EstimatedFPR }

// statsOf returns the filterStats of a filter of any type, if it has them.
func statsOf(f any) (filterStats, bool) {
	switch f := f.(type) {
	case interface{ Stats() bloom.Stats }:
		return bloomStats{f}, true
	case filterStats:
		return f, true
	}
	return nil, false
}

// kind is a filter type build can make.
type kind struct {
	name  string
	about string
	// make returns an empty filter for n keys at rate p with the given seed,
	// or is nil when this build does not have the type.
	make func(n uint64, p float64, seed uint64) (*newFilter, error)
	// bits is the memory, in bits, a filter for n keys at rate p takes.
	bits func(n uint64, p float64) uint64
	// rate is the false-positive rate of m bits holding n keys, for
	// suggesting a -p that fits in memory.
	rate func(m, n uint64) float64
	// missing says what is not in this build when make is nil.
	missing string
}

var kinds = []kind{
	{name: "classic", about: "the fewest bits for a rate; k cache lines a lookup", make: makeClassic,
		bits: func(n uint64, p float64) uint64 { return bloom.Estimate(n, p).M }, rate: classicRate},
	{name: "blocked", about: "one cache line a lookup, a few % more bits; the fastest", make: makeBlocked,
		bits: func(n uint64, p float64) uint64 { return bloom.EstimateBlocked(n, p).M }, rate: blockedRate},
	{name: "counting", about: "4-bit counters, so keys can be removed; 4x the memory", make: makeCounting,
		bits: func(n uint64, p float64) uint64 { return satMul(bloom.Estimate(n, p).M, 4) },
		rate: func(m, n uint64) float64 { return classicRate(m/4, n) }},
	{name: "scalable", about: "grows past n while keeping the total rate at most p", make: makeScalable,
		// The first link is sized for n at a tighter rate (p/2 here, a
		// little more than the library's); later links are allocated as
		// keys come.
		bits: func(n uint64, p float64) uint64 { return bloom.Estimate(n, p/2).M },
		rate: func(m, n uint64) float64 { return 2 * classicRate(m, n) }},
	{name: "cuckoo", about: "removal and counting in fewer bits than counting Bloom", make: makeCuckoo,
		// About log2(2b/p) fingerprint bits a slot, b = 4 slots a bucket,
		// at 95% load; the table is a power of two, so up to twice that.
		bits: func(n uint64, p float64) uint64 {
			return uint64(2 * float64(n) * math.Ceil(math.Log2(8/p)) / 0.95)
		},
		rate: func(m, n uint64) float64 { return 8 / math.Pow(2, float64(m)*0.95/2/float64(max(n, 1))) }},
	{name: "split-block", about: "Parquet's split-block filter, the bitset Parquet engines read; more bits than blocked", make: makeSplitBlock,
		bits: func(n uint64, p float64) uint64 { return bloom.EstimateSplitBlock(n, p).M },
		rate: func(m, n uint64) float64 {
			return bloom.SplitBlockFalsePositiveRate(m/bloom.SplitBlockBits*bloom.SplitBlockBits, n)
		}},
}

func classicRate(m, n uint64) float64 {
	return bloom.FalsePositiveRate(m, n, bloom.OptimalK(m, n))
}

func blockedRate(m, n uint64) float64 {
	m = m / bloom.BlockBits * bloom.BlockBits
	if m == 0 || n >= m/2 {
		// Far past any useful rate; the model is slow to say so.
		return 1
	}
	return bloom.BlockedFalsePositiveRate(m, n, bestBlockedK(m, n))
}

// satMul multiplies without overflowing.
func satMul(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}

func findKind(name string) (*kind, error) {
	var names []string
	for i := range kinds {
		if kinds[i].name == name {
			return &kinds[i], nil
		}
		names = append(names, kinds[i].name)
	}
	return nil, fmt.Errorf("unknown --type %q: want one of %s", name, strings.Join(names, ", "))
}

func makeClassic(n uint64, p float64, seed uint64) (*newFilter, error) {
	ps := bloom.Estimate(n, p)
	ps.Seed = seed
	f, err := bloom.NewFromParams(ps)
	if err != nil {
		return nil, err
	}
	nf := batchFilter(f)
	nf.stats, nf.params = bloomStats{f}, f.Params()
	return nf, nil
}

func makeBlocked(n uint64, p float64, seed uint64) (*newFilter, error) {
	ps := bloom.EstimateBlocked(n, p)
	ps.Seed = seed
	f, err := bloom.NewBlockedFromParams(ps)
	if err != nil {
		return nil, err
	}
	nf := batchFilter(f)
	nf.stats, nf.params, nf.blocked = bloomStats{f}, f.Params(), true
	return nf, nil
}

// makeSplitBlock builds Parquet's split-block filter: a power of two of
// bytes, as Parquet's writers size it, and no seed (Parquet hashes keys
// with XXH64 and seed 0, so that every engine finds them).
func makeSplitBlock(n uint64, p float64, seed uint64) (*newFilter, error) {
	if seed != 0 {
		return nil, errors.New("--seed: a split-block filter has no seed (Parquet hashes keys with XXH64, seed 0)")
	}
	ps := bloom.EstimateSplitBlock(n, p)
	if ps.M == 0 {
		return nil, fmt.Errorf("no split-block filter holds %s keys at %s: the largest is %s (give a smaller -n, or a larger -p)",
			commas(n), formatPlanned(p), humanBytes(bloom.SplitBlockMaxBytes))
	}
	f, err := bloom.NewSplitBlockFromParams(ps)
	if err != nil {
		return nil, err
	}
	nf := batchFilter(f)
	nf.stats, nf.params, nf.blocked = bloomStats{f}, f.Params(), true
	return nf, nil
}

// batchFilter wraps a filter with a batch add (bloom.Filter, bloom.Blocked,
// bloom.SplitBlock).
func batchFilter[F interface {
	*bloom.Filter | *bloom.Blocked | *bloom.SplitBlock
	Add([]byte)
	io.WriterTo
}](f F) *newFilter {
	return &newFilter{
		add:      func(k []byte) error { f.Add(k); return nil },
		addMany:  func(k [][]byte) error { bloom.AddMany(f, k); return nil },
		WriterTo: f,
	}
}

func makeCounting(n uint64, p float64, seed uint64) (*newFilter, error) {
	ps := bloom.Estimate(n, p)
	ps.Seed = seed
	f, err := bloom.NewCountingFromParams(ps)
	if err != nil {
		return nil, err
	}
	return &newFilter{
		add:      func(k []byte) error { f.Add(k); return nil },
		addMany:  func(k [][]byte) error { addEach(f.Add, k); return nil },
		WriterTo: f,
		stats:    bloomStats{f},
		params:   f.Params(),
	}, nil
}

func makeScalable(n uint64, p float64, seed uint64) (*newFilter, error) {
	f, err := bloom.NewScalableWith(bloom.ScalableConfig{Capacity: n, Rate: p, Seed: seed})
	if err != nil {
		return nil, err
	}
	return &newFilter{
		add:      func(k []byte) error { f.Add(k); return nil },
		addMany:  func(k [][]byte) error { addEach(f.Add, k); return nil },
		WriterTo: f,
		stats:    bloomStats{f},
		grows:    true,
	}, nil
}

// makeCuckoo builds a cuckoo filter of distinct keys: a key that tests
// present is not stored again (AddUnique), so that n counts distinct keys
// as for the other types and a repeated line takes no slot. The filter
// grows past n (up to cuckoo.DefaultMaxBytes or 4x its first table), but
// more than n keys is an overfill, warned of or refused with --strict.
func makeCuckoo(n uint64, p float64, seed uint64) (*newFilter, error) {
	f, err := cuckoo.NewWith(cuckoo.Config{Capacity: n, Rate: p, Seed: seed})
	if err != nil {
		return nil, err
	}
	add := func(k []byte) error { _, err := f.AddUnique(k); return err }
	return &newFilter{
		add: add,
		addMany: func(keys [][]byte) error {
			for _, k := range keys {
				if err := add(k); err != nil {
					return err
				}
			}
			return nil
		},
		WriterTo: f,
		stats:    cuckooStats{f},
		exact:    true,
	}, nil
}

// cuckooStats is the filterStats of a cuckoo filter: its item count, which
// build keeps to distinct keys, and its rate now.
type cuckooStats struct{ f *cuckoo.Filter }

func (c cuckooStats) ApproxCount() uint64   { return c.f.Len() }
func (c cuckooStats) EstimatedFPR() float64 { return c.f.Stats().EstimatedFPR }

func addEach(add func([]byte), keys [][]byte) {
	for _, k := range keys {
		add(k)
	}
}

// parseSeed reads --seed: a number (decimal or 0x hex) or "random".
func parseSeed(s string) (uint64, error) {
	if s == "random" {
		return bloom.RandomSeed(), nil
	}
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("--seed %q: want a number or \"random\"", s)
	}
	return v, nil
}

// loaded is a filter read from a file, with what info reports about it.
type loaded struct {
	path    string
	hdr     format.Header
	version uint16 // format version of the file
	size    int64  // file size in bytes
	f       any    // *bloom.Filter, *bloom.Blocked, or another type's filter
	// kind names a foreign file's type (guava, redisbloom-bf, ...); empty
	// for bloomkit files, whose header names it. hdr then holds what the
	// foreign format tells: M, K, N, P, Count.
	kind string
}

// tester is what test needs of a filter.
type tester interface{ Test(key []byte) bool }

// testAndAdder is what dedup needs of a filter.
type testAndAdder interface {
	TestAndAdd(key []byte) bool
	io.WriterTo
}

// loadFilter reads the whole filter file at path. A damaged, truncated or
// foreign file is an error (naming the file); a filter is never returned
// half-read, and bytes after the checksum are refused too.
//
// "-" reads the filter from stdin (loadFilterFrom).
func loadFilter(path string) (*loaded, error) { return loadFilterFrom(path, nil) }

// loadFilterFrom is loadFilter with "-" meaning stdin.
func loadFilterFrom(path string, stdin io.Reader) (*loaded, error) {
	if path == "-" {
		return loadStdin(stdin)
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s: is a directory", path)
	}
	raw := make([]byte, format.HeaderSize)
	got, rerr := io.ReadFull(file, raw)
	if compressed(raw[:got]) {
		if _, err := file.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		data, err := decompress(path, file)
		if err != nil {
			return nil, err
		}
		return loadBytes(path, data)
	}
	if got > 0 && string(raw[:min(got, len(format.Magic))]) != format.Magic[:min(got, len(format.Magic))] {
		// Not a bloomkit file: perhaps one of another library.
		if _, err := file.Seek(0, io.SeekStart); err == nil {
			l, ok, err := sniffForeign(path, raw[:got], fi.Size(), file)
			if ok {
				if err != nil {
					return nil, fmt.Errorf("%s: %w", path, err)
				}
				if err := checkNothingAfter(path, file, fi.Size(), "end"); err != nil {
					return nil, err
				}
				return l, nil
			}
		}
		return nil, fmt.Errorf("%s: %w", path, bloom.ErrBadMagic)
	}
	if rerr != nil {
		return nil, fmt.Errorf("%s: %w", path, format.Truncated(rerr, "header"))
	}
	hdr, err := format.ParseHeader(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// Read the file from its start again: by seeking, so that the decoder
	// knows the file's size (a header announcing more than the file holds
	// fails before any allocation), or for a pipe by replaying the header.
	var r io.Reader = file
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		r = io.MultiReader(bytes.NewReader(raw), file)
	}
	f, err := decodeFilter(hdr, r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := checkNothingAfter(path, file, fi.Size(), "checksum"); err != nil {
		return nil, err
	}
	return &loaded{path: path, hdr: hdr, version: binary.LittleEndian.Uint16(raw[8:]), size: fi.Size(), f: f}, nil
}

// checkNothingAfter refuses bytes after the filter's end.
func checkNothingAfter(path string, file *os.File, size int64, end string) error {
	var one [1]byte
	if n, _ := io.ReadFull(file, one[:]); n != 0 {
		rest, _ := file.Seek(0, io.SeekCurrent)
		return fmt.Errorf("%s: %w: %d bytes after the filter's %s", path, bloom.ErrCorrupt, size-rest+1, end)
	}
	return nil
}

// decodeFilter reads the filter file that r holds, whose header is hdr,
// with the package that knows its type.
func decodeFilter(hdr format.Header, r io.Reader) (any, error) {
	switch hdr.Type {
	case format.TypeCuckoo:
		return cuckoo.Read(r)
	case format.TypeFrozen:
		return frozen.Read(r)
	case format.TypeRibbon:
		return frozen.ReadRibbon(r)
	case format.TypeCMS:
		return cms.Read(r)
	case format.TypeTopK:
		return topk.Read(r)
	}
	return bloom.Read(r)
}

// typeName names a loaded filter's type as the file header does, or the
// foreign format's.
func (l *loaded) typeName() string {
	if l.kind != "" {
		return l.kind
	}
	return format.TypeName(l.hdr.Type)
}

// describeErr adds a hint to the errors people meet most.
func describeErr(err error) string {
	msg := err.Error()
	switch {
	case errors.Is(err, bloom.ErrBadMagic):
		msg += " (is it a filter file? bloom reads bloomkit files, and Guava, bits-and-blooms and RedisBloom dump files by their first bytes and size)"
	case errors.Is(err, bloom.ErrTruncated):
		msg += " (was the file cut short while being copied or written?)"
	case errors.Is(err, bloom.ErrChecksum):
		msg += " (the file is damaged)"
	}
	return msg
}

// loadStdin reads a whole filter from stdin. It is read into memory first,
// so that the decoder knows its size: a header announcing more than was
// sent fails before anything that large is allocated.
func loadStdin(stdin io.Reader) (*loaded, error) {
	const path = "stdin"
	if stdin == nil {
		return nil, fmt.Errorf("%s: not available", path)
	}
	data, err := io.ReadAll(stdin)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if compressed(data) {
		if data, err = decompress(path, bytes.NewReader(data)); err != nil {
			return nil, err
		}
	}
	return loadBytes(path, data)
}

// compressed reports whether head starts a gzip or zstd stream.
func compressed(head []byte) bool {
	return bytes.HasPrefix(head, gzipMagic) || bytes.HasPrefix(head, zstdMagic)
}

// decompress reads the whole gzip or zstd stream r into memory, refusing
// more than the memory available: a filter file is decoded from memory
// once decompressed, as from stdin.
func decompress(path string, r io.Reader) ([]byte, error) {
	in, err := openInput("-", r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer in.close()
	limit := uint64(1) << 62
	if avail, _, ok := memoryLimit(); ok {
		limit = avail / 2
	}
	data, err := io.ReadAll(io.LimitReader(in.r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", path, in.compression, err)
	}
	if uint64(len(data)) > limit {
		return nil, fmt.Errorf("%s: the %s-compressed filter is larger than half the memory available (%s); decompress it to a file first", path, in.compression, humanBytes(limit))
	}
	return data, nil
}

// loadBytes reads a whole filter file held in data (from stdin, or
// decompressed).
func loadBytes(path string, data []byte) (*loaded, error) {
	if !bytes.HasPrefix(data, []byte(format.Magic)) {
		r := bytes.NewReader(data)
		l, ok, err := sniffForeign(path, data[:min(len(data), format.HeaderSize)], int64(len(data)), r)
		if ok {
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			if r.Len() != 0 {
				return nil, fmt.Errorf("%s: %w: %d bytes after the filter's end", path, bloom.ErrCorrupt, r.Len())
			}
			return l, nil
		}
	}
	if len(data) < format.HeaderSize {
		return nil, fmt.Errorf("%s: %w", path, format.Truncated(io.ErrUnexpectedEOF, "header"))
	}
	hdr, err := format.ParseHeader(data[:format.HeaderSize])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r := bytes.NewReader(data)
	f, err := decodeFilter(hdr, r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%s: %w: %d bytes after the filter's checksum", path, bloom.ErrCorrupt, r.Len())
	}
	return &loaded{path: path, hdr: hdr, version: binary.LittleEndian.Uint16(data[8:]), size: int64(len(data)), f: f}, nil
}
