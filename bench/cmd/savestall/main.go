// Command savestall measures how long `bloom serve` keeps clients waiting
// while it saves, and how much memory the save needs.
//
// It builds ./cmd/bloom from the repository, starts `bloom serve`, reserves
// one non-scaling Bloom filter for -items items at 1% (600M items ≈ 690 MiB)
// and fills every byte of it with random data through BF.LOADCHUNK, so every
// page is resident. Then, for each scenario, a client sends BF.EXISTS every
// 2 ms (-interval) for 2 s of idle baseline (-idle) and while the server runs
//
//   - BGSAVE,
//   - BGREWRITEAOF (reported as unsupported if the server answers "unknown
//     command"), and
//   - BGSAVE while a second client sends BF.ADD back to back;
//
// each scenario -reps times, interleaved (the ones without writes first,
// so memory freed by a save with writes cannot hide growth). A save is over
// when INFO persistence (polled every 10 ms on a third connection) shows
// neither rdb_bgsave_in_progress, aof_rewrite_in_progress nor
// aof_rewrite_scheduled. Latency is measured per request from send to
// reply; "during" counts every request that overlapped the save. Extra
// memory is the peak of the server's VmRSS (sampled every 5 ms) minus its
// RSS just before the command, or, if larger, the peak growth of its Go
// heap in use (INFO memory used_memory_go_heap, polled with the
// persistence section): a Go process reuses heap it freed in an earlier
// run without growing its RSS. VmHWM (reset through /proc/pid/clear_refs
// before the command) and the server's own count of bytes copied on write
// (rdb_last_cow_size / aof_last_cow_size, when it reports them) are
// reported beside it.
//
// The same runs against redis-server (when installed; -redis=false skips
// it) holding a string of the same size written with SETRANGE of random
// bytes, probed with GETBIT and written with SETBIT at random offsets.
// Redis forks to save, so its extra memory is the parent's RSS growth plus
// the private memory (Private_Clean + Private_Dirty of smaps_rollup) of
// its children, sampled the same way; Redis's own rdb_last_cow_size /
// aof_last_cow_size is reported beside it. With Redis's default
// rdbcompression yes the child also allocates an LZF output buffer as large
// as the value (compressing random bytes fails only at the end), so Redis
// gets a fourth scenario: BGSAVE with rdbcompression no.
//
// Goal: during BGSAVE without writes, the maximum BF.EXISTS
// latency ≤ 25 ms and extra memory ≤ 10% of the filter. The report, with
// the command that produced it, goes to SAVESTALL.md (-out). From bench/:
//
//	go run ./cmd/savestall            # 600M items (≈ 690 MiB), needs ~3 GiB RAM and ~3 GiB disk
//	go run ./cmd/savestall -quick     # 60M items (≈ 69 MiB)
//
// or `make savestall` (SAVESTALLFLAGS=-quick) in the repository root.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bloomkit/bloomkit/redisbloom"
	"github.com/redis/go-redis/v9"

	"github.com/bloomkit/bloomkit/bench/internal/bloomproc"
)

type config struct {
	repo        string
	items       uint64
	errRate     float64
	reps        int
	interval    time.Duration
	idle        time.Duration
	withRedis   bool
	out         string
	appendfsync string
	seed        uint64
}

func main() {
	var cfg config
	var quick bool
	var timeout time.Duration
	flag.StringVar(&cfg.repo, "repo", "..", "bloomkit repository root (builds ./cmd/bloom there)")
	flag.Uint64Var(&cfg.items, "items", 600_000_000, "capacity of the filter (NONSCALING, -error)")
	flag.BoolVar(&quick, "quick", false, "a 60M-item filter (≈ 69 MiB) instead")
	flag.Float64Var(&cfg.errRate, "error", 0.01, "false-positive rate of the filter")
	flag.IntVar(&cfg.reps, "reps", 3, "repetitions of each scenario (interleaved)")
	flag.DurationVar(&cfg.interval, "interval", 2*time.Millisecond, "time between two probe requests")
	flag.DurationVar(&cfg.idle, "idle", 2*time.Second, "probing before each save: the baseline that shows the machine's own noise")
	flag.BoolVar(&cfg.withRedis, "redis", true, "also measure redis-server (skipped with a note when not installed)")
	flag.StringVar(&cfg.out, "out", "SAVESTALL.md", "markdown report to write ('' for none)")
	flag.StringVar(&cfg.appendfsync, "appendfsync", "everysec", "appendfsync of both servers")
	flag.Uint64Var(&cfg.seed, "seed", 1, "random seed (data, probe keys)")
	flag.DurationVar(&timeout, "timeout", time.Hour, "give up after this long")
	flag.Parse()
	if quick && !isFlagSet("items") {
		cfg.items = 60_000_000
	}
	if cfg.items < 1 || cfg.reps < 1 || cfg.interval <= 0 || cfg.idle < 100*time.Millisecond || !(cfg.errRate > 0 && cfg.errRate < 1) {
		fmt.Fprintln(os.Stderr, "savestall: need -items ≥ 1, -reps ≥ 1, -interval > 0, -idle ≥ 100ms, 0 < -error < 1")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	err := run(ctx, cfg)
	cancel()
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "savestall:", err)
		os.Exit(1)
	}
}

func isFlagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// result is one server's measurements by scenario.
type result struct {
	t       *target
	fill    time.Duration
	version string
	by      map[string][]*measurement
	order   []scenario
}

var scenarios = []scenario{
	{cmd: "BGSAVE"},
	{cmd: "BGREWRITEAOF"},
	{cmd: "BGSAVE", writer: true},
	{cmd: "BGSAVE", redisNoCompress: true},
}

func run(ctx context.Context, cfg config) error {
	start := time.Now()
	tmp, err := os.MkdirTemp("", "savestall-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := bloomproc.Build(ctx, cfg.repo, tmp)
	if err != nil {
		return err
	}
	size, err := redisbloom.BloomCreateBytes(cfg.items, cfg.errRate, true)
	if err != nil {
		return fmt.Errorf("size of a %d-item filter: %w", cfg.items, err)
	}
	fmt.Printf("savestall: filter of %d items at %g: %.1f MiB\n", cfg.items, cfg.errRate, float64(size)/(1<<20))

	var results []*result
	ours, err := runOurs(ctx, cfg, bin, tmp, int64(size))
	if err != nil {
		return fmt.Errorf("bloom serve: %w", err)
	}
	results = append(results, ours)
	redisNote := ""
	if cfg.withRedis {
		if _, err := exec.LookPath("redis-server"); err != nil {
			redisNote = "redis-server is not installed (apt-get install redis-server): no comparison."
			fmt.Println("savestall:", redisNote)
		} else {
			r, err := runRedis(ctx, cfg, tmp, int64(size))
			if err != nil {
				return fmt.Errorf("redis-server: %w", err)
			}
			results = append(results, r)
		}
	}
	for _, r := range results {
		for _, line := range r.lines(cfg.interval) {
			fmt.Println(line)
		}
	}
	if cfg.out == "" {
		return nil
	}
	if err := writeReport(cfg, results, redisNote, time.Since(start)); err != nil {
		return err
	}
	fmt.Println("savestall: report written to", cfg.out)
	return nil
}

// randomChunks calls f with consecutive random chunks covering size bytes.
func randomChunks(size int64, seed uint64, f func(off int64, b []byte) error) error {
	rng := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), byte(seed >> 24)})
	buf := make([]byte, redisbloom.MaxChunk)
	for off := int64(0); off < size; off += int64(len(buf)) {
		b := buf[:min(int64(len(buf)), size-off)]
		rng.Read(b)
		if err := f(off, b); err != nil {
			return err
		}
	}
	return nil
}

func do(ctx context.Context, c *redis.Client, args ...any) *redis.Cmd {
	ctx, cancel := context.WithTimeout(ctx, clientTimeout)
	defer cancel()
	return c.Do(ctx, args...)
}

