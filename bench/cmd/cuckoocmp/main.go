// Command cuckoocmp compares bloomkit's cuckoo filter with
// github.com/seiflotfy/cuckoofilter and github.com/linvon/cuckoo-filter and
// prints a Markdown table: bits per key, insert, hit, miss and delete
// ns/op, the false-positive rate measured over a million or more absent
// keys, and the load factor reached, each the median of several runs.
//
//	cd bench && go run ./cmd/cuckoocmp -out CUCKOO.md
//	go run ./cmd/cuckoocmp -sizes 100000 -runs 3   # a quick look
//
// Every library is given the same keys (URL-like strings of 55 to 64 bytes)
// as []byte. The runs of the libraries are interleaved, so that a slower
// moment of a shared machine does not land on one library only.
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkit/bloomkit/cuckoo"
	linvon "github.com/linvon/cuckoo-filter"
	seiflotfy "github.com/seiflotfy/cuckoofilter"
)

// filter is what the comparison asks of every library.
type filter interface {
	add(k []byte) bool
	test(k []byte) bool
	del(k []byte) bool
	bytes() uint64
	load() float64
}

type lib struct {
	name string
	note string
	make func(n uint64) filter
}

var libs = []lib{
	{"bloomkit cuckoo", "b=4, f=8, sized for n at 94% load (default)", func(n uint64) filter {
		f, err := cuckoo.New(n)
		if err != nil {
			panic(err)
		}
		return bk{f}
	}},
	{"bloomkit cuckoo, pow2", "b=4, f=8, nextPow2(n)/4 buckets: the others' table size", func(n uint64) filter {
		f, err := cuckoo.NewWith(cuckoo.Config{Buckets: nextPow2(n) / 4})
		if err != nil {
			panic(err)
		}
		return bk{f}
	}},
	{"seiflotfy/cuckoofilter", "b=4, f=8, nextPow2(n)/4 buckets", func(n uint64) filter {
		return seif{seiflotfy.NewFilter(uint(n)), nextPow2(n)}
	}},
	{"linvon/cuckoo-filter", "b=4, f=8, single table", func(n uint64) filter {
		return lin{linvon.NewFilter(4, 8, uint(n), linvon.TableTypeSingle)}
	}},
}

type bk struct{ f *cuckoo.Filter }

func (b bk) add(k []byte) bool  { return b.f.Add(k) == nil }
func (b bk) test(k []byte) bool { return b.f.Test(k) }
func (b bk) del(k []byte) bool  { return b.f.Delete(k) }
func (b bk) bytes() uint64      { return b.f.Stats().SizeBytes }
func (b bk) load() float64      { return b.f.Stats().LoadFactor }

type seif struct {
	f    *seiflotfy.Filter
	size uint64 // its buckets are [4]byte: nextPow2(n) bytes
}

func (s seif) add(k []byte) bool  { return s.f.Insert(k) }
func (s seif) test(k []byte) bool { return s.f.Lookup(k) }
func (s seif) del(k []byte) bool  { return s.f.Delete(k) }
func (s seif) bytes() uint64      { return s.size }
func (s seif) load() float64      { return float64(s.f.Count()) / float64(s.size) }

type lin struct{ f *linvon.Filter }

func (l lin) add(k []byte) bool  { return l.f.Add(k) }
func (l lin) test(k []byte) bool { return l.f.Contain(k) }
func (l lin) del(k []byte) bool  { return l.f.Delete(k) }
func (l lin) bytes() uint64      { return uint64(l.f.SizeInBytes()) }
func (l lin) load() float64      { return l.f.LoadFactor() }

func nextPow2(n uint64) uint64 {
	p := uint64(1)
	for p < n {
		p <<= 1
	}
	return p
}

// keys holds byte-slice keys in one arena.
type keys struct {
	arena []byte
	k     [][]byte
}

// makeKeys returns the keys of the given indices.
func makeKeys(idx []uint64) keys {
	var ks keys
	ks.arena = make([]byte, 0, len(idx)*64)
	ks.k = make([][]byte, len(idx))
	for j, i := range idx {
		off := len(ks.arena)
		ks.arena = append(ks.arena, "https://www.site"...)
		ks.arena = strconv.AppendUint(ks.arena, i%99991, 10)
		ks.arena = append(ks.arena, ".example.com/path/to/article-"...)
		ks.arena = strconv.AppendUint(ks.arena, i, 10)
		ks.arena = append(ks.arena, ".html"...)
		ks.k[j] = ks.arena[off:len(ks.arena):len(ks.arena)]
	}
	return ks
}

type result struct {
	bitsPerKey, insert, hit, miss, del, fpr, load float64
	failed, falseNeg, delFailed                   int
}

