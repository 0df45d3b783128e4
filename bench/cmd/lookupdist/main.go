// Command lookupdist measures single-key lookups as distributions: bloomkit
// Blocked against greatroar/blobloom and bits-and-blooms/bloom at one n and
// p, every repetition interleaved in a shuffled order in one process, and
// then bloomkit's batch lookup (TestMany) at a big n against the batch
// limit measured in the same run. Beside each repetition it prints what
// could make two repetitions differ: how much of the filter's array is on
// huge pages (/proc/self/pagemap and /proc/kpageflags, root only), the
// array's alignment, and whether a garbage collection ran in the timed loop.
//
//	cd bench && go run ./cmd/lookupdist -out -
//
// A 10M filter is about 12 MB and the 100M one about 120 MB; the key sets
// take about 300 MB.
package main

import (
	"flag"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	bab "github.com/bits-and-blooms/bloom/v3"
	"github.com/bloomkit/bloomkit/bloom"
	"github.com/greatroar/blobloom"
	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"
)

var (
	nFlag    = flag.Uint64("n", 10_000_000, "keys in the single-key filters")
	pFlag    = flag.Float64("p", 0.01, "false-positive rate")
	reps     = flag.Int("reps", 7, "repetitions (interleaved)")
	hitsN    = flag.Int("hits", 2_000_000, "hit keys looked up a repetition")
	absentN  = flag.Int("absent", 2_000_000, "absent keys looked up a repetition")
	bigN     = flag.Uint64("big", 100_000_000, "keys in the batch filter (0: skip the batch part)")
	batch    = flag.Int("batch", 1024, "keys a TestMany call")
	rebuild  = flag.Bool("rebuild", false, "build every filter afresh before each of its repetitions")
	libsFlag = flag.String("libs", "blocked,blobloom,bab", "single-key subjects: blocked, blobloom, bab, filter")
	seed     = flag.Uint64("seed", 1, "seed of key sampling and of the repetition order")
	out      = flag.String("out", "-", "write the Markdown report here (- for stdout)")
	state    = flag.String("state", "gc", "cache state before each timed loop: gc (a garbage collection, which reads the whole heap), warm (the filter's array read just before) or cold (64 MiB of other memory read just before)")
	oneFlag  = flag.String("one", "", "only build one filter and do -lookups lookups of one kind, for cachegrind: blocked/hit, blocked/miss, blobloom/hit, ..., blocked/many (TestMany at -big)")
	lookups  = flag.Int("lookups", 100_000, "lookups of the -one mode")
	keyLen   = flag.Int("keylen", 0, "the -one mode's key length in bytes, 4 to 4096 (0: the URL-like keys of 58–62 bytes)")
)

func main() {
	runtime.LockOSThread() // thread CPU time is the goroutine's CPU time
	flag.Parse()
	if *oneFlag != "" {
		one(*oneFlag, *lookups)
		return
	}
	var rep strings.Builder
	start := time.Now()
	fmt.Fprintf(&rep, "- Command: `cd bench && go run ./cmd/lookupdist %s`\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintf(&rep, "- Date: %s UTC; %s; GOMAXPROCS %d; load average at start %s\n",
		start.UTC().Format("2006-01-02 15:04"), runtime.Version(), runtime.GOMAXPROCS(0), loadavg())
	single(&rep)
	if *bigN > 0 {
		batchPart(&rep)
	}
	fmt.Fprintf(&rep, "\nLoad average at end %s; run took %s.\n", loadavg(), time.Since(start).Round(time.Second))
	if *out == "-" {
		fmt.Print(rep.String())
	} else if err := os.WriteFile(*out, []byte(rep.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "lookupdist:", err)
		os.Exit(1)
	}
}

// A subject is one filter under test, looked up one key per call.
type subject struct {
	name  string
	build func(n uint64, p float64, keys []string)
	count func(keys []string) int
	words func() (unsafe.Pointer, uintptr) // the filter's array, for the diagnostics
	k     func() int
}

