// Command boomcmp compares bloomkit's Counting and Scalable filters with
// github.com/tylertreat/BoomFilters' CountingBloomFilter and
// ScalableBloomFilter and writes a Markdown table (bench/BOOM.md):
//
//	cd bench && go run ./cmd/boomcmp -out BOOM.md
//
// Every filter is planned for p = 1% and gets the same n (default 1M) keys
// as []byte. For each of -runs fresh filters it times, one key per call:
// inserting the n keys, testing them all (hits), testing n absent keys
// (misses, which also give the measured false-positive rate), and, for the
// counting filters, removing every key. The table shows the median of the
// runs. Bits per key is the heap the filter holds after the inserts (from
// runtime.MemStats, after a GC) divided by n.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkit/bloomkit/bloom"
	boom "github.com/tylertreat/BoomFilters"
)

// subject is one filter under test. Each method loops over the keys
// itself, so that the loop calls the library directly.
type subject interface {
	add(keys [][]byte)
	count(keys [][]byte) int
	remove(keys [][]byte) int // -1 when the filter cannot remove
}

type contender struct {
	name string
	make func(n uint64, p float64) (subject, error)
}

var contenders = []contender{
	{"bloomkit Counting", func(n uint64, p float64) (subject, error) {
		f, err := bloom.NewCounting(n, p)
		return bkCounting{f}, err
	}},
	{"BoomFilters CountingBloomFilter (4-bit)", func(n uint64, p float64) (subject, error) {
		return boomCounting{boom.NewDefaultCountingBloomFilter(uint(n), p)}, nil
	}},
	{"bloomkit Scalable (from 10,000; defaults: growth 2, r 0.8)", func(n uint64, p float64) (subject, error) {
		f, err := bloom.NewScalable(scalableStart, p)
		return bkScalable{f}, err
	}},
	{"bloomkit Scalable (from 10,000; growth 2, r 0.5 as RedisBloom)", func(n uint64, p float64) (subject, error) {
		f, err := bloom.NewScalableWith(bloom.ScalableConfig{Capacity: scalableStart, Rate: p, Growth: 2, Tightening: 0.5})
		return bkScalable{f}, err
	}},
	{"bloomkit Scalable (from 10,000; growth 4, r 0.8)", func(n uint64, p float64) (subject, error) {
		f, err := bloom.NewScalableWith(bloom.ScalableConfig{Capacity: scalableStart, Rate: p, Growth: 4, Tightening: 0.8})
		return bkScalable{f}, err
	}},
	{"BoomFilters ScalableBloomFilter (from 10,000; r 0.8)", func(n uint64, p float64) (subject, error) {
		return boomScalable{boom.NewDefaultScalableBloomFilter(p)}, nil
	}},
}

// scalableStart is the first capacity of the scalable filters: the hint
// BoomFilters' NewDefaultScalableBloomFilter uses.
const scalableStart = 10_000

type bkCounting struct{ f *bloom.Counting }

func (s bkCounting) add(keys [][]byte) {
	for _, k := range keys {
		s.f.Add(k)
	}
}

func (s bkCounting) count(keys [][]byte) int {
	c := 0
	for _, k := range keys {
		if s.f.Test(k) {
			c++
		}
	}
	return c
}

func (s bkCounting) remove(keys [][]byte) int {
	c := 0
	for _, k := range keys {
		if s.f.Delete(k) {
			c++
		}
	}
	return c
}

type boomCounting struct{ f *boom.CountingBloomFilter }

func (s boomCounting) add(keys [][]byte) {
	for _, k := range keys {
		s.f.Add(k)
	}
}

func (s boomCounting) count(keys [][]byte) int {
	c := 0
	for _, k := range keys {
		if s.f.Test(k) {
			c++
		}
	}
	return c
}

func (s boomCounting) remove(keys [][]byte) int {
	c := 0
	for _, k := range keys {
		if s.f.TestAndRemove(k) {
			c++
		}
	}
	return c
}

type bkScalable struct{ f *bloom.Scalable }

func (s bkScalable) add(keys [][]byte) {
	for _, k := range keys {
		s.f.Add(k)
	}
}

func (s bkScalable) count(keys [][]byte) int {
	c := 0
	for _, k := range keys {
		if s.f.Test(k) {
			c++
		}
	}
	return c
}

func (s bkScalable) remove([][]byte) int { return -1 }

type boomScalable struct{ f *boom.ScalableBloomFilter }

func (s boomScalable) add(keys [][]byte) {
	for _, k := range keys {
		s.f.Add(k)
	}
}

func (s boomScalable) count(keys [][]byte) int {
	c := 0
	for _, k := range keys {
		if s.f.Test(k) {
			c++
		}
	}
	return c
}

func (s boomScalable) remove([][]byte) int { return -1 }

// makeKeys returns n URL-like keys, the i-th of which is unique to i+off.
func makeKeys(n, off int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		j := uint64(i + off)
		b := make([]byte, 0, 64)
		b = append(b, "https://www.site"...)
		b = strconv.AppendUint(b, j%99991, 10)
		b = append(b, ".example.com/path/to/article-"...)
		b = strconv.AppendUint(b, j, 10)
		keys[i] = append(b, ".html"...)
	}
	return keys
}

