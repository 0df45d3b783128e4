package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

type environment struct {
	command   string
	date      time.Time
	goVersion string
	cpu       string
	caches    string
	memory    string
	modules   []string
	tree      string
	loadStart string
	loadEnd   string
	took      time.Duration
}

func collectEnv() *environment {
	e := &environment{date: time.Now(), loadStart: loadavg()}
	args := []string{"go", "run", "."}
	for _, a := range os.Args[1:] {
		if strings.ContainsAny(a, " \t'\"$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		args = append(args, a)
	}
	e.command = "cd bench && " + strings.Join(args, " ")
	if out, err := exec.Command("go", "version").Output(); err == nil {
		e.goVersion = strings.TrimSpace(string(out))
	} else {
		e.goVersion = runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + " (from runtime.Version; `go version` failed)"
	}
	e.tree = bloomkitTree()
	e.cpu = cpuModel()
	e.caches = cacheSizes()
	e.memory = memTotal()
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			v := d.Version
			if d.Replace != nil {
				v = "=> " + d.Replace.Path
				if d.Replace.Version != "" {
					v += " " + d.Replace.Version
				}
			}
			e.modules = append(e.modules, d.Path+" "+v)
		}
	}
	return e
}

// bloomkitTree describes the bloomkit source being measured (the parent
// directory, through the replace directive): its commit and whether bloom/
// has uncommitted changes.
func bloomkitTree() string {
	out, err := exec.Command("git", "-C", "..", "log", "-1", "--format=%h %cd", "--date=format:%Y-%m-%d %H:%M").Output()
	if err != nil {
		return "`../` (not a git checkout)"
	}
	desc := "`../` at commit " + strings.TrimSpace(string(out))
	st, err := exec.Command("git", "-C", "..", "status", "--porcelain", "--", "bloom").Output()
	if err == nil {
		if n := len(strings.FieldsFunc(string(st), func(r rune) bool { return r == '\n' })); n > 0 {
			desc += fmt.Sprintf(", plus uncommitted changes to %d file(s) in bloom/ (measured as they were)", n)
		} else {
			desc += ", bloom/ clean"
		}
	}
	return desc
}

// cpuModel returns the model name, family and model from /proc/cpuinfo and
// the number of logical CPUs.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	defer f.Close()
	fields := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			if len(fields) > 0 {
				break // end of the first processor's block
			}
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if _, seen := fields[k]; !seen {
			fields[k] = v
		}
	}
	s := fields["model name"]
	if s == "" {
		s = "unknown"
	}
	if fam, ok := fields["cpu family"]; ok {
		s += fmt.Sprintf(" (family %s, model %s)", fam, fields["model"])
	}
	return fmt.Sprintf("%s, %d logical CPUs, GOMAXPROCS %d", s, runtime.NumCPU(), runtime.GOMAXPROCS(0))
}

