// Command bench compares bloomkit's filters with other Go filter libraries
// and writes a Markdown report. Run it as
//
//	cd bench && go run . -out RESULTS.md
//
// (or `make bench` from the repository root); -quick is a smoke run of well
// under a minute. See -help for the size flags.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

type config struct {
	out         string
	quick       bool
	sizes       []uint64
	rates       []float64
	big         uint64
	bigP        float64
	reps        int
	hits        int
	absent      int
	chunk       int
	streamAbove uint64
	goalN       uint64
	libs        map[string]bool
	seed        uint64
}

// series holds one timing, in ns per key, a value a repetition: by the wall
// clock (time.Now) and by the CPU time of the measuring thread.
type series struct{ wall, cpu []float64 }

func (s *series) add(wall, cpu time.Duration, keys uint64) {
	s.wall = append(s.wall, nsPer(wall, keys))
	s.cpu = append(s.cpu, nsPer(cpu, keys))
}

func (s *series) get(cpu bool) []float64 {
	if cpu {
		return s.cpu
	}
	return s.wall
}

// row is one line of the table: one library at one n and p.
type row struct {
	lib        *lib
	n          uint64
	p          float64 // 0 for static filters
	big        bool
	ins        series
	hit        series
	miss       series
	batch      series
	heap       uint64 // measured bytes (first repetition)
	nominal    uint64
	k          int
	fp, absent int
	errs       []string
}

// keyStats describes the key sets of one n.
type keyStats struct {
	n          uint64
	hits       int
	absent     int
	meanLen    float64
	genNs      float64
	streamed   bool
	genInsert  float64 // ns/key of generating the insert keys
	insertKeys uint64
	lim        limits // the machine's random-access references at n
	passes     int    // inserts and hit-lookup loops per repetition
}

var start = time.Now()

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%7.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}