type result struct {
	bitsPerKey                     float64
	insert, hit, miss, remove, fpr float64
	removed                        int
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func nsPer(d time.Duration, n int) float64 { return float64(d.Nanoseconds()) / float64(n) }

func runOnce(c contender, n uint64, p float64, present, absent [][]byte) (result, error) {
	var r result
	before := heapInUse()
	s, err := c.make(n, p)
	if err != nil {
		return r, err
	}
	start := time.Now()
	s.add(present)
	r.insert = nsPer(time.Since(start), len(present))
	r.bitsPerKey = float64(heapInUse()-before) * 8 / float64(n)

	start = time.Now()
	hits := s.count(present)
	r.hit = nsPer(time.Since(start), len(present))
	if hits != len(present) {
		return r, fmt.Errorf("%s: %d false negatives", c.name, len(present)-hits)
	}
	start = time.Now()
	fp := s.count(absent)
	r.miss = nsPer(time.Since(start), len(absent))
	r.fpr = float64(fp) / float64(len(absent))

	start = time.Now()
	r.removed = s.remove(present)
	r.remove = nsPer(time.Since(start), len(present))
	runtime.KeepAlive(s)
	return r, nil
}

func median(rs []result, field func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = field(r)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func main() {
	n := flag.Uint64("n", 1_000_000, "keys added to each filter")
	absentN := flag.Int("absent", 1_000_000, "absent keys tested (misses and the false-positive rate)")
	p := flag.Float64("p", 0.01, "planned false-positive rate")
	runs := flag.Int("runs", 5, "fresh filters per contender; the table shows the medians")
	out := flag.String("out", "", "also write the table to this file (e.g. BOOM.md)")
	flag.Parse()

	present := makeKeys(int(*n), 0)
	absent := makeKeys(*absentN, int(*n))

	var b strings.Builder
	fmt.Fprintf(&b, "# bloomkit vs BoomFilters: counting and scalable Bloom filters\n\n")
	fmt.Fprintf(&b, "n = %d keys added, p = %g planned, %d absent keys for the miss time and the measured rate; "+
		"median of %d runs, each on a fresh filter, one key per call ([]byte keys, 55-64 bytes, hashing included). "+
		"%s, %s/%s, %d CPUs, %s. Reproduce: `cd bench && go run ./cmd/boomcmp -out BOOM.md`.\n\n",
		*n, *p, *absentN, *runs, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), time.Now().UTC().Format("2006-01-02"))
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Fprintf(&b, "Load average when the run started (the machine is shared): %s\n\n", strings.TrimSpace(string(load)))
	}
	fmt.Fprintf(&b, "| filter | bits/key | insert ns/op | hit ns/op | miss ns/op | delete ns/op | measured FPR |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|\n")
	fmt.Print(b.String())
	for _, c := range contenders {
		var rs []result
		for range *runs {
			r, err := runOnce(c, *n, *p, present, absent)
			if err != nil {
				fmt.Fprintln(os.Stderr, "boomcmp:", err)
				os.Exit(1)
			}
			rs = append(rs, r)
		}
		del := "—"
		if rs[0].removed >= 0 {
			del = fmt.Sprintf("%.1f", median(rs, func(r result) float64 { return r.remove }))
		}
		row := fmt.Sprintf("| %s | %.2f | %.1f | %.1f | %.1f | %s | %.3f%% |\n", c.name,
			median(rs, func(r result) float64 { return r.bitsPerKey }),
			median(rs, func(r result) float64 { return r.insert }),
			median(rs, func(r result) float64 { return r.hit }),
			median(rs, func(r result) float64 { return r.miss }),
			del,
			100*median(rs, func(r result) float64 { return r.fpr }))
		fmt.Print(row)
		b.WriteString(row)
	}
	b.WriteString(notes)
	if *out != "" {
		if err := writeFile(*out, b.String()); err != nil {
			fmt.Fprintln(os.Stderr, "boomcmp:", err)
			os.Exit(1)
		}
	}
}

const notes = `
Notes:

- The counting filters are sized alike (m = 9,585,059 four-bit counters and k = 7 for 1M keys at 1%); bloomkit
  hashes once with XXH3-128 and packs 16 counters a word, BoomFilters hashes with FNV-64 and reads counters
  bit by bit. BoomFilters decrements saturated counters (which can create false negatives); bloomkit never
  does.
- The scalable filters start at BoomFilters' default of 10,000 items and grow to 1M. BoomFilters adds links of
  the same 10,000-item size (about 100 by 1M keys), each at rate p·0.8^i, so a miss probes every link and the
  compound rate is bounded only by p/(1-0.8) = 5p. bloomkit's links grow 2x (or 4x), at rate p(1-r)r^i,
  so the compound rate stays at or below p; lookups hash once for the whole chain. With growth 4 the chain
  is shorter, but at 1M keys its fifth link (2.56M capacity) has just been opened and is mostly empty, hence
  its bits per key.
- Bits per key is measured on the heap, so it includes each library's bookkeeping.
`

func writeFile(path, s string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