// cacheSizes reads cpu0's caches from sysfs, e.g. "L1d 48K, L2 1024K, L3 32768K".
func cacheSizes() string {
	var parts []string
	for i := 0; i < 8; i++ {
		dir := fmt.Sprintf("/sys/devices/system/cpu/cpu0/cache/index%d/", i)
		level, err1 := os.ReadFile(dir + "level")
		typ, err2 := os.ReadFile(dir + "type")
		size, err3 := os.ReadFile(dir + "size")
		if err1 != nil || err2 != nil || err3 != nil {
			break
		}
		name := "L" + strings.TrimSpace(string(level))
		switch strings.TrimSpace(string(typ)) {
		case "Instruction":
			continue
		case "Data":
			name += "d"
		}
		parts = append(parts, name+" "+strings.TrimSpace(string(size)))
	}
	if len(parts) == 0 {
		return "unknown"
	}
	return strings.Join(parts, ", ") + " (per cpu0, from sysfs)"
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb uint64
			fmt.Sscan(strings.TrimSpace(v), &kb)
			return fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	return "unknown"
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

func f1(x float64) string { return fmt.Sprintf("%.1f", x) }

func render(cfg *config, env *environment, rows []*row, stats []keyStats) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	w("# bloomkit compared with other Go filter libraries\n\n")
	if cfg.quick {
		w("**Smoke run (-quick): small sizes and few repetitions; not the numbers to quote.**\n\n")
	}
	w("- Command: `%s`\n", env.command)
	w("- Date: %s (run took %s)\n", env.date.UTC().Format("2006-01-02 15:04 MST"), env.took.Round(time.Second))
	w("- Go: `%s`\n", env.goVersion)
	w("- bloomkit under test: %s\n", env.tree)
	w("- CPU: %s; caches %s; memory %s\n", env.cpu, env.caches, env.memory)
	w("- Load average (1, 5, 15 min) at start %s, at end %s\n", env.loadStart, env.loadEnd)
	w("- Modules: %s\n\n", strings.Join(env.modules, ", "))

	writeTable(&b, rows, false)
	w("\n")

	w("## Goals\n\n")
	w("Evaluated on the wall-clock medians above; the thread-CPU-time ratio follows in brackets. ")
	w("What made lookups vary from run to run, what changed, the lookups as distributions over interleaved repetitions with instruction and cache-miss counts per lookup (cachegrind), and the history of goals (a) and (c): [SPEED.md](SPEED.md).\n\n")
	w("%s\n", goalsText(cfg, rows, stats))

	w("## How each number is measured\n\n")
	w("All timings are single-goroutine, wall-clock `time.Now` differences around a loop over many keys (never per call), divided by the number of keys; ")
	w("each cell is the **median of %d repetitions**. Repetitions are interleaved (repetition 1 of every library, then repetition 2, ...) so that background load hits every library alike; ", cfg.reps)
	w("*spread* is the largest (max - min) / median among the row's timed columns. Every timing includes hashing: a string key goes in, a bool comes out.\n\n")
	w("- **Keys**: `%s<i mod %d>%s<i>%s`, unique per index i; added keys are i in [0, n), absent keys i in [n, n + absent), so every hit on an absent key is a false positive. ", keyPrefix, siteMod, keyMiddle, keySuffix)
	w("Keys are generated with `strconv.AppendUint` into one contiguous byte arena per key set (strings point into it; no per-key allocation). **Key generation is never inside a timed loop**; its measured cost is listed below so you can see it is the same for everybody.\n")
	w("- **insert ns/op**: a fresh filter per repetition, all n keys added one call per key (`AddString`; blobloom `Add(xxh3.HashString(key))`), in index order; timed per chunk of %d keys and summed. ", cfg.chunk)
	w("When n is below %d, each repetition builds ceil(%d / n) fresh filters this way and reports the mean, so that every timing covers at least that many keys (see *passes* below). ", cfg.hits, cfg.hits)
	w("For n <= %s the insert keys are generated once and kept; above, they are regenerated chunk by chunk into one reused buffer on every pass (only the insert loop over each ready chunk is timed), so that 100M keys are never in memory at once. ", human(cfg.streamAbove))
	w("For the static xor/fuse filters the column is the build: hashing all n keys with `xxh3.HashString` plus `Populate`/`PopulateBinaryFuse8`, per key; for bloomkit's frozen sets and ribbon, `AddString` for every key plus `Build`.\n")
	w("- **hit ns/op**: `TestString` (blobloom `Has(xxh3.HashString(key))`, xor `Contains(xxh3.HashString(key))`) on added keys sampled without replacement and shuffled (random order, so a big filter is visited as randomly as a real workload would), stored contiguously in that order, min(n, %d) of them, looked up *passes* times in one timed loop. All of them must test present; this is checked.\n", cfg.hits)
	w("- **miss ns/op** and **FPR measured**: the same on the absent keys, in random order; FPR = absent keys that test present / absent keys.\n")
	w("- **batch ns/key**: bloomkit `bloom.TestMany` on the hit keys, %d keys a call, reusing the result slice; blank for libraries without a batch API.\n", batchSize)
	w("- **bits/key**: actual memory: growth of `runtime.MemStats.HeapAlloc` (after `runtime.GC`) from before the filter is created to after it is filled, x 8 / n. It matched each library's own size (bit or fingerprint array) within 1%% unless a note was printed to stderr.\n")
	w("- **k**: probes per key (bloomkit `Params().K`, bits-and-blooms `K()`, blobloom `Optimize`); xor and fuse filters read 3 fingerprints. Their rate is fixed by the 8-bit fingerprint (about 0.39%%), whatever p is; they are listed once per n as the space reference for a static set.\n")

	w("- **Thread CPU time**: every loop is also timed by the CPU time of the measuring thread (`CLOCK_THREAD_CPUTIME_ID`; the goroutine is locked to its thread). It leaves out the time the thread waited for a CPU, so on a shared, oversubscribed machine it is the steadier number (cache pollution by other processes stays in both). The same table in CPU time:\n\n")
	writeTable(&b, rows, true)
	w("\n")
	w("Key sets:\n\n")
	w("| n | hit keys | passes | absent keys | mean key length | key generation ns/key | insert keys |\n")
	w("|--:|--:|--:|--:|--:|--:|:--|\n")
	for _, s := range stats {
		mode := "generated once, kept"
		if s.streamed {
			mode = fmt.Sprintf("regenerated each pass in chunks, %.1f ns/key over %d keys", s.genInsert, s.insertKeys)
		}
		w("| %s | %d | %d | %d | %.1f B | %.1f | %s |\n", human(s.n), s.hits, s.passes, s.absent, s.meanLen, s.genNs, mode)
	}
	w("\n### The machine's random-access limits, measured in this run\n\n")
	w("Plain Go loops that do nothing but the memory access (and, for the last columns, the hash), measured after each n's filters, medians of %d repetitions, wall clock (thread CPU time in brackets). ", cfg.reps)
	w("*Random load*: independent random 8-byte loads from an ordinary (4 KiB-page) array the size of bloomkit's classic filter at that n and the first p, the CPU overlapping as many as it can. ")
	w("*Prefetched line*: the same array size on huge pages (as bloomkit backs its large filters), each load's line prefetched 128 loads ahead: how fast this machine serves independent random cache lines to one core, the throughput limit of a batch lookup. ")
	w("*Dependent load*: following a random cycle through that array, one miss at a time: the latency of one random access. ")
	w("*XXH3-128* / *XXH3-64*: hashing one hit key with bloomkit's hash / blobloom's (`xxh3.HashString`), nothing else. ")
	w("*One-line lookup*: hash a hit key and load one word of the line it picks from an array the size of bloomkit's Blocked filter at each p (huge pages), one key after another as a loop of single-key calls does: the least a filter that touches one cache line per key can cost with that hash here. ")
	w("*Batch one-line lookup*: the same as a pipeline (hash the key with XXH3-128, prefetch its line, load one word of the line prefetched 32 keys earlier), as `TestMany` does: the batch limit of goal (c).\n\n")
	w("| n | array | random load ns | prefetched line ns | dependent load ns | XXH3-128 ns/key | XXH3-64 ns/key | one-line lookup, XXH3-128 | one-line lookup, XXH3-64 | batch one-line lookup, XXH3-128 |\n")
	w("|--:|--:|--:|--:|--:|--:|--:|:--|:--|:--|\n")
	for _, s := range stats {
		l := s.lim
		var o128, o64, p128 []string
		rates := cfg.rates
		if s.n == cfg.big {
			rates = []float64{cfg.bigP}
		}
		for i, p := range rates {
			if i < len(l.oneLine128) {
				o128 = append(o128, fmt.Sprintf("p=%s: %s", rateStr(p), refStr(l.oneLine128[i])))
				o64 = append(o64, fmt.Sprintf("p=%s: %s", rateStr(p), refStr(l.oneLine64[i])))
				p128 = append(p128, fmt.Sprintf("p=%s: %s", rateStr(p), refStr(l.pipe128[i])))
			}
		}
		w("| %s | %.0f MiB | %.1f | %s | %s | %s | %s | %s | %s | %s |\n", human(s.n), float64(l.bytes)/(1<<20), l.demandNs,
			refStr(l.pf), refStr(l.lat), refStr(l.hash128), refStr(l.hash64), strings.Join(o128, "; "), strings.Join(o64, "; "), strings.Join(p128, "; "))
	}
	w("\n")
	var errs []string
	for _, r := range rows {
		errs = append(errs, r.errs...)
	}
	if len(errs) > 0 {
		w("## Errors\n\n")
		for _, e := range errs {
			w("- %s\n", e)
		}
		w("\n")
	}

	w("## Microbenchmarks\n\n")
	w("`cd bench && go test -run '^$' -bench '^Benchmark(Insert|Build|Hit|Miss|Batch|KeyGen|Hash|Concurrent|AddVsSync)$' -count 10 | tee new.txt` runs the same operations at 1M keys as `go test` benchmarks (for benchstat), ")
	w("plus `BenchmarkConcurrent` (bloomkit `AddStringSync` + `TestString` at 1 and 2 goroutines) and `BenchmarkAddVsSync` (plain `AddString` against `AddStringSync`).\n")
	return b.String()
}