func measure(l lib, n uint64, ins, hit, abs keys) result {
	runtime.GC()
	f := l.make(n)
	var r result
	start := time.Now()
	for _, k := range ins.k {
		if !f.add(k) {
			r.failed++
		}
	}
	r.insert = perOp(start, len(ins.k))
	r.load = f.load()
	r.bitsPerKey = float64(f.bytes()*8) / float64(n)

	start = time.Now()
	for _, k := range hit.k {
		if !f.test(k) {
			r.falseNeg++
		}
	}
	r.hit = perOp(start, len(hit.k))

	fp := 0
	start = time.Now()
	for _, k := range abs.k {
		if f.test(k) {
			fp++
		}
	}
	r.miss = perOp(start, len(abs.k))
	r.fpr = float64(fp) / float64(len(abs.k))

	start = time.Now()
	for _, k := range hit.k {
		if !f.del(k) {
			r.delFailed++
		}
	}
	r.del = perOp(start, len(hit.k))
	return r
}

func perOp(start time.Time, n int) float64 {
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

func median(rs []result, get func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = get(r)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func main() {
	sizes := flag.String("sizes", "1000000,10000000", "comma-separated numbers of keys")
	runs := flag.Int("runs", 5, "runs per library and size; the table gives medians")
	absent := flag.Uint64("absent", 1_000_000, "absent keys probed for the miss time and the false-positive rate")
	out := flag.String("out", "", "write the table to this file as well as to standard output")
	flag.Parse()

	load0 := loadavg()
	var b strings.Builder
	fmt.Fprintf(&b, "# Cuckoo filters compared\n\n")
	fmt.Fprintf(&b, "Written by `go run ./cmd/cuckoocmp` in bench/ (%s, %s/%s, %d CPUs, %s). ",
		time.Now().UTC().Format("2006-01-02"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(&b, "Medians of %d runs, the libraries' runs interleaved (each run starting with the next library). Keys are URL-like strings of 55 to 64 bytes "+
		"passed as []byte; n keys are inserted in order, then all n tested in a random order (hit), then %d keys "+
		"never inserted are tested (miss, and the measured false-positive rate), then the n keys deleted in the hit order. "+
		"Bits per key = table bytes × 8 / n. A failed insert is one the library reported (seiflotfy and linvon "+
		"report failure but keep the last evicted fingerprint in a victim slot or lose it; bloomkit grows). "+
		"False negatives and failed deletes, if any, are listed below the table.\n\n", *runs, *absent)
	var notes []string
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "generating %d + %d keys\n", n, *absent)
		idx := make([]uint64, n)
		for i := range idx {
			idx[i] = uint64(i)
		}
		ins := makeKeys(idx)
		rng := rand.New(rand.NewPCG(1, n))
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		hit := makeKeys(idx)
		idx = idx[:*absent]
		for i := range idx {
			idx[i] = n + uint64(i)
		}
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		abs := makeKeys(idx)
		idx = nil
		debug.FreeOSMemory()

		res := make([][]result, len(libs))
		for run := range *runs {
			// Each run starts with another library, so that none is always
			// measured right after a particular other.
			for j := range libs {
				i := (run + j) % len(libs)
				l := libs[i]
				r := measure(l, n, ins, hit, abs)
				res[i] = append(res[i], r)
				fmt.Fprintf(os.Stderr, "n=%d run %d %-24s %+v\n", n, run+1, l.name, r)
			}
		}
		fmt.Fprintf(&b, "## n = %s\n\n", group(n))
		fmt.Fprintf(&b, "| library | configuration | bits/key | insert ns/op | hit ns/op | miss ns/op | delete ns/op | measured FP rate | load reached | failed inserts |\n")
		fmt.Fprintf(&b, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for i, l := range libs {
			rs := res[i]
			fmt.Fprintf(&b, "| %s | %s | %.2f | %.0f | %.0f | %.0f | %.0f | %.4f%% | %.1f%% | %.0f |\n",
				l.name, l.note,
				median(rs, func(r result) float64 { return r.bitsPerKey }),
				median(rs, func(r result) float64 { return r.insert }),
				median(rs, func(r result) float64 { return r.hit }),
				median(rs, func(r result) float64 { return r.miss }),
				median(rs, func(r result) float64 { return r.del }),
				100*median(rs, func(r result) float64 { return r.fpr }),
				100*median(rs, func(r result) float64 { return r.load }),
				median(rs, func(r result) float64 { return float64(r.failed) }))
			for run, r := range rs {
				if r.falseNeg > 0 || r.delFailed > 0 {
					notes = append(notes, fmt.Sprintf("- n = %s, %s, run %d: %d false negatives, %d failed deletes of inserted keys",
						group(n), l.name, run+1, r.falseNeg, r.delFailed))
				}
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Load average (1, 5, 15 min) at the start: %s; at the end: %s. On a shared machine "+
		"the times vary by 2x or more between runs; the bits per key, rates and loads do not.\n\n", load0, loadavg())
	if len(notes) > 0 {
		b.WriteString("False negatives (keys inserted, reported present by nobody):\n\n")
		b.WriteString(strings.Join(notes, "\n") + "\n")
	} else {
		b.WriteString("No library gave a false negative or failed to delete an inserted key.\n")
	}
	var w io.Writer = os.Stdout
	if *out != "" {
		if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	fmt.Fprint(w, b.String())
}

// loadavg returns the first three fields of /proc/loadavg, or "unknown".
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

func group(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