func runOurs(ctx context.Context, cfg config, bin, tmp string, size int64) (*result, error) {
	dir := filepath.Join(tmp, "ours")
	p, err := startProc(ctx, "bloom serve", filepath.Join(tmp, "ours.log"),
		bin, "serve", "--addr", "{addr}", "--dir", dir, "--appendfsync", cfg.appendfsync, "--log-level", "warn")
	if err != nil {
		return nil, err
	}
	defer func() { p.stop(); os.RemoveAll(dir) }()
	c := redis.NewClient(bloomproc.ClientOptions(p.addr, clientTimeout))
	defer c.Close()
	const key = "bf:big"
	t0 := time.Now()
	if err := do(ctx, c, "BF.RESERVE", key, strconv.FormatFloat(cfg.errRate, 'g', -1, 64), cfg.items, "NONSCALING").Err(); err != nil {
		return nil, fmt.Errorf("BF.RESERVE: %w", err)
	}
	// BF.LOADCHUNK with iterator it writes data at byte it-len(data)-1 of
	// the bit array (the iterator SCANDUMP returns is one past the chunk).
	err = randomChunks(size, cfg.seed, func(off int64, b []byte) error {
		if err := do(ctx, c, "BF.LOADCHUNK", key, 1+off+int64(len(b)), b).Err(); err != nil {
			return fmt.Errorf("BF.LOADCHUNK at byte %d: %w", off, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The dump must end exactly where the filling ended.
	if v, err := do(ctx, c, "BF.SCANDUMP", key, 1+size).Slice(); err != nil || len(v) != 2 || v[0] != int64(0) {
		return nil, fmt.Errorf("BF.SCANDUMP past the filled bytes: %v %v (the filter is not %d bytes)", v, err, size)
	}
	r := &result{
		t: &target{name: "bloom serve", p: p, dataBytes: size,
			what: fmt.Sprintf("one NONSCALING filter, %d items at %g (BF.RESERVE), random bits", cfg.items, cfg.errRate),
			read: func(rng *rand.Rand) []any {
				return []any{"BF.EXISTS", key, "probe:" + strconv.FormatUint(rng.Uint64(), 36)}
			},
			write: func(rng *rand.Rand) []any {
				return []any{"BF.ADD", key, "new:" + strconv.FormatUint(rng.Uint64(), 36)}
			}},
		fill: time.Since(t0),
	}
	if m, err := infoMap(ctx, c, "server"); err == nil {
		r.version = "bloomkit " + m["bloomkit_version"] + " (" + gitDescribe(cfg.repo) + ")"
	}
	fmt.Printf("savestall: bloom serve filled %.1f MiB in %v\n", float64(size)/(1<<20), r.fill.Round(time.Millisecond))
	return r, r.measureAll(ctx, cfg)
}

func runRedis(ctx context.Context, cfg config, tmp string, size int64) (*result, error) {
	dir := filepath.Join(tmp, "redis")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p, err := startProc(ctx, "redis-server", filepath.Join(tmp, "redis.log"),
		"redis-server", "--port", "{port}", "--bind", "127.0.0.1", "--dir", dir, "--save", "",
		"--appendonly", "yes", "--appendfsync", cfg.appendfsync, "--daemonize", "no",
		// Strings (and SETBIT/GETBIT offsets) are capped at 512 MB by default.
		"--proto-max-bulk-len", strconv.FormatInt(max(size+1<<20, 512<<20), 10))
	if err != nil {
		return nil, err
	}
	defer func() { p.stop(); os.RemoveAll(dir) }()
	c := redis.NewClient(bloomproc.ClientOptions(p.addr, clientTimeout))
	defer c.Close()
	const key = "bits"
	t0 := time.Now()
	err = randomChunks(size, cfg.seed, func(off int64, b []byte) error {
		if err := do(ctx, c, "SETRANGE", key, off, b).Err(); err != nil {
			return fmt.Errorf("SETRANGE at byte %d: %w", off, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n, err := do(ctx, c, "STRLEN", key).Int64(); err != nil || n != size {
		return nil, fmt.Errorf("STRLEN %s = %d (%v), want %d", key, n, err, size)
	}
	bits := size * 8
	r := &result{
		t: &target{name: "redis-server", p: p, dataBytes: size, forks: true,
			what: fmt.Sprintf("one string of %d bytes (SETRANGE; proto-max-bulk-len raised to hold it), random bits", size),
			read: func(rng *rand.Rand) []any {
				return []any{"GETBIT", key, rng.Int64N(bits)}
			},
			write: func(rng *rand.Rand) []any {
				return []any{"SETBIT", key, rng.Int64N(bits), 1}
			}},
		fill: time.Since(t0),
	}
	if m, err := infoMap(ctx, c, "server"); err == nil {
		r.version = "redis " + m["redis_version"]
	}
	fmt.Printf("savestall: redis-server filled %.1f MiB in %v\n", float64(size)/(1<<20), r.fill.Round(time.Millisecond))
	return r, r.measureAll(ctx, cfg)
}

// measureAll runs every scenario -reps times, interleaved: first the
// scenarios without writes, then those with a writer. Memory copied on
// write and freed stays with a Go process and is reused without new RSS,
// so a save without writes measured after one with writes could hide its
// own growth.
func (r *result) measureAll(ctx context.Context, cfg config) error {
	r.by = map[string][]*measurement{}
	for _, sc := range scenarios {
		if !sc.redisNoCompress || r.t.forks {
			r.order = append(r.order, sc)
		}
	}
	skip := map[string]bool{}
	for _, writer := range []bool{false, true} {
		if err := r.measureGroup(ctx, cfg, writer, skip); err != nil {
			return err
		}
	}
	return nil
}

func (r *result) measureGroup(ctx context.Context, cfg config, writer bool, skip map[string]bool) error {
	for rep := 0; rep < cfg.reps; rep++ {
		for i, sc := range r.order {
			if skip[sc.String()] || sc.writer != writer {
				continue
			}
			m, err := measure(ctx, r.t, sc, cfg.interval, cfg.idle, cfg.seed+uint64(rep*10+i))
			if err != nil {
				return fmt.Errorf("%s, repetition %d: %w", sc, rep+1, err)
			}
			if m.unsupported {
				skip[sc.String()] = true
				fmt.Printf("savestall: %s: %s is not supported (unknown command)\n", r.t.name, sc.cmd)
			} else {
				fmt.Printf("savestall: %s %-20s rep %d: save %v, probe max %v p99 %v p50 %v (%d probes), extra memory %.1f MiB (%.1f%%)%s\n",
					r.t.name, sc, rep+1, m.saveTime.Round(time.Millisecond), pct(m.during, 1).Round(10*time.Microsecond),
					pct(m.during, .99).Round(10*time.Microsecond), pct(m.during, .5).Round(10*time.Microsecond), len(m.during),
					float64(m.extra)/(1<<20), 100*float64(m.extra)/float64(r.t.dataBytes), slowNote(m.slow))
			}
			r.by[sc.String()] = append(r.by[sc.String()], m)
		}
	}
	return nil
}

// summary of one scenario over its repetitions.
type summary struct {
	unsupported                   bool
	reps                          int
	saveMedian                    time.Duration
	maxWorst, maxMedian, p99, p50 time.Duration
	p99c                          time.Duration // p99 corrected for missed probes
	forkMax                       time.Duration
	cowKnown                      bool
	idleP99, idleMax              time.Duration
	slow, probes                  int
	idleSlow                      int           // idle probes ≥ 25 ms
	idleTime, duringTime          time.Duration // summed over the runs
	extraMax, hwmMax, cowMax      int64
	writeMax, writeP99            time.Duration
	writes                        int
	status                        string
}

func medianDur(d []time.Duration) time.Duration { return pct(d, .5) }

func (r *result) summarize(sc scenario, interval time.Duration) summary {
	ms := r.by[sc.String()]
	var s summary
	if len(ms) == 0 || ms[0].unsupported {
		s.unsupported = true
		return s
	}
	var saves, maxes, p99s, p50s, p99cs, idle99, idleMax, wmax, w99 []time.Duration
	statuses := map[string]bool{}
	for _, m := range ms {
		s.reps++
		saves = append(saves, m.saveTime)
		maxes = append(maxes, pct(m.during, 1))
		p99s = append(p99s, pct(m.during, .99))
		p50s = append(p50s, pct(m.during, .5))
		p99cs = append(p99cs, pct(corrected(m.during, interval), .99))
		s.forkMax = max(s.forkMax, m.fork)
		idle99 = append(idle99, pct(m.idle, .99))
		idleMax = append(idleMax, pct(m.idle, 1))
		s.slow += countAtLeast(m.during, slowProbe)
		s.idleSlow += countAtLeast(m.idle, slowProbe)
		s.idleTime += m.idleTime
		s.duringTime += m.saveTime
		s.probes += len(m.during)
		s.extraMax = max(s.extraMax, m.extra)
		s.hwmMax = max(s.hwmMax, m.hwmExtra)
		s.cowMax = max(s.cowMax, m.cow)
		s.cowKnown = s.cowKnown || m.cowKnown
		if len(m.writes) > 0 {
			wmax = append(wmax, pct(m.writes, 1))
			w99 = append(w99, pct(m.writes, .99))
			s.writes += len(m.writes)
		}
		statuses[m.status] = true
	}
	s.saveMedian = medianDur(saves)
	s.maxWorst, s.maxMedian = slices.Max(maxes), medianDur(maxes)
	s.p99, s.p50, s.p99c = medianDur(p99s), medianDur(p50s), medianDur(p99cs)
	s.idleP99, s.idleMax = medianDur(idle99), slices.Max(idleMax)
	if len(wmax) > 0 {
		s.writeMax, s.writeP99 = slices.Max(wmax), medianDur(w99)
	}
	var st []string
	for k := range statuses {
		if k == "" {
			k = "(none)"
		}
		st = append(st, k)
	}
	slices.Sort(st)
	s.status = strings.Join(st, ",")
	return s
}

func (r *result) lines(interval time.Duration) []string {
	var out []string
	for _, sc := range r.order {
		s := r.summarize(sc, interval)
		if s.unsupported {
			out = append(out, fmt.Sprintf("%s %s: not supported", r.t.name, sc))
			continue
		}
		out = append(out, fmt.Sprintf("%s %s: save %v; probe max %v (worst of %d), p99 %v, p50 %v; extra memory %.1f MiB = %.1f%% of the data",
			r.t.name, sc, ms(s.saveMedian), ms(s.maxWorst), s.reps, ms(s.p99), ms(s.p50),
			float64(s.extraMax)/(1<<20), 100*float64(s.extraMax)/float64(r.t.dataBytes)))
	}
	return out
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
}

func gitDescribe(repo string) string {
	out, err := exec.Command("git", "-C", repo, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown commit"
	}
	s := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", repo, "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)bench/*.md").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		s += ", with uncommitted changes"
	}
	return s
}

func commandLine() string {
	parts := []string{"go run ./cmd/savestall"}
	for _, a := range os.Args[1:] {
		if a == "" || strings.ContainsAny(a, " '\"$") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

func writeReport(cfg config, results []*result, redisNote string, elapsed time.Duration) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	load, _ := os.ReadFile("/proc/loadavg")
	lf := strings.Fields(string(load))
	p("# Save stall: client latency and memory while the server saves\n\n")
	p("Written by `%s` in bench/ on %s (%s/%s, %d CPUs, load average at the end: %s) in %v.\n\n",
		commandLine(), time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
		strings.Join(lf[:min(3, len(lf))], " "), elapsed.Round(time.Second))
	for _, r := range results {
		p("- **%s** (%s): %s, %.1f MiB, filled in %v.\n", r.t.name, r.version, r.t.what, float64(r.t.dataBytes)/(1<<20), r.fill.Round(time.Millisecond))
	}
	if redisNote != "" {
		p("- %s\n", redisNote)
	}
	p("\nA probe client sends one read (bloom serve: BF.EXISTS of a random item; Redis: GETBIT at a random offset) every %v; "+
		"latency is send → reply of every probe that overlapped the save (\"during\"), and of the probes in the %v before it (\"idle\"). "+
		"The save starts with the command and ends when INFO persistence (polled every 10 ms) shows it finished. "+
		"\"+ writer\": a second client writes back to back (BF.ADD of new items / SETBIT at random offsets) during the save. "+
		"Each scenario ran %d times, interleaved (those without writes first); max is the worst over the runs, the other columns are medians of the runs. "+
		"Extra memory: the peak of (VmRSS − VmRSS before the command), sampled every 5 ms, plus for Redis the private memory of its forked child; "+
		"for bloom serve the peak growth of its Go heap in use (INFO used_memory_go_heap, polled every 10 ms) when that is larger (freed heap is reused without new RSS); "+
		"also VmHWM − RSS before (peak reset before the command), the server's own copy-on-write count (rdb_last_cow_size / aof_last_cow_size) and Redis's fork time (latest_fork_usec, worst run). "+
		"\"p99 corrected\": a probe that waited longer than %v also stands for the probes a client on schedule would have sent meanwhile (coordinated omission). Both servers with appendonly and appendfsync %s.\n\n",
		cfg.interval, cfg.idle, cfg.reps, cfg.interval, cfg.appendfsync)
	p("| server | scenario | save time | probe max | median max | p99 | p99 corrected | p50 | probes ≥ 25 ms | idle p99 / max | extra memory | of data | VmHWM − before | server's COW count | fork | writer max / p99 (writes) | status |\n")
	p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range results {
		for _, sc := range r.order {
			s := r.summarize(sc, cfg.interval)
			if s.unsupported {
				p("| %s | %s | unknown command | | | | | | | | | | | | | | |\n", r.t.name, sc)
				continue
			}
			w := "–"
			if sc.writer {
				w = fmt.Sprintf("%s / %s (%d)", ms(s.writeMax), ms(s.writeP99), s.writes)
			}
			cow, fork := "–", "–"
			if s.cowKnown {
				cow = fmt.Sprintf("%.1f MiB", float64(s.cowMax)/(1<<20))
			}
			if r.t.forks {
				fork = ms(s.forkMax)
			}
			p("| %s | %s | %s | **%s** | %s | %s | %s | %s | %d of %d | %s / %s | %.1f MiB | **%.1f%%** | %.1f MiB | %s | %s | %s | %s |\n",
				r.t.name, sc, ms(s.saveMedian), ms(s.maxWorst), ms(s.maxMedian), ms(s.p99), ms(s.p99c), ms(s.p50), s.slow, s.probes,
				ms(s.idleP99), ms(s.idleMax), float64(s.extraMax)/(1<<20), 100*float64(s.extraMax)/float64(r.t.dataBytes),
				float64(s.hwmMax)/(1<<20), cow, fork, w, s.status)
		}
	}
	p("\nProbes ≥ %v during the save, with when they were sent (ms after the command), by run:\n\n", slowProbe)
	for _, r := range results {
		for _, sc := range r.order {
			var runs []string
			for i, m := range r.by[sc.String()] {
				if len(m.slow) > 0 {
					runs = append(runs, fmt.Sprintf("run %d: %s", i+1, strings.TrimPrefix(slowNote(m.slow), "; slow probes: ")))
				}
			}
			if len(runs) > 0 {
				p("- %s %s — %s.\n", r.t.name, sc, strings.Join(runs, "; "))
			}
		}
	}
	ours := results[0].summarize(scenario{cmd: "BGSAVE"}, cfg.interval)
	frac := float64(ours.extraMax) / float64(results[0].t.dataBytes)
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**not met**"
	}
	p("\n## Against the goal: BGSAVE without writes, max latency ≤ 25 ms, extra memory ≤ 10%% of the data\n\n")
	p("- bloom serve: max probe latency %s → %s; extra memory %.1f%% → %s.\n",
		ms(ours.maxWorst), verdict(ours.maxWorst <= 25*time.Millisecond), 100*frac, verdict(frac <= 0.10))
	// The machine's own noise: slow probes while nothing is saved.
	var idleSlow, idleN int
	var idleMax, idleTime time.Duration
	for _, sc := range results[0].order {
		s := results[0].summarize(sc, cfg.interval)
		if !s.unsupported {
			idleSlow += s.idleSlow
			idleMax = max(idleMax, s.idleMax)
			idleTime += s.idleTime
			idleN++
		}
	}
	if idleN > 0 {
		p("- Noise: outside any save, bloom serve's probes had %d ≥ %v in %v of idle probing (worst %s); during BGSAVE, %d in %v.",
			idleSlow, slowProbe, idleTime.Round(time.Second), ms(idleMax), ours.slow, ours.duringTime.Round(100*time.Millisecond))
		if idleMax > slowProbe && ours.maxWorst > slowProbe {
			p(" The machine alone stalls probes beyond the goal, so a max above %v here does not by itself show a server stall: compare the rates, and rerun on a quiet machine to judge the goal.", slowProbe)
		}
		p("\n")
	}
	if len(results) > 1 {
		rs := results[1].summarize(scenario{cmd: "BGSAVE"}, cfg.interval)
		rn := results[1].summarize(scenario{cmd: "BGSAVE", redisNoCompress: true}, cfg.interval)
		p("- redis-server, for comparison: max probe latency %s, extra memory %.1f%% (%.1f%% with rdbcompression no: with it on, the child allocates an LZF buffer as large as the value); its fork() alone stopped it for up to %s on this machine.\n",
			ms(rs.maxWorst), 100*float64(rs.extraMax)/float64(results[1].t.dataBytes), 100*float64(rn.extraMax)/float64(results[1].t.dataBytes),
			ms(max(rs.forkMax, rn.forkMax)))
	}
	if cfg.items < 600_000_000 {
		p("- This run used %d items; the goal is stated for ≥ 600M (run without -quick).\n", cfg.items)
	}
	return os.WriteFile(cfg.out, []byte(b.String()), 0o644)
}

// slowNote lists the first slow probes of a run.
func slowNote(slow []string) string {
	if len(slow) == 0 {
		return ""
	}
	more := ""
	if len(slow) > 4 {
		slow, more = slow[:4], fmt.Sprintf(" and %d more", len(slow)-4)
	}
	return "; slow probes: " + strings.Join(slow, ", ") + more
}