// writeTable writes the main table, in wall-clock or thread CPU time.
func writeTable(b *strings.Builder, rows []*row, cpu bool) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	w("| n | p | library | k | bits/key | insert ns/op | hit ns/op | miss ns/op | batch ns/key | FPR measured | spread |\n")
	w("|--:|--:|:--|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rows {
		k := "-"
		if r.k > 0 {
			k = fmt.Sprint(r.k)
		}
		ins := f1(median(r.ins.get(cpu)))
		if r.lib.static || r.lib.built {
			ins += " (build)"
		}
		batch := ""
		if len(r.batch.get(cpu)) > 0 {
			batch = f1(median(r.batch.get(cpu)))
		}
		sp := max(spread(r.ins.get(cpu)), spread(r.hit.get(cpu)), spread(r.miss.get(cpu)), spread(r.batch.get(cpu)))
		name := r.lib.name
		if len(r.errs) > 0 {
			name += " **(errors, see below)**"
		}
		w("| %s | %s | %s | %s | %.2f | %s | %s | %s | %s | %s | %.0f%% |\n",
			human(r.n), rateStr(r.p), name, k, r.bitsPerKey(), ins, f1(median(r.hit.get(cpu))), f1(median(r.miss.get(cpu))),
			batch, fprStr(r), 100*sp)
	}
}