func subjects() []*subject {
	var all []*subject
	for _, id := range strings.Split(*libsFlag, ",") {
		switch id {
		case "blocked":
			var f *bloom.Blocked
			all = append(all, &subject{
				name: "bloomkit Blocked",
				build: func(n uint64, p float64, keys []string) {
					f = nil
					runtime.GC()
					var err error
					if f, err = bloom.NewBlocked(n, p); err != nil {
						panic(err)
					}
					for _, k := range keys {
						f.AddString(k)
					}
				},
				count: func(keys []string) int {
					c := 0
					for _, k := range keys {
						if f.TestString(k) {
							c++
						}
					}
					return c
				},
				words: func() (unsafe.Pointer, uintptr) { return blockedWords(f) },
				k:     func() int { return int(f.Params().K) },
			})
		case "filter":
			var f *bloom.Filter
			all = append(all, &subject{
				name: "bloomkit Filter",
				build: func(n uint64, p float64, keys []string) {
					f = nil
					runtime.GC()
					var err error
					if f, err = bloom.New(n, p); err != nil {
						panic(err)
					}
					for _, k := range keys {
						f.AddString(k)
					}
				},
				count: func(keys []string) int {
					c := 0
					for _, k := range keys {
						if f.TestString(k) {
							c++
						}
					}
					return c
				},
				words: func() (unsafe.Pointer, uintptr) { return nil, 0 },
				k:     func() int { return int(f.Params().K) },
			})
		case "blobloom":
			var f *blobloom.Filter
			all = append(all, &subject{
				name: "greatroar/blobloom",
				build: func(n uint64, p float64, keys []string) {
					f = nil
					runtime.GC()
					f = blobloom.NewOptimized(blobloom.Config{Capacity: n, FPRate: p})
					for _, k := range keys {
						f.Add(xxh3.HashString(k))
					}
				},
				count: func(keys []string) int {
					c := 0
					for _, k := range keys {
						if f.Has(xxh3.HashString(k)) {
							c++
						}
					}
					return c
				},
				words: func() (unsafe.Pointer, uintptr) {
					// Filter's first field is its []block (v0.8.1).
					s := *(*[]byte)(unsafe.Pointer(f))
					return unsafe.Pointer(unsafe.SliceData(s)), uintptr(len(s)) * 64
				},
				k: func() int { _, k := blobloom.Optimize(blobloom.Config{Capacity: *nFlag, FPRate: *pFlag}); return k },
			})
		case "bab":
			var f *bab.BloomFilter
			all = append(all, &subject{
				name: "bits-and-blooms/bloom/v3",
				build: func(n uint64, p float64, keys []string) {
					f = nil
					runtime.GC()
					f = bab.NewWithEstimates(uint(n), p)
					for _, k := range keys {
						f.AddString(k)
					}
				},
				count: func(keys []string) int {
					c := 0
					for _, k := range keys {
						if f.TestString(k) {
							c++
						}
					}
					return c
				},
				words: func() (unsafe.Pointer, uintptr) {
					w := f.BitSet().Words()
					return unsafe.Pointer(unsafe.SliceData(w)), uintptr(len(w)) * 8
				},
				k: func() int { return int(f.K()) },
			})
		default:
			fmt.Fprintf(os.Stderr, "lookupdist: unknown subject %q\n", id)
			os.Exit(2)
		}
	}
	return all
}

// blockedWords returns the address and size of a Blocked filter's bit array
// (its first field).
func blockedWords(f *bloom.Blocked) (unsafe.Pointer, uintptr) {
	s := *(*[]uint64)(unsafe.Pointer(f))
	return unsafe.Pointer(unsafe.SliceData(s)), uintptr(len(s)) * 8
}

// sample is one timed loop: ns per key by the wall clock and by the
// thread's CPU time, and how many garbage collections ended during it.
type sample struct {
	wall, cpu float64
	gcs       uint32
	huge      float64 // fraction of the array on huge pages at the time, -1 unknown
	align     uintptr // array address mod 64
	chase     float64 // the machine's dependent-load latency just before the loop (see chaseNs)
}