func main() {
	// The timed loops run on this goroutine; keep it on one thread so that
	// the thread's CPU time is its CPU time.
	runtime.LockOSThread()
	cfg, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	env := collectEnv()
	var rows []*row
	var stats []keyStats
	for _, n := range cfg.sizes {
		r, s := runSize(cfg, n, cfg.rates, false)
		rows, stats = append(rows, r...), append(stats, s)
	}
	if cfg.big > 0 {
		r, s := runSize(cfg, cfg.big, []float64{cfg.bigP}, true)
		rows, stats = append(rows, r...), append(stats, s)
	}
	env.loadEnd = loadavg()
	env.took = time.Since(start)
	report := render(cfg, env, rows, stats)
	if cfg.out == "-" {
		fmt.Print(report)
	} else {
		if err := os.WriteFile(cfg.out, []byte(report), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		logf("wrote %s", cfg.out)
	}
	fmt.Fprint(os.Stderr, goalsText(cfg, rows, stats))
	logf("done in %s", env.took.Round(time.Second))
}

var cpuprofile string

func parseFlags() (*config, error) {
	cfg := &config{}
	var sizes, rates, libsFlag string
	flag.StringVar(&cfg.out, "out", "RESULTS.md", "write the Markdown report here (- for stdout)")
	flag.BoolVar(&cfg.quick, "quick", false, "smoke run: n=1M, big n=3M, 3 repetitions, 1M hit and absent keys (explicit flags still win)")
	flag.StringVar(&sizes, "n", "1000000,10000000", "comma-separated key counts for the full comparison")
	flag.StringVar(&rates, "p", "0.01,0.001", "comma-separated target false-positive rates")
	flag.Uint64Var(&cfg.big, "big", 100_000_000, "key count of the extra row for the fast variants (0: none)")
	flag.Float64Var(&cfg.bigP, "bigp", 0.01, "target false-positive rate of the big row")
	flag.IntVar(&cfg.reps, "reps", 7, "repetitions per cell, interleaved; the median is reported, and goal (a) is judged repetition by repetition too")
	flag.IntVar(&cfg.hits, "hits", 4_000_000, "hit keys per n: a sample of min(n, hits) added keys; for n < hits the inserts and hit lookups are repeated to cover at least hits keys a timing")
	flag.IntVar(&cfg.absent, "absent", 2_000_000, "absent keys looked up per repetition (miss time and FPR)")
	flag.IntVar(&batchSize, "batch", 1024, "keys per bloom.TestMany call")
	flag.IntVar(&cfg.chunk, "chunk", 1<<20, "insert keys are generated and timed in chunks of this many")
	flag.Uint64Var(&cfg.streamAbove, "stream-above", 20_000_000, "for n above this, insert keys are regenerated chunk by chunk on every pass instead of kept")
	flag.Uint64Var(&cfg.goalN, "goal-n", 10_000_000, "n at which goals (a) and (b) are evaluated (falls back to the largest -n)")
	flag.StringVar(&libsFlag, "libs", "", "comma-separated subset of: filter,blocked,bab,blobloom,xor8,fuse8,frozen8,frozen16,ribbon (default all)")
	flag.Uint64Var(&cfg.seed, "seed", 1, "seed of the key sampling")
	flag.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if flag.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	if cfg.quick {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		def := func(name string, apply func()) {
			if !set[name] {
				apply()
			}
		}
		def("n", func() { sizes = "1000000" })
		def("big", func() { cfg.big = 3_000_000 })
		def("reps", func() { cfg.reps = 3 })
		def("hits", func() { cfg.hits = 1_000_000 })
		def("absent", func() { cfg.absent = 1_000_000 })
		def("stream-above", func() { cfg.streamAbove = 2_000_000 })
	}
	var err error
	if cfg.sizes, err = parseList(sizes, func(s string) (uint64, error) {
		f, err := strconv.ParseFloat(s, 64) // accepts 1e6
		if err != nil || f < 1 || f != float64(uint64(f)) || f > 1<<32 {
			return 0, fmt.Errorf("bad -n value %q (want an integer in [1, 2^32])", s)
		}
		return uint64(f), nil
	}); err != nil {
		return nil, err
	}
	if cfg.rates, err = parseList(rates, func(s string) (float64, error) {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || !(f > 0 && f < 1) {
			return 0, fmt.Errorf("bad -p value %q (want a rate in (0, 1))", s)
		}
		return f, nil
	}); err != nil {
		return nil, err
	}
	if cfg.big > 1<<32 || !(cfg.bigP > 0 && cfg.bigP < 1) {
		return nil, fmt.Errorf("bad -big or -bigp")
	}
	if cfg.reps < 1 || cfg.hits < 1 || cfg.absent < 1 || batchSize < 1 || cfg.chunk < 1 {
		return nil, fmt.Errorf("-reps, -hits, -absent, -batch and -chunk must be positive")
	}
	if libsFlag != "" {
		cfg.libs = map[string]bool{}
		for _, id := range strings.Split(libsFlag, ",") {
			if !knownLib(id) {
				return nil, fmt.Errorf("unknown library %q in -libs", id)
			}
			cfg.libs[id] = true
		}
	}
	return cfg, nil
}

func knownLib(id string) bool {
	for _, l := range libs {
		if l.id == id {
			return true
		}
	}
	return false
}

func parseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := parse(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// runSize measures every selected library at n keys for each rate.
func runSize(cfg *config, n uint64, rates []float64, big bool) ([]*row, keyStats) {
	rng := rand.New(rand.NewPCG(cfg.seed, n))
	stream := n > cfg.streamAbove
	logf("n=%s: generating keys (insert keys %s)", human(n), map[bool]string{true: "streamed in chunks", false: "kept"}[stream])
	src := newInsertSource(n, cfg.chunk, stream)

	var hitSet, absSet keySet
	idx := sample(rng, n, cfg.hits)
	genHit := hitSet.fill(len(idx), func(j int) uint64 { return uint64(idx[j]) })
	idx = sample(rng, uint64(cfg.absent), cfg.absent)
	genAbs := absSet.fill(len(idx), func(j int) uint64 { return n + uint64(idx[j]) })
	idx = nil
	st := keyStats{n: n, hits: len(hitSet.keys), absent: len(absSet.keys), streamed: stream}
	st.genNs = float64((genHit + genAbs).Nanoseconds()) / float64(st.hits+st.absent)
	st.meanLen = float64(hitSet.bytes+absSet.bytes) / float64(st.hits+st.absent)
	logf("n=%s: %d hit keys, %d absent keys, mean key length %.1f B, key generation %.1f ns/key",
		human(n), st.hits, st.absent, st.meanLen, st.genNs)

	var rows []*row
	for i, p := range rates {
		for _, l := range libs {
			if cfg.libs != nil && !cfg.libs[l.id] || big && !l.big || l.static && (big || i > 0) {
				continue
			}
			r := &row{lib: l, n: n, p: p, big: big}
			if l.static {
				r.p = 0
			}
			rows = append(rows, r)
		}
	}
	dst := make([]bool, 0, batchSize)
	// Small n: repeat inserts and hit lookups until each timing covers at
	// least cfg.hits keys.
	passes := int((uint64(cfg.hits) + n - 1) / n)
	st.passes = passes
	// Repetitions are interleaved across libraries, so that background load
	// on the machine affects every library alike.
	for rep := 0; rep < cfg.reps; rep++ {
		for _, r := range rows {
			dst = measure(r, src, hitSet.keys, absSet.keys, dst, rep, passes)
			logf("n=%s p=%s rep %d/%d %-24s insert %6.1f  hit %6.1f  miss %6.1f  batch %6s ns/key  FPR %s  (cpu %.1f %.1f %.1f)",
				human(n), rateStr(r.p), rep+1, cfg.reps, r.lib.name, last(r.ins.wall), last(r.hit.wall), last(r.miss.wall),
				batchStr(r), fprStr(r), last(r.ins.cpu), last(r.hit.cpu), last(r.miss.cpu))
			for _, e := range r.errs {
				logf("ERROR: %s", e)
			}
		}
	}
	st.genInsert = src.genNsPerKey()
	st.insertKeys = src.genKeys
	hits := hitSet.keys
	src, absSet = nil, keySet{}
	runtime.GC()
	logf("n=%s: measuring the random-access references", human(n))
	st.lim = measureLimits(n, rates, hits, cfg.reps)
	logf("n=%s: over %.1f MiB: %.1f ns per random load, %.1f per prefetched line, %.1f per dependent load; XXH3-128 %.1f, XXH3-64 %.1f ns/key; one-line lookups %v / %v",
		human(n), float64(st.lim.bytes)/(1<<20), st.lim.demandNs, st.lim.pf.wall, st.lim.lat.wall, st.lim.hash128.wall, st.lim.hash64.wall, st.lim.oneLine128, st.lim.oneLine64)
	return rows, st
}

func last(v []float64) float64 { return v[len(v)-1] }

func batchStr(r *row) string {
	if len(r.batch.wall) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", last(r.batch.wall))
}

func heapAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// measure builds a fresh filter, times inserting all n keys, then times
// looking up the hit keys, the absent keys, and (if the library has one)
// the hit keys through the batch API. It appends one value to each series.
// So that small filters are timed over enough work, the insert is done
// passes times (a fresh filter each time, all timed) and each lookup loop
// goes over its keys passes times.
func measure(r *row, src *insertSource, hits, absent []string, dst []bool, rep, passes int) []bool {
	var insW, insC time.Duration
	var in inst
	var before uint64
	for pass := 0; pass < passes; pass++ {
		in = nil
		runtime.GC()
		before = heapAlloc()
		var err error
		in, err = r.lib.make(r.n, r.p)
		if err != nil {
			panic(fmt.Sprintf("%s: %v", r.lib.name, err))
		}
		src.each(func(keys []string) {
			t := now()
			in.add(keys)
			w, c := t.since()
			insW, insC = insW+w, insC+c
		})
		t := now()
		err = in.finish()
		w, c := t.since()
		insW, insC = insW+w, insC+c
		if err != nil {
			panic(fmt.Sprintf("%s: build: %v", r.lib.name, err))
		}
	}
	r.ins.add(insW, insC, r.n*uint64(passes))
	runtime.GC()
	if rep == 0 {
		r.heap = heapAlloc() - before
		r.nominal = in.nominalBytes()
		r.k = in.probes()
		if d := float64(r.heap) - float64(r.nominal); d > 0.01*float64(r.nominal) || d < -0.01*float64(r.nominal) {
			logf("note: %s heap growth %d B differs from its nominal size %d B", r.lib.name, r.heap, r.nominal)
		}
	}

	lookups := uint64(len(hits) * passes)
	t := now()
	cnt := 0
	for pass := 0; pass < passes; pass++ {
		cnt += in.count(hits)
	}
	w, c := t.since()
	r.hit.add(w, c, lookups)
	if cnt != len(hits)*passes {
		r.errs = append(r.errs, fmt.Sprintf("%s n=%d: %d of %d added keys tested absent", r.lib.name, r.n, len(hits)-cnt/passes, len(hits)))
	}

	t = now()
	fp := in.count(absent)
	w, c = t.since()
	r.miss.add(w, c, uint64(len(absent)))
	if rep == 0 {
		r.fp, r.absent = fp, len(absent)
	} else if fp != r.fp {
		r.errs = append(r.errs, fmt.Sprintf("%s n=%d: false positives changed between repetitions: %d then %d", r.lib.name, r.n, r.fp, fp))
	}

	if r.lib.batch {
		t = now()
		cnt = 0
		for pass := 0; pass < passes; pass++ {
			var c int
			c, dst = in.countBatch(hits, dst)
			cnt += c
		}
		w, c = t.since()
		r.batch.add(w, c, lookups)
		if cnt != len(hits)*passes {
			r.errs = append(r.errs, fmt.Sprintf("%s n=%d: batch: %d of %d added keys tested absent", r.lib.name, r.n, len(hits)-cnt/passes, len(hits)))
		}
	}
	return dst
}

// stamp is a point in time by the wall clock and by the CPU time of the
// calling thread (main locks itself to one thread, so that this is the
// measuring goroutine's CPU time).
type stamp struct {
	wall time.Time
	cpu  time.Duration
}

func now() stamp { return stamp{time.Now(), threadCPU()} }

func (s stamp) since() (wall, cpu time.Duration) {
	c := threadCPU()
	return time.Since(s.wall), c - s.cpu
}

func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

func nsPer(d time.Duration, n uint64) float64 { return float64(d.Nanoseconds()) / float64(n) }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// spread is (max - min) / median of v.
func spread(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return (hi - lo) / median(v)
}

func (r *row) bitsPerKey() float64 { return float64(r.heap) * 8 / float64(r.n) }
func (r *row) fpr() float64        { return float64(r.fp) / float64(r.absent) }

func fprStr(r *row) string { return fmt.Sprintf("%.3f%%", 100*r.fpr()) }

func human(n uint64) string {
	switch {
	case n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n%1_000 == 0:
		return fmt.Sprintf("%dk", n/1_000)
	}
	return strconv.FormatUint(n, 10)
}

func rateStr(p float64) string {
	if p == 0 {
		return "fixed"
	}
	return strconv.FormatFloat(100*p, 'g', -1, 64) + "%"
}