func find(rows []*row, id string, n uint64, p float64) *row {
	for _, r := range rows {
		if r.lib.id == id && r.n == n && (r.p == p || r.lib.static) {
			return r
		}
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "**MET**"
	}
	return "**MISSED**"
}

// goalsText evaluates the three goals from this run's medians.
func goalsText(cfg *config, rows []*row, stats []keyStats) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	// floor is the random-load reference measured in this run at n: how
	// close a time is to the machine's random-access limit.
	lim := func(n uint64) *limits {
		for i := range stats {
			if stats[i].n == n {
				return &stats[i].lim
			}
		}
		return nil
	}
	floor := func(n uint64) float64 {
		if l := lim(n); l != nil {
			return l.demandNs
		}
		return 0
	}
	loads := func(ns float64, n uint64) string {
		if f := floor(n); f > 0 {
			return fmt.Sprintf("%.1f random loads", ns/f)
		}
		return "no random-load reference"
	}

	gn, note := cfg.goalN, ""
	if !contains(cfg.sizes, gn) && len(cfg.sizes) > 0 {
		gn = cfg.sizes[0]
		for _, n := range cfg.sizes {
			gn = max(gn, n)
		}
		note = fmt.Sprintf(" (measured at n=%s: this run has no n=%s)", human(gn), human(cfg.goalN))
	}

	// (a) Blocked vs blobloom.
	var lines []string
	all, any := true, false
	for pi, p := range cfg.rates {
		a, o := find(rows, "blocked", gn, p), find(rows, "blobloom", gn, p)
		if a == nil || o == nil {
			continue
		}
		any = true
		hit, miss := ratio(a.hit, o.hit, false), ratio(a.miss, o.miss, false)
		hitWon, hitReps := perRep(a.hit.wall, o.hit.wall)
		missWon, missReps := perRep(a.miss.wall, o.miss.wall)
		need := max(len(a.hit.wall)-1, 1)
		ok := hit <= 1 && miss <= 1 && hitWon >= need && missWon >= need
		all = all && ok
		lines = append(lines, fmt.Sprintf("  - p=%s: hit %.2f (%.1f vs %.1f ns) [cpu %.2f], miss %.2f (%.1f vs %.1f ns) [cpu %.2f]; by repetition (interleaved, same order each time) hit %s: <= 1 in %d of %d, miss %s: <= 1 in %d of %d; bits/key %.2f vs %.2f; FPR %s vs %s: %s. Against the random-access limit (%.1f ns a load here): bloomkit hit/miss cost %s / %s, blobloom %s / %s",
			rateStr(p), hit, median(a.hit.wall), median(o.hit.wall), ratio(a.hit, o.hit, true),
			miss, median(a.miss.wall), median(o.miss.wall), ratio(a.miss, o.miss, true),
			hitReps, hitWon, len(a.hit.wall), missReps, missWon, len(a.miss.wall),
			a.bitsPerKey(), o.bitsPerKey(), fprStr(a), fprStr(o), verdict(ok), floor(gn),
			loads(median(a.hit.wall), gn), loads(median(a.miss.wall), gn), loads(median(o.hit.wall), gn), loads(median(o.miss.wall), gn)))
		if l := lim(gn); l != nil && pi < len(l.oneLine128) {
			o128, o64 := l.oneLine128[pi], l.oneLine64[pi]
			lines = append(lines, fmt.Sprintf("    - One-line limit (hash + one random line of a filter this size, nothing else; table below): XXH3-128 %.1f ns [cpu %.1f], XXH3-64 %.1f ns [cpu %.1f]. "+
				"bloomkit hit/miss are %.2f / %.2f times its XXH3-128 limit [cpu %.2f / %.2f], blobloom %.2f / %.2f times its XXH3-64 limit [cpu %.2f / %.2f]. "+
				"A lookup that cost no more than the XXH3-128 limit would be %.2f / %.2f of blobloom's time [cpu %.2f / %.2f]",
				o128.wall, o128.cpu, o64.wall, o64.cpu,
				median(a.hit.wall)/o128.wall, median(a.miss.wall)/o128.wall, median(a.hit.cpu)/o128.cpu, median(a.miss.cpu)/o128.cpu,
				median(o.hit.wall)/o64.wall, median(o.miss.wall)/o64.wall, median(o.hit.cpu)/o64.cpu, median(o.miss.cpu)/o64.cpu,
				o128.wall/median(o.hit.wall), o128.wall/median(o.miss.wall), o128.cpu/median(o.hit.cpu), o128.cpu/median(o.miss.cpu)))
		}
	}
	if any {
		w("- (a) bloomkit Blocked time / blobloom time at n=%s%s, goal <= 1 for hit and miss, in the median and in all repetitions but one: %s\n", human(gn), note, verdict(all))
		w("%s\n", strings.Join(lines, "\n"))
	} else {
		w("- (a) bloomkit Blocked / blobloom: not measured in this run\n")
	}

	// (b) bits-and-blooms vs bloomkit Filter.
	lines, all, any = nil, true, false
	for _, p := range cfg.rates {
		o, a := find(rows, "bab", gn, p), find(rows, "filter", gn, p)
		if a == nil || o == nil {
			continue
		}
		any = true
		hit, miss, ins := ratio(o.hit, a.hit, false), ratio(o.miss, a.miss, false), ratio(o.ins, a.ins, false)
		ok := hit >= 1.5 && miss >= 1.5 && ins >= 1.5
		all = all && ok
		lines = append(lines, fmt.Sprintf("  - p=%s: hit %.2fx (%.1f vs %.1f ns) [cpu %.2fx], miss %.2fx (%.1f vs %.1f ns) [cpu %.2fx], insert %.2fx (%.1f vs %.1f ns) [cpu %.2fx]; bits/key %.2f vs %.2f, k %d vs %d; FPR %s vs %s: %s",
			rateStr(p), hit, median(o.hit.wall), median(a.hit.wall), ratio(o.hit, a.hit, true),
			miss, median(o.miss.wall), median(a.miss.wall), ratio(o.miss, a.miss, true),
			ins, median(o.ins.wall), median(a.ins.wall), ratio(o.ins, a.ins, true),
			o.bitsPerKey(), a.bitsPerKey(), o.k, a.k, fprStr(o), fprStr(a), verdict(ok)))
	}
	if any {
		w("- (b) bits-and-blooms time / bloomkit Filter time at n=%s%s, goal >= 1.5x for hit, miss and insert at the same memory and rate: %s\n", human(gn), note, verdict(all))
		w("%s\n", strings.Join(lines, "\n"))
	} else {
		w("- (b) bits-and-blooms / bloomkit Filter: not measured in this run\n")
	}

	// (c) TestMany at the big n. The goal names no layout; the blocked
	// one is the fast batch path, the classic one is shown too.
	cnote := ""
	if cfg.big != 100_000_000 {
		cnote = " (the goal is stated for n=100M)"
	}
	measured := false
	for _, g := range []struct {
		id   string
		goal float64
	}{{"blocked", 0}, {"filter", 35}} {
		r := find(rows, g.id, cfg.big, cfg.bigP)
		if cfg.big == 0 || r == nil || !r.big {
			continue
		}
		measured = true
		v := median(r.batch.wall)
		if l := lim(cfg.big); g.goal == 0 && l != nil && len(l.pipe128) > 0 {
			// The blocked layout's goal is relative: within 1.5 times the
			// batch limit this run measured.
			pl := l.pipe128[0]
			w("- (c) %s TestMany at n=%s%s, p=%s, %d keys a call: %.1f ns/key [cpu %.1f]; batch limit (XXH3-128 of each key and its one line, prefetched 32 keys ahead, nothing else; table below) %.1f ns/key [cpu %.1f]: %.2f times the limit [cpu %.2f], goal <= 1.5: %s\n",
				r.lib.name, human(cfg.big), cnote, rateStr(cfg.bigP), batchSize, v, median(r.batch.cpu), pl.wall, pl.cpu, v/pl.wall, median(r.batch.cpu)/pl.cpu, verdict(v <= 1.5*pl.wall))
		} else {
			w("- (c) %s TestMany at n=%s%s, p=%s, %d keys a call: %.1f ns/key [cpu %.1f], goal <= %.0f ns/key: %s. Against the random-access limit (%.1f ns a load here, %d loads a key): %s a key\n",
				r.lib.name, human(cfg.big), cnote, rateStr(cfg.bigP), batchSize, v, median(r.batch.cpu), g.goal, verdict(v <= g.goal),
				floor(cfg.big), probeLoads(r), loads(v, cfg.big))
		}
		if l := lim(cfg.big); l != nil {
			mem := float64(probeLoads(r)) * l.pf.wall
			memC := float64(probeLoads(r)) * l.pf.cpu
			w("  - Batch limit: hashing alone costs %.1f ns/key [cpu %.1f] (XXH3-128), and %d prefetched random lines %.1f ns [cpu %.1f] (%.1f each); a pipeline that overlapped them perfectly would take the larger, %.1f ns/key [cpu %.1f]. Measured: %.2f times that limit [cpu %.2f]\n",
				l.hash128.wall, l.hash128.cpu, probeLoads(r), mem, memC, l.pf.wall, max(l.hash128.wall, mem), max(l.hash128.cpu, memC),
				v/max(l.hash128.wall, mem), median(r.batch.cpu)/max(l.hash128.cpu, memC))
		}
	}
	if !measured {
		w("- (c) bloomkit TestMany at n=100M: not measured in this run\n")
	}
	return b.String()
}

// perRep compares a and b repetition by repetition (wall clock): how many
// times a took at most b's time, and the ratios a/b in run order.
func perRep(a, b []float64) (won int, ratios string) {
	var r []string
	for i := range min(len(a), len(b)) {
		if a[i] <= b[i] {
			won++
		}
		r = append(r, fmt.Sprintf("%.2f", a[i]/b[i]))
	}
	return won, strings.Join(r, " ")
}

// ratio is median(a) / median(b) in wall-clock or CPU time.
func ratio(a, b series, cpu bool) float64 { return median(a.get(cpu)) / median(b.get(cpu)) }

func contains(s []uint64, v uint64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// probeLoads is how many cache lines a lookup of r's library touches: one
// for the blocked layout, k for the classic one.
func probeLoads(r *row) int {
	if r.lib.id == "blocked" {
		return 1
	}
	return r.k
}

func refStr(r ref) string { return fmt.Sprintf("%.1f [%.1f]", r.wall, r.cpu) }