// The chase is a measure of the machine, not of a filter: a chain of
// dependent loads, each to a random line of an array of the filters' size,
// so that each load waits for the one before. Its ns per load is what one
// random access into a 12 MiB array costs at that moment; timed just
// before every lookup loop, it shows whether a slow repetition was the
// machine's (the neighbours' use of the shared last-level cache, their
// time slices on the core) or the filter's.
var chaseNext []uint32

const chaseLoads = 1 << 19

func chaseNs(bytes uint64) float64 {
	if chaseNext == nil {
		// One random cycle through every line (Sattolo's shuffle), a word
		// a line, so that every load is a new line.
		lines := int(bytes / 64)
		perm := make([]uint32, lines)
		for i := range perm {
			perm[i] = uint32(i)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for i := lines - 1; i > 0; i-- {
			j := r.IntN(i)
			perm[i], perm[j] = perm[j], perm[i]
		}
		chaseNext = make([]uint32, lines*16)
		for i := range perm {
			chaseNext[int(perm[i])*16] = perm[(i+1)%lines]
		}
		for range 2 { // in cache as far as it fits, like the filters after building
			chaseSink += chaseOnce(len(perm))
		}
	}
	t := time.Now()
	chaseSink += chaseOnce(chaseLoads)
	d := time.Since(t)
	runtime.KeepAlive(chaseSink) // the loads are not dead code
	return nsPer(d, chaseLoads)
}

func chaseOnce(loads int) uint32 {
	x := uint32(0)
	for range loads {
		x = chaseNext[int(x)*16]
	}
	return x
}

var chaseSink uint32

func single(rep *strings.Builder) {
	n, p := *nFlag, *pFlag
	logf("n=%d: generating keys", n)
	rng := rand.New(rand.NewPCG(*seed, n))
	insert := make([]string, n)
	var arena []byte
	for i := range insert {
		if len(arena) < 128 {
			arena = make([]byte, 1<<20)
		}
		k := appendKey(arena[:0], uint64(i))
		arena = arena[len(k):]
		insert[i] = unsafe.String(unsafe.SliceData(k), len(k))
	}
	hits := make([]string, *hitsN)
	for i := range hits {
		hits[i] = insert[rng.Uint64N(n)]
	}
	hits = compact(hits) // contiguous in lookup order, as a real batch of requests would be
	absent := make([]string, *absentN)
	for i := range absent {
		absent[i] = string(appendKey(nil, n+uint64(i)))
	}
	rng.Shuffle(len(absent), func(i, j int) { absent[i], absent[j] = absent[j], absent[i] })
	absent = compact(absent)

	subs := subjects()
	hit := make([][]sample, len(subs))
	miss := make([][]sample, len(subs))
	fps := make([]int, len(subs))
	for _, s := range subs {
		logf("building %s", s.name)
		s.build(n, p, insert)
	}
	order := make([]int, len(subs))
	for i := range order {
		order[i] = i
	}
	var orders []string
	for r := 0; r < *reps; r++ {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		var o []string
		for _, i := range order {
			s := subs[i]
			o = append(o, short(s.name))
			if *rebuild && r > 0 {
				s.build(n, p, insert)
			}
			runtime.GC()
			prepare(s)
			h, c := timed(s, hits)
			if c != len(hits) {
				fmt.Fprintf(os.Stderr, "lookupdist: %s: %d of %d added keys tested absent\n", s.name, len(hits)-c, len(hits))
				os.Exit(1)
			}
			prepare(s)
			m, fp := timed(s, absent)
			fps[i] = fp
			hit[i], miss[i] = append(hit[i], h), append(miss[i], m)
			logf("rep %d %-26s hit %6.1f [cpu %6.1f] miss %6.1f [cpu %6.1f] gc %d/%d huge %s align %d",
				r+1, s.name, h.wall, h.cpu, m.wall, m.cpu, h.gcs, m.gcs, hugeStr(h.huge), h.align)
		}
		orders = append(orders, strings.Join(o, " "))
	}

	fmt.Fprintf(rep, "\n## Single-key lookups, n = %s, p = %g\n\n", human(n), p)
	fmt.Fprintf(rep, "%d hit keys (sampled from the added ones, random order) and %d absent keys a repetition, one call a key, hashing included; %d repetitions, each a shuffled order of the subjects (%s); filters built %s; before each timed loop: %s. Wall-clock ns/key; thread CPU time in brackets. Load average at the start of this part: %s.\n\n",
		len(hits), len(absent), *reps, strings.Join(orders, "; "), map[bool]string{true: "afresh before every repetition", false: "once"}[*rebuild], stateText[*state], loadavg())
	fmt.Fprintf(rep, "| subject | k | lookup | min | median | max | repetitions in run order | thread CPU median | FPR |\n|:--|--:|:--|--:|--:|--:|:--|--:|--:|\n")
	for i, s := range subs {
		for _, row := range []struct {
			what string
			v    []sample
		}{{"hit", hit[i]}, {"miss", miss[i]}} {
			w, c := walls(row.v), cpus(row.v)
			fpr := ""
			if row.what == "miss" {
				fpr = fmt.Sprintf("%.3f%%", 100*float64(fps[i])/float64(len(absent)))
			}
			fmt.Fprintf(rep, "| %s | %d | %s | %.1f | **%.1f** | %.1f | %s | %.1f | %s |\n",
				s.name, s.k(), row.what, minOf(w), median(w), maxOf(w), join(w), median(c), fpr)
		}
	}
	// The goal: Blocked at most blobloom in the median and in nearly every
	// repetition (same repetition, both subjects).
	bi, li := index(subs, "bloomkit Blocked"), index(subs, "greatroar/blobloom")
	if bi >= 0 && li >= 0 {
		fmt.Fprintf(rep, "\nBlocked against blobloom, repetition by repetition (Blocked / blobloom, wall clock):\n\n")
		for _, row := range []struct {
			what string
			b, l []sample
		}{{"hit", hit[bi], hit[li]}, {"miss", miss[bi], miss[li]}} {
			won := 0
			var ratios []string
			for r := range row.b {
				q := row.b[r].wall / row.l[r].wall
				if q <= 1 {
					won++
				}
				ratios = append(ratios, fmt.Sprintf("%.2f", q))
			}
			fmt.Fprintf(rep, "- %s: %s; median %.1f vs %.1f ns (%.2f); Blocked at most blobloom in %d of %d repetitions\n",
				row.what, strings.Join(ratios, " "), median(walls(row.b)), median(walls(row.l)),
				median(walls(row.b))/median(walls(row.l)), won, len(row.b))
		}
	}
	fmt.Fprintf(rep, "\nDiagnostics by repetition (run order): fraction of the array on 2 MiB pages (pagemap + kpageflags; n/a without root), the array's address mod 64, and garbage collections that ended inside a timed loop (hit+miss):\n\n")
	fmt.Fprintf(rep, "| subject | huge pages | address mod 64 | GCs in timed loops |\n|:--|:--|:--|:--|\n")
	for i, s := range subs {
		var hs, as, gs []string
		for _, v := range hit[i] {
			hs = append(hs, hugeStr(v.huge))
			as = append(as, strconv.Itoa(int(v.align)))
		}
		for r := range hit[i] {
			gs = append(gs, strconv.Itoa(int(hit[i][r].gcs+miss[i][r].gcs)))
		}
		fmt.Fprintf(rep, "| %s | %s | %s | %s |\n", s.name, strings.Join(hs, " "), strings.Join(as, " "), strings.Join(gs, " "))
	}
	fmt.Fprintf(rep, "\nThe machine at each loop: ns per dependent random load in a %d MiB array (a chain of loads, each waiting for the last), timed just before each hit and miss loop, in run order; and the correlation (Pearson r) over repetitions between the loop's time and that latency. A slow repetition whose chase is slow too was the machine's.\n\n", *nFlag*10/8>>20)
	fmt.Fprintf(rep, "| subject | lookup | chase ns before each loop | chase median | r (wall time, chase) |\n|:--|:--|:--|--:|--:|\n")
	for i, s := range subs {
		for _, row := range []struct {
			what string
			v    []sample
		}{{"hit", hit[i]}, {"miss", miss[i]}} {
			var ch []float64
			for _, v := range row.v {
				ch = append(ch, v.chase)
			}
			fmt.Fprintf(rep, "| %s | %s | %s | %.1f | %.2f |\n", s.name, row.what, join(ch), median(ch), pearson(walls(row.v), ch))
		}
	}
	insert, hits, absent = nil, nil, nil
	for _, s := range subs {
		s.build = nil
	}
	runtime.GC()
	debug.FreeOSMemory()
}

var stateText = map[string]string{
	"gc":   "a garbage collection",
	"warm": "the filter's array read (in cache as far as it fits)",
	"cold": "64 MiB of other memory read (the filter out of cache)",
}

var coldBuf []uint64

// prepare puts the caches in the state -state asks for.
func prepare(s *subject) {
	var acc uint64
	switch *state {
	case "gc":
	case "warm":
		addr, size := s.words()
		for _, w := range unsafe.Slice((*uint64)(addr), size/8) {
			acc += w
		}
	case "cold":
		if coldBuf == nil {
			coldBuf = make([]uint64, 64<<20/8)
			for i := range coldBuf {
				coldBuf[i] = uint64(i)
			}
		}
		for i := 0; i < len(coldBuf); i += 8 {
			acc += coldBuf[i]
		}
	default:
		fmt.Fprintf(os.Stderr, "lookupdist: bad -state %q\n", *state)
		os.Exit(2)
	}
	stateSink += acc
	runtime.KeepAlive(stateSink) // the reads are not dead code
}

var stateSink uint64

func timed(s *subject, keys []string) (sample, int) {
	addr, size := s.words()
	v := sample{huge: hugeFraction(addr, size), align: uintptr(addr) % 64}
	v.chase = chaseNs(*nFlag * 10 / 8) // about the size of a filter of n keys at 1%
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gc := ms.NumGC
	t, c := time.Now(), threadCPU()
	cnt := s.count(keys)
	w, cc := time.Since(t), threadCPU()-c
	runtime.ReadMemStats(&ms)
	v.gcs = ms.NumGC - gc
	v.wall, v.cpu = nsPer(w, len(keys)), nsPer(cc, len(keys))
	return v, cnt
}

// batchPart times bloomkit Blocked TestMany at the big n against the batch
// limits measured in the same run, interleaved.
func batchPart(rep *strings.Builder) {
	n, p := *bigN, *pFlag
	logf("n=%d: building the batch filter", n)
	f, err := bloom.NewBlocked(n, p)
	if err != nil {
		panic(err)
	}
	buf := make([]byte, 0, 1<<26)
	var keys []string
	for lo := uint64(0); lo < n; lo += 1 << 20 {
		buf, keys = buf[:0], keys[:0]
		for i := lo; i < min(lo+1<<20, n); i++ {
			off := len(buf)
			buf = appendKey(buf, i)
			keys = append(keys, unsafe.String(&buf[off], len(buf)-off))
		}
		bloom.AddMany(f, keys)
	}
	buf, keys = nil, nil
	rng := rand.New(rand.NewPCG(*seed, n))
	hits := make([]string, *hitsN)
	for i := range hits {
		hits[i] = string(appendKey(nil, rng.Uint64N(n)))
	}
	hits = compact(hits)
	addr, size := blockedWords(f)
	lines := uint64(size / 64)
	words := unsafe.Slice((*uint64)(addr), size/8)
	// The limits read the filter's own array: the same size, the same pages.
	idx := make([]uint64, len(hits)+128)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range idx {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		idx[i], _ = bits.Mul64(x, lines)
	}
	dst := make([]bool, 0, *batch)
	var sink uint64
	type measure struct {
		name string
		run  func() int
		v    []sample
	}
	ms := []*measure{
		{name: "bloomkit Blocked TestMany", run: func() int {
			c := 0
			for ks := hits; len(ks) > 0; {
				m := min(len(ks), *batch)
				dst = bloom.TestMany(f, ks[:m], dst[:0])
				for _, b := range dst {
					if b {
						c++
					}
				}
				ks = ks[m:]
			}
			return c
		}},
		{name: "limit: prefetched random lines (no hash)", run: func() int {
			var acc uint64
			for i := range hits {
				prefetch(&words[idx[i+64]*8])
				acc += words[idx[i]*8]
			}
			sink += acc
			return len(hits)
		}},
		{name: "limit: XXH3-128 alone", run: func() int {
			var acc uint64
			for _, k := range hits {
				h := xxh3.HashString128(k)
				acc += h.Lo ^ h.Hi
			}
			sink += acc
			return len(hits)
		}},
		{name: "limit: XXH3-128 + its line, pipelined", run: func() int {
			// What any blocked lookup with this hash must do, and nothing
			// more: hash the key, prefetch the line it picks, read one word
			// of the line prefetched 32 keys earlier.
			var ring [64]uint64
			var acc uint64
			for i, k := range hits {
				h := xxh3.HashString128(k)
				b, _ := bits.Mul64(h.Hi, lines)
				prefetch(&words[b*8])
				ring[i%64] = b*8 + (h.Lo & 7)
				if i >= 32 {
					acc += words[ring[(i-32)%64]]
				}
			}
			sink += acc
			return len(hits)
		}},
	}
	var orders []string
	order := []int{0, 1, 2, 3}
	for r := 0; r < *reps; r++ {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		var o []string
		for _, i := range order {
			m := ms[i]
			o = append(o, strconv.Itoa(i+1))
			runtime.GC()
			var st runtime.MemStats
			runtime.ReadMemStats(&st)
			gc := st.NumGC
			t, c := time.Now(), threadCPU()
			cnt := m.run()
			w, cc := time.Since(t), threadCPU()-c
			runtime.ReadMemStats(&st)
			if i == 0 && cnt != len(hits) {
				fmt.Fprintf(os.Stderr, "lookupdist: TestMany: %d of %d added keys tested absent\n", len(hits)-cnt, len(hits))
				os.Exit(1)
			}
			v := sample{wall: nsPer(w, len(hits)), cpu: nsPer(cc, len(hits)), gcs: st.NumGC - gc, huge: hugeFraction(addr, size)}
			m.v = append(m.v, v)
			logf("batch rep %d %-42s %6.1f [cpu %6.1f] gc %d huge %s", r+1, m.name, v.wall, v.cpu, v.gcs, hugeStr(v.huge))
		}
		orders = append(orders, strings.Join(o, " "))
	}
	fmt.Fprintf(rep, "\n## Batch lookups, n = %s, p = %g\n\n", human(n), p)
	fmt.Fprintf(rep, "bloomkit Blocked `TestMany` (%d keys a call) over %d hit keys, and the limits, on the filter's own array (%.0f MiB, %s on 2 MiB pages): %d repetitions, each a shuffled order of the four rows (%s). Wall-clock ns/key; thread CPU in brackets. Load average at the start of this part: %s.\n\n",
		*batch, len(hits), float64(size)/(1<<20), hugeStr(hugeFraction(addr, size)), *reps, strings.Join(orders, "; "), loadavg())
	fmt.Fprintf(rep, "| row | min | median | max | repetitions in run order | thread CPU median |\n|:--|--:|--:|--:|:--|--:|\n")
	for i, m := range ms {
		w := walls(m.v)
		fmt.Fprintf(rep, "| %d. %s | %.1f | **%.1f** | %.1f | %s | %.1f |\n", i+1, m.name, minOf(w), median(w), maxOf(w), join(w), median(cpus(m.v)))
	}
	tm, lim := median(walls(ms[0].v)), median(walls(ms[3].v))
	fmt.Fprintf(rep, "\nTestMany / batch limit (row 4, which hashes as the filter must and fetches one line a key): %.2f (median), repetition by repetition %s. Against the pure memory-level-parallelism bound (row 2): %.2f; against hashing alone (row 3): %.2f.\n",
		tm/lim, ratios(ms[0].v, ms[3].v), tm/median(walls(ms[1].v)), tm/median(walls(ms[2].v)))
	if sink == 42 {
		fmt.Fprintln(os.Stderr)
	}
	runtime.KeepAlive(f)
}

func ratios(a, b []sample) string {
	var s []string
	for i := range a {
		s = append(s, fmt.Sprintf("%.2f", a[i].wall/b[i].wall))
	}
	return strings.Join(s, " ")
}

// hugeFraction returns the fraction of the 4 KiB pages of [addr, addr+size)
// that are part of a transparent huge page, from /proc/self/pagemap and
// /proc/kpageflags (root only); -1 when it cannot tell.
func hugeFraction(addr unsafe.Pointer, size uintptr) float64 {
	if addr == nil || size == 0 {
		return -1
	}
	pm, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return -1
	}
	defer pm.Close()
	kf, err := os.Open("/proc/kpageflags")
	if err != nil {
		return -1
	}
	defer kf.Close()
	first, last := uintptr(addr)/4096, (uintptr(addr)+size-1)/4096
	ents := make([]byte, (last-first+1)*8)
	if _, err := pm.ReadAt(ents, int64(first*8)); err != nil {
		return -1
	}
	var huge, seen int
	var fl [8]byte
	for i := 0; i+8 <= len(ents); i += 8 {
		e := leUint64(ents[i:])
		pfn := e & (1<<55 - 1)
		if e>>63 == 0 || pfn == 0 { // not present, or PFN hidden
			continue
		}
		seen++
		if _, err := kf.ReadAt(fl[:], int64(pfn*8)); err != nil {
			return -1
		}
		if leUint64(fl[:])&(1<<22) != 0 { // KPF_THP
			huge++
		}
	}
	if seen == 0 {
		return -1
	}
	return float64(huge) / float64(last-first+1)
}

func leUint64(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

func hugeStr(f float64) string {
	if f < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}

// Keys as in the bench: URL-like, unique per index.
func appendKey(dst []byte, i uint64) []byte {
	dst = append(dst, "https://www.site"...)
	dst = strconv.AppendUint(dst, i%99991, 10)
	dst = append(dst, ".example.com/path/to/article-"...)
	dst = strconv.AppendUint(dst, i, 10)
	return append(dst, ".html"...)
}

// compact copies keys into one arena, in order.
func compact(keys []string) []string {
	total := 0
	for _, k := range keys {
		total += len(k)
	}
	arena := make([]byte, 0, total)
	outk := make([]string, len(keys))
	for i, k := range keys {
		off := len(arena)
		arena = append(arena, k...)
		outk[i] = unsafe.String(&arena[off], len(k))
	}
	return outk
}

func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

func nsPer(d time.Duration, n int) float64 { return float64(d.Nanoseconds()) / float64(n) }

func walls(v []sample) []float64 {
	var w []float64
	for _, s := range v {
		w = append(w, s.wall)
	}
	return w
}

func cpus(v []sample) []float64 {
	var w []float64
	for _, s := range v {
		w = append(w, s.cpu)
	}
	return w
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

func maxOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func join(v []float64) string {
	var s []string
	for _, x := range v {
		s = append(s, fmt.Sprintf("%.1f", x))
	}
	return strings.Join(s, " ")
}

func index(subs []*subject, name string) int {
	for i, s := range subs {
		if s.name == name {
			return i
		}
	}
	return -1
}

func short(name string) string {
	switch name {
	case "bloomkit Blocked":
		return "Blocked"
	case "greatroar/blobloom":
		return "blobloom"
	case "bits-and-blooms/bloom/v3":
		return "bab"
	}
	return strings.TrimPrefix(name, "bloomkit ")
}

func human(n uint64) string {
	if n%1_000_000 == 0 {
		return fmt.Sprintf("%dM", n/1_000_000)
	}
	return strconv.FormatUint(n, 10)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

var start = time.Now()

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%7.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}

// pearson returns the correlation coefficient of x and y (0 when either
// does not vary).
func pearson(x, y []float64) float64 {
	n := float64(len(x))
	var sx, sy, sxx, syy, sxy float64
	for i := range x {
		sx, sy = sx+x[i], sy+y[i]
		sxx, syy, sxy = sxx+x[i]*x[i], syy+y[i]*y[i], sxy+x[i]*y[i]
	}
	vx, vy := sxx-sx*sx/n, syy-sy*sy/n
	if vx <= 0 || vy <= 0 {
		return 0
	}
	return (sxy - sx*sy/n) / math.Sqrt(vx*vy)
}
