// Command serverbench measures `bloom serve` against RedisBloom (redis-server
// with the redisbloom.so module) on the same machine in the same run, with
// redis-benchmark: BF.ADD, BF.EXISTS, BF.MADD (10 items), CF.ADD and
// CF.EXISTS on filters reserved for 10 million items (BF.RESERVE 0.01
// 10000000, CF.RESERVE 10000000), at pipeline depths 1 and 16, 50 clients,
// keyspace 10,000,000, both servers with appendonly and appendfsync
// everysec. Repetitions are interleaved (each repetition runs every command on
// both servers, alternating which server goes first) and the report quotes
// medians and the ratio of the medians, with p99 latency and the resident
// memory each server needs per filter.
//
// It builds `bloom serve` from the repository it runs in (-repo, default
// ".."), so rerunning it measures the code checked out there.
//
//	cd bench && go run ./cmd/serverbench -module "$BLOOMKIT_REDISBLOOM_MODULE"   # writes SERVER.md
//	cd bench && go run ./cmd/serverbench -module ... -quick               # fewer requests and reps
//	cd bench && go run ./cmd/serverbench -module ... -sketch              # CMS, TOPK, TDIGEST
//
// -sketch measures CMS.INCRBY, CMS.QUERY, TOPK.ADD, TOPK.QUERY, TOPK.LIST,
// TDIGEST.ADD, TDIGEST.QUANTILE and TDIGEST.CDF the same way, then sends one
// seeded stream to both servers and compares their answers; it writes its
// section of SKETCH.md and TDIGEST.md ("Over the wire, beside RedisBloom").
//
// RedisBloom is not part of this repository: build redisbloom.so from its
// public source elsewhere and pass its path with -module (redis-server 7.x
// loads a 2.8.x module). Without -module, plain Redis stands in as a proxy:
// SET for BF.ADD/CF.ADD, GET for BF.EXISTS/CF.EXISTS, MSET of 10 keys for
// BF.MADD (RedisBloom's BF.ADD/BF.EXISTS run at about Redis's SET/GET speed
// at -P 1).
//
// It needs redis-server and redis-benchmark (Debian: redis-server, redis-tools).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bloomkit/bloomkit/bench/internal/bloomproc"
)

// ops are the measured commands, in the order each repetition runs them:
// every EXISTS follows the ADD that filled its filter.
var ops = []string{"BF.ADD", "BF.EXISTS", "BF.MADD", "CF.ADD", "CF.EXISTS"}

// maddItems is the number of items per BF.MADD.
const maddItems = 10

// target is one server under test.
type target struct {
	name  string // column name in the report
	proc  *exec.Cmd
	addr  string
	rdb   *redis.Client
	proxy bool // plain Redis: SET/GET stand in for the filter commands
}

// args is the redis-benchmark command line for op on t.
func (t *target) args(op string) []string {
	const item = "key:__rand_int__"
	if a, ok := sketchArgs(op); ok {
		return a
	}
	if t.proxy {
		switch op {
		case "BF.ADD":
			return []string{"SET", "b:__rand_int__", "v"}
		case "BF.EXISTS":
			return []string{"GET", "b:__rand_int__"}
		case "BF.MADD":
			a := []string{"MSET"}
			for i := 0; i < maddItems; i++ {
				a = append(a, "m:__rand_int__", "v")
			}
			return a
		case "CF.ADD":
			return []string{"SET", "c:__rand_int__", "v"}
		case "CF.EXISTS":
			return []string{"GET", "c:__rand_int__"}
		}
	}
	switch op {
	case "BF.MADD":
		a := []string{"BF.MADD", "bf:madd"}
		for i := 0; i < maddItems; i++ {
			a = append(a, item)
		}
		return a
	case "BF.ADD", "BF.EXISTS":
		return []string{op, "bf:10m", item}
	default: // CF.ADD, CF.EXISTS
		return []string{op, "cf:10m", item}
	}
}

// prepare gives op a freshly reserved filter before each ADD run, so every
// repetition on every server starts from the same empty 10M filter and no
// filter outgrows its reservation (cuckoo filters count duplicates).
func (t *target) prepare(ctx context.Context, op string) error {
	if t.proxy {
		return nil
	}
	if k, write, ok := sketchKey(op); ok {
		if !write {
			return t.ensure(ctx, k, sketchKeys[k]...)
		}
		if err := t.rdb.Del(ctx, k).Err(); err != nil {
			return fmt.Errorf("%s: DEL %s: %w", t.name, k, err)
		}
		if err := t.rdb.Do(ctx, sketchKeys[k]...).Err(); err != nil {
			return fmt.Errorf("%s: %v: %w", t.name, sketchKeys[k], err)
		}
		return nil
	}
	var key string
	var reserve []any
	switch op {
	case "BF.ADD":
		key, reserve = "bf:10m", []any{"BF.RESERVE", "bf:10m", "0.01", "10000000"}
	case "BF.MADD":
		key, reserve = "bf:madd", []any{"BF.RESERVE", "bf:madd", "0.01", "10000000"}
	case "CF.ADD":
		key, reserve = "cf:10m", []any{"CF.RESERVE", "cf:10m", "10000000"}
	case "BF.EXISTS":
		return t.ensure(ctx, "bf:10m", "BF.RESERVE", "bf:10m", "0.01", "10000000")
	case "CF.EXISTS":
		return t.ensure(ctx, "cf:10m", "CF.RESERVE", "cf:10m", "10000000")
	default:
		return nil
	}
	if err := t.rdb.Del(ctx, key).Err(); err != nil {
		return fmt.Errorf("%s: DEL %s: %w", t.name, key, err)
	}
	if err := t.rdb.Do(ctx, reserve...).Err(); err != nil {
		return fmt.Errorf("%s: %v: %w", t.name, reserve, err)
	}
	return nil
}

// ensure reserves key unless it exists (when an EXISTS run is selected
// without its ADD run).
func (t *target) ensure(ctx context.Context, key string, reserve ...any) error {
	n, err := t.rdb.Exists(ctx, key).Result()
	if err != nil || n == 1 {
		return err
	}
	return t.rdb.Do(ctx, reserve...).Err()
}

// sample is one redis-benchmark run.
type sample struct {
	rps, avg, p50, p99 float64
	cpu                float64 // server CPU (user+system, all threads) per request, µs
}

// cell collects the repetitions of one (op, pipeline, server).
type cell struct{ runs []sample }

func (c *cell) median(f func(sample) float64) float64 {
	if len(c.runs) == 0 {
		return 0
	}
	v := make([]float64, len(c.runs))
	for i, s := range c.runs {
		v[i] = f(s)
	}
	return median(v)
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

type key struct {
	op       string
	pipeline int
	server   string
}

type config struct {
	repo, out, module, redisServer, redisBenchmark, fsync string
	n, c, r, reps                                         int
	pipelines                                             []int
	ops                                                   []string
	memory, sketch                                        bool
	cmdline                                               string
}

func main() {
	var cfg config
	var pipes, opsFlag string
	quick := flag.Bool("quick", false, "a smoke run: -n 40000 -reps 2 unless given")
	flag.StringVar(&cfg.repo, "repo", "..", "bloomkit repository root (builds ./cmd/bloom there)")
	flag.StringVar(&cfg.out, "out", "SERVER.md", "markdown report to write (empty: none)")
	flag.StringVar(&cfg.module, "module", os.Getenv("BLOOMKIT_REDISBLOOM_MODULE"), "path to RedisBloom's redisbloom.so (default $BLOOMKIT_REDISBLOOM_MODULE; empty: plain Redis SET/GET as a proxy)")
	flag.StringVar(&cfg.redisServer, "redis-server", "redis-server", "redis-server binary")
	flag.StringVar(&cfg.redisBenchmark, "redis-benchmark", "redis-benchmark", "redis-benchmark binary")
	flag.StringVar(&cfg.fsync, "appendfsync", "everysec", "appendfsync for both servers")
	flag.IntVar(&cfg.n, "n", 200000, "requests per run at -P 1; ×10 at -P 16 and deeper, ÷5 for BF.MADD")
	flag.IntVar(&cfg.c, "c", 50, "parallel connections (-c of redis-benchmark)")
	flag.IntVar(&cfg.r, "r", 10000000, "random keyspace (-r of redis-benchmark)")
	flag.IntVar(&cfg.reps, "reps", 5, "interleaved repetitions")
	flag.StringVar(&pipes, "P", "1,16", "pipeline depths, comma-separated")
	flag.StringVar(&opsFlag, "ops", strings.Join(ops, ","), "commands to measure, comma-separated")
	flag.BoolVar(&cfg.memory, "memory", true, "measure RSS per filter")
	flag.BoolVar(&cfg.sketch, "sketch", false, "measure the CMS, TOPK and TDIGEST commands instead (needs -module; writes a section of SKETCH.md and TDIGEST.md; -n 100000 -r 100000 -reps 3 unless given, no -memory)")
	flag.Parse()
	if cfg.sketch {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["n"] {
			cfg.n = 100000
		}
		if !set["r"] {
			cfg.r = 100000
		}
		if !set["reps"] {
			cfg.reps = 3
		}
		if !set["ops"] {
			opsFlag = strings.Join(sketchOps, ",")
		}
		cfg.memory = false
		if cfg.module == "" {
			fail(errors.New("-sketch needs RedisBloom's module (-module or $BLOOMKIT_REDISBLOOM_MODULE)"))
		}
	}
	if *quick {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["n"] {
			cfg.n = 40000
		}
		if !set["reps"] {
			cfg.reps = 2
		}
	}
	var err error
	if cfg.pipelines, err = ints(pipes); err != nil {
		fail(fmt.Errorf("-P: %w", err))
	}
	for _, o := range strings.Split(opsFlag, ",") {
		o = strings.ToUpper(strings.TrimSpace(o))
		if !contains(ops, o) && !contains(sketchOps, o) {
			fail(fmt.Errorf("-ops: unknown command %q (have %s,%s)", o, strings.Join(ops, ","), strings.Join(sketchOps, ",")))
		}
		cfg.ops = append(cfg.ops, o)
	}
	if cfg.reps < 1 || cfg.n < 1 || cfg.c < 1 || cfg.r < 1 {
		fail(errors.New("-reps, -n, -c and -r must be positive"))
	}
	cfg.cmdline = commandLine(flag.CommandLine)
	if err := run(cfg); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "serverbench:", err)
	os.Exit(1)
}

// commandLine is the command that reproduces this run, for the report: the
// flags set in fs, none of them naming a path of this machine.
func commandLine(fs *flag.FlagSet) string {
	parts := []string{"go run ./cmd/serverbench"}
	moduleSet := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "module" {
			moduleSet = true
		}
		switch {
		case f.Name == "out":
		case f.Name == "module":
			// The module's path is this machine's: the report names it
			// as the variable the instructions use.
			parts = append(parts, `-module "$BLOOMKIT_REDISBLOOM_MODULE"`)
		case filepath.IsAbs(f.Value.String()):
			// Another path of this machine (-repo, -redis-server,
			// -redis-benchmark): only its last element says what it was.
			parts = append(parts, "-"+f.Name+" …/"+filepath.Base(f.Value.String()))
		case f.Value.String() == "true":
			parts = append(parts, "-"+f.Name)
		case f.Value.String() == "false":
			parts = append(parts, "-"+f.Name+"=false")
		default:
			parts = append(parts, "-"+f.Name+" "+f.Value.String())
		}
	})
	if m := os.Getenv("BLOOMKIT_REDISBLOOM_MODULE"); !moduleSet && m != "" {
		parts = append(parts, `-module "$BLOOMKIT_REDISBLOOM_MODULE"`)
	}
	if n := niceness(); n != 0 {
		parts = append([]string{"nice -n " + strconv.Itoa(n)}, parts...)
	}
	return strings.Join(parts, " ")
}

// niceness is the process's nice value (field 19 of /proc/self/stat), 0
// when unknown.
func niceness() int {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 17 {
		return 0
	}
	n, _ := strconv.Atoi(f[16])
	return n
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("not a positive integer: %q", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func run(cfg config) error {
	if _, err := exec.LookPath(cfg.redisServer); err != nil {
		return fmt.Errorf("%s not found (apt-get install redis-server): %w", cfg.redisServer, err)
	}
	if _, err := exec.LookPath(cfg.redisBenchmark); err != nil {
		return fmt.Errorf("%s not found (apt-get install redis-tools): %w", cfg.redisBenchmark, err)
	}
	if cfg.module != "" {
		abs, err := filepath.Abs(cfg.module)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("-module: %w", err)
		}
		cfg.module = abs
	}
	tmp, err := os.MkdirTemp("", "serverbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "bloom")
	build := exec.Command("go", "build", "-o", bin, "./cmd/bloom")
	build.Dir = cfg.repo
	if outb, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/bloom in %s: %v\n%s", cfg.repo, err, outb)
	}
	rev := gitRev(cfg.repo)
	loadStart := loadavg()

	ctx := context.Background()
	ours, err := startBloom(ctx, bin, filepath.Join(tmp, "ours"), cfg.fsync)
	if err != nil {
		return err
	}
	defer ours.stop()
	ref, err := startRedis(ctx, cfg.redisServer, cfg.module, filepath.Join(tmp, "redis"), cfg.fsync)
	if err != nil {
		return err
	}
	defer ref.stop()
	refModule := ""
	if cfg.module != "" {
		refModule = moduleVersion(ctx, ref.rdb)
	}
	targets := []*target{ours, ref}

	results := map[key]*cell{}
	for rep := 0; rep < cfg.reps; rep++ {
		for _, p := range cfg.pipelines {
			for _, op := range cfg.ops {
				order := targets
				if rep%2 == 1 { // alternate which server goes first
					order = []*target{targets[1], targets[0]}
				}
				for _, t := range order {
					if err := t.prepare(ctx, op); err != nil {
						return err
					}
					n := cfg.n
					if p > 1 {
						n *= 10
					}
					if op == "BF.MADD" || op == "TOPK.LIST" {
						n /= 5
					}
					cpu0 := cpuTime(t.proc.Process.Pid)
					s, err := bench(cfg.redisBenchmark, t.addr, n, cfg.c, p, cfg.r, t.args(op))
					if err != nil {
						return fmt.Errorf("%s %s -P %d: %w", t.name, op, p, err)
					}
					s.cpu = float64(cpuTime(t.proc.Process.Pid)-cpu0) / float64(time.Microsecond) / float64(n)
					k := key{op, p, t.name}
					if results[k] == nil {
						results[k] = &cell{}
					}
					results[k].runs = append(results[k].runs, s)
					fmt.Fprintf(os.Stderr, "rep %d  P=%-2d %-10s %-12s %10.0f req/s  p99 %6.3f ms  cpu %5.2f µs/req\n", rep+1, p, op, t.name, s.rps, s.p99, s.cpu)
				}
			}
		}
	}
	loadEnd := loadavg()
	var acc accuracy
	if cfg.sketch {
		if acc, err = measureAccuracy(ctx, targets); err != nil {
			return err
		}
	}
	ours.stop()
	ref.stop()

	var mems []memResult
	if cfg.memory {
		for _, kind := range []string{"BF", "CF"} {
			m, err := memory(ctx, cfg, kind, func() (*target, error) {
				return startBloom(ctx, bin, filepath.Join(tmp, "mem-ours-"+kind), cfg.fsync)
			})
			if err != nil {
				return err
			}
			mems = append(mems, m)
			if cfg.module == "" {
				continue
			}
			m, err = memory(ctx, cfg, kind, func() (*target, error) {
				return startRedis(ctx, cfg.redisServer, cfg.module, filepath.Join(tmp, "mem-redis-"+kind), cfg.fsync)
			})
			if err != nil {
				return err
			}
			mems = append(mems, m)
		}
	}
	rep := report{cfg: cfg, targets: []string{ours.name, ref.name}, proxy: ref.proxy, results: results, mems: mems,
		rev: rev, refModule: refModule, loadStart: loadStart, loadEnd: loadEnd}
	if cfg.sketch {
		text, err := rep.sketchSections(acc)
		fmt.Print(text)
		return err
	}
	text := rep.markdown()
	fmt.Print(text)
	if cfg.out == "" {
		return nil
	}
	return os.WriteFile(cfg.out, []byte(text), 0o644)
}

func startBloom(ctx context.Context, bin, dir, fsync string) (*target, error) {
	addr := freeAddr()
	cmd := exec.Command(bin, "serve", "--addr", addr, "--dir", dir, "--appendfsync", fsync, "--log-level", "warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	t := &target{name: "bloom serve", proc: cmd, addr: addr}
	return t, t.connect(ctx)
}

func startRedis(ctx context.Context, bin, module, dir, fsync string) (*target, error) {
	addr := freeAddr()
	_, port, _ := net.SplitHostPort(addr)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	args := []string{"--port", port, "--bind", "127.0.0.1", "--dir", dir, "--save", "",
		"--appendonly", "yes", "--appendfsync", fsync, "--daemonize", "no", "--logfile", filepath.Join(dir, "redis.log")}
	name := "Redis (proxy)"
	if module != "" {
		args = append(args, "--loadmodule", module)
		name = "RedisBloom"
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	t := &target{name: name, proc: cmd, addr: addr, proxy: module == ""}
	if err := t.connect(ctx); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
		return t, fmt.Errorf("%w\nredis log:\n%s", err, log)
	}
	return t, nil
}

func (t *target) connect(ctx context.Context) error {
	t.rdb = redis.NewClient(&redis.Options{Addr: t.addr, Protocol: 2, MaxRetries: -1, DisableIdentity: true})
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := t.rdb.Ping(ctx).Err()
		if err == nil {
			return nil
		}
		if t.proc.ProcessState != nil || time.Now().After(deadline) {
			t.stop()
			return fmt.Errorf("%s at %s did not come up: %w", t.name, t.addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (t *target) stop() {
	if t == nil || t.proc == nil || t.proc.Process == nil || t.proc.ProcessState != nil {
		return
	}
	if t.rdb != nil {
		t.rdb.Close()
	}
	t.proc.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { t.proc.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.proc.Process.Kill()
		<-done
	}
}

// settle waits until the server has no snapshot or log rewrite running:
// both servers rewrite their log in the background once it passes 64 MB
// (Redis in a forked child, whose copy-on-write pages are not in the
// server's RSS; bloom serve in-process), and RSS is compared at rest.
func (t *target) settle(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		info, err := t.rdb.Info(ctx, "persistence").Result()
		if err != nil {
			return fmt.Errorf("%s: INFO persistence: %w", t.name, err)
		}
		busy := false
		for _, f := range []string{"rdb_bgsave_in_progress:1", "aof_rewrite_in_progress:1", "aof_rewrite_scheduled:1"} {
			busy = busy || strings.Contains(info, f)
		}
		if !busy {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: a background save is still running after 2 minutes", t.name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (t *target) rss() int64 {
	v, _ := rss(t.proc.Process.Pid)
	return v
}

func moduleVersion(ctx context.Context, rdb *redis.Client) string {
	v, err := rdb.Do(ctx, "MODULE", "LIST").Slice()
	if err != nil {
		return ""
	}
	for _, m := range v {
		fields, ok := m.([]any)
		if !ok {
			continue
		}
		var name, ver string
		for i := 0; i+1 < len(fields); i += 2 {
			switch fmt.Sprint(fields[i]) {
			case "name":
				name = fmt.Sprint(fields[i+1])
			case "ver":
				ver = fmt.Sprint(fields[i+1])
			}
		}
		if name == "bf" {
			if n, err := strconv.Atoi(ver); err == nil {
				return fmt.Sprintf("%d.%d.%d", n/10000, n/100%100, n%100)
			}
			return ver
		}
	}
	return ""
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// bench runs redis-benchmark --csv for one command.
func bench(tool, addr string, n, c, p, r int, args []string) (sample, error) {
	m, err := bloomproc.RedisBenchmark(tool, addr, n, c, p, r, args)
	return sample{rps: m.RPS, avg: m.Avg, p50: m.P50, p99: m.P99}, err
}

// cpuTime is the CPU time (user + system, all threads) a process has used,
// from /proc/PID/stat (clock ticks of 1/100 s, Linux's USER_HZ).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; fields after ')' start at 3.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * (time.Second / 100)
}

// rss is a process's resident set size in bytes.
func rss(pid int) (int64, error) { return bloomproc.RSS(pid) }

// memResult is the resident memory a server needs per 10M filter.
type memResult struct {
	server, kind    string
	size            int64 // mean INFO size of filters 2 to 5 (those the RSS growth measures)
	base, one, five int64 // RSS: fresh, after the first filter, after five
	grown           int   // filters that added a sub-filter while being filled
	grownInfo       []string
}

// memory measures RSS per filter on a fresh server: one filter reserved for
// 10M items and filled with 300,000 random adds so every page is resident
// (this also warms up connections and buffers), then four more; the
// marginal RSS per filter is compared with the filter's size.
func memory(ctx context.Context, cfg config, kind string, start func() (*target, error)) (memResult, error) {
	t, err := start()
	if err != nil {
		return memResult{}, err
	}
	defer t.stop()
	m := memResult{server: t.name, kind: kind, base: t.rss()}
	fill := func(i int) error {
		k := fmt.Sprintf("%s:mem%d", strings.ToLower(kind), i)
		reserve := []any{"BF.RESERVE", k, "0.01", "10000000"}
		if kind == "CF" {
			reserve = []any{"CF.RESERVE", k, "10000000"}
		}
		if err := t.rdb.Do(ctx, reserve...).Err(); err != nil {
			return fmt.Errorf("%s: %v: %w", t.name, reserve, err)
		}
		_, err := bench(cfg.redisBenchmark, t.addr, 300000, cfg.c, 64, cfg.r, []string{kind + ".ADD", k, "key:__rand_int__"})
		return err
	}
	if err := fill(0); err != nil {
		return m, err
	}
	if err := t.settle(ctx); err != nil {
		return m, err
	}
	m.one = t.rss()
	for i := 1; i <= 4; i++ {
		if err := fill(i); err != nil {
			return m, err
		}
	}
	if err := t.settle(ctx); err != nil {
		return m, err
	}
	m.five = t.rss()
	for i := 0; i <= 4; i++ {
		info, err := t.rdb.Do(ctx, kind+".INFO", fmt.Sprintf("%s:mem%d", strings.ToLower(kind), i)).Slice()
		if err != nil {
			return m, fmt.Errorf("%s: %s.INFO: %w", t.name, kind, err)
		}
		fields := map[string]string{}
		for j := 0; j+1 < len(info); j += 2 {
			fields[fmt.Sprint(info[j])] = fmt.Sprint(info[j+1])
		}
		if v, _ := strconv.ParseInt(fields["Size"], 10, 64); i > 0 {
			m.size += v
		}
		if v, _ := strconv.Atoi(fields["Number of filters"]); v > 1 {
			m.grown++
			m.grownInfo = append(m.grownInfo, fmt.Sprintf("%s on %s: filter %d has %s sub-filters, %s items inserted, size %s",
				kind, t.name, i+1, fields["Number of filters"], fields["Number of items inserted"], fields["Size"]))
		}
	}
	m.size /= 4
	fmt.Fprintf(os.Stderr, "memory %-12s %s: size %d, RSS %d → %d → %d, %d grew\n", t.name, kind, m.size, m.base, m.one, m.five, m.grown)
	return m, nil
}

func gitRev(dir string) string {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	rev := strings.TrimSpace(string(out))
	// bench/ is not part of what is measured (and holds this report).
	if st, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench").Output(); err == nil && len(st) > 0 {
		rev += " (with uncommitted changes)"
	}
	return rev
}

// busy reports whether a load average line ("1.0 2.0 3.0") shows more
// runnable processes over the last minute than the machine has CPUs.
func busy(load string) bool {
	f := strings.Fields(load)
	if len(f) == 0 {
		return false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return err == nil && v > float64(runtime.NumCPU())
}

// redisVersion is redis-server --version's line.
func redisVersion(bin string) string {
	rv, _ := exec.Command(bin, "--version").Output()
	return strings.TrimSpace(string(rv))
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

type report struct {
	cfg                config
	targets            []string // ours, reference
	proxy              bool
	results            map[key]*cell
	mems               []memResult
	rev, refModule     string
	loadStart, loadEnd string
}

func (r *report) markdown() string {
	var b strings.Builder
	cfg := r.cfg
	ours, ref := r.targets[0], r.targets[1]
	host, _ := os.Hostname()
	rv := redisVersion(cfg.redisServer)
	refDesc := "RedisBloom " + r.refModule + " (`--loadmodule \"$BLOOMKIT_REDISBLOOM_MODULE\"`)"
	if r.proxy {
		refDesc = "plain Redis as a proxy (no -module given): SET for BF.ADD/CF.ADD, GET for BF.EXISTS/CF.EXISTS, MSET of 10 keys for BF.MADD"
	}
	fmt.Fprintf(&b, "# bloom serve vs %s (redis-benchmark)\n\n", ref)
	fmt.Fprintf(&b, "Written by `%s` in bench/ on %s: bloom serve built from commit %s; reference: %s on %s.\n",
		cfg.cmdline, time.Now().UTC().Format("2006-01-02 15:04 MST"), r.rev, refDesc, rv)
	fmt.Fprintf(&b, "Machine %s, %d CPUs shared by both servers and redis-benchmark; load average %s at the start, %s at the end.\n\n",
		host, runtime.NumCPU(), r.loadStart, r.loadEnd)
	fmt.Fprintf(&b, "redis-benchmark -c %d -r %d, -n %d at -P 1 (×10 deeper, ÷5 for BF.MADD of %d items); both servers with appendonly, appendfsync %s (redis-server `--appendonly yes --save \"\"`, bloom serve defaults). "+
		"Filters reserved with `BF.RESERVE k 0.01 10000000` / `CF.RESERVE k 10000000`, re-created empty before every ADD run; each EXISTS run reads the filter its ADD run just filled. "+
		"%d repetitions, interleaved: each repetition runs every command on both servers back to back, alternating which goes first.\n\n",
		cfg.c, cfg.r, cfg.n, maddItems, cfg.fsync, cfg.reps)
	fmt.Fprintf(&b, "Requests/s, p99 and CPU are medians over the repetitions. *ratio* is %s's median requests/s over %s's; *paired* is the median of the per-repetition ratios (each pair ran back to back, so it is less moved by other load on the machine) with their range. "+
		"*CPU µs/req* is the server process's user+system time (all threads) during the run divided by the requests: the work each server does per request, whatever else ran.\n\n", ours, ref)
	goal := map[int]float64{1: 1.0}
	if busy(r.loadStart) || busy(r.loadEnd) {
		fmt.Fprintf(&b, "**The machine was busy** (load average above its %d CPUs): other processes took CPU from the servers and the client, and a multi-threaded server gets a larger share of a contended machine than single-threaded Redis does, so the requests/s ratios below are not a fair comparison; the CPU µs/request columns (and their ratio, *CPU ref/ours*, above 1 when bloom serve does less work per request) are fairer, as they count only each server's own work, but not immune: contention changes how many requests each wakeup serves, so a run that met a burst of other load shows in *Every run* as a higher p99 and CPU µs/req on that side. Rerun on a quiet machine for the goal.\n\n", runtime.NumCPU())
	}
	fmt.Fprintf(&b, "| command | -P | %s req/s | %s req/s | ratio | paired (range) | goal | p99 ms ours / ref | CPU µs/req ours / ref | CPU ref/ours |\n", ours, ref)
	b.WriteString("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|\n")
	for _, p := range cfg.pipelines {
		for _, op := range cfg.ops {
			a, c := r.results[key{op, p, ours}], r.results[key{op, p, ref}]
			if a == nil || c == nil {
				continue
			}
			med := func(x *cell, f func(sample) float64) float64 { return x.median(f) }
			rps := func(s sample) float64 { return s.rps }
			p99 := func(s sample) float64 { return s.p99 }
			cpu := func(s sample) float64 { return s.cpu }
			rpsA, rpsC := med(a, rps), med(c, rps)
			pm, lo, hi := paired(a, c)
			g, ok := goal[p]
			if !ok {
				g = 1.2
			}
			verdict := fmt.Sprintf("≥ %.1fx: ", g)
			switch {
			case busy(r.loadStart) || busy(r.loadEnd):
				verdict += "not judged (busy machine)"
			case rpsA >= g*rpsC && med(a, p99) <= med(c, p99):
				verdict += "met"
			case rpsA >= g*rpsC:
				verdict += "rate met, p99 not"
			default:
				verdict += "**not met**"
			}
			cmd := op
			if r.proxy {
				cmd = op + " vs " + (&target{proxy: true}).args(op)[0]
			}
			fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | **%.2fx** | %.2fx (%.2f–%.2f) | %s | %.3f / %.3f | %.2f / %.2f | %.2fx |\n",
				cmd, p, rpsA, rpsC, rpsA/rpsC, pm, lo, hi, verdict, med(a, p99), med(c, p99), med(a, cpu), med(c, cpu), med(c, cpu)/med(a, cpu))
		}
	}
	b.WriteString("\nGoal: at least 1.0x at -P 1 and 1.2x at -P 16, p99 no worse.\n")
	b.WriteString("\nbloomkit's own filter keys (`BF.RESERVE … LAYOUT blocked|classic`, `WINDOW`) against RedisBloom-layout keys on the same bloom serve — requests/s, bits per item, measured rate, a 10M-item window's memory: [NATIVE.md](NATIVE.md) (`go run ./cmd/nativebench`). The Count-Min Sketch, Top-K and t-digest commands, the same way: [SKETCH.md](SKETCH.md) and [TDIGEST.md](TDIGEST.md) (`go run ./cmd/serverbench -sketch`).\n")
	if len(r.mems) > 0 {
		b.WriteString("\n## Memory per filter\n\n")
		b.WriteString("A fresh server of each kind; five filters reserved for 10M items, each filled with 300,000 random adds (-P 64) so every page is resident. " +
			"RSS per filter is the growth from the first filter to the fifth divided by four (the first also pays for connection buffers and warm-up), read when no background save runs " +
			"(the fills pass 64 MB of log, so both servers rewrite it once or twice: Redis in a forked child whose copy-on-write pages are not in the server's RSS, bloom serve in-process, freeing its copies when done); " +
			"size is the mean of what the four filters' own INFO reports. Goal: RSS per filter within 10% of its size.\n\n")
		b.WriteString("| server | filter | size MiB | RSS per filter MiB | over size | fresh RSS MiB | after first MiB | after five MiB |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
		grown := false
		for _, m := range r.mems {
			per := float64(m.five-m.one) / 4
			what := "BF.RESERVE 0.01 10000000"
			if m.kind == "CF" {
				what = "CF.RESERVE 10000000"
			}
			if m.grown > 0 {
				what += fmt.Sprintf(" (%d of 5 grew a sub-filter)", m.grown)
				grown = true
			}
			fmt.Fprintf(&b, "| %s | %s | %.2f | %.2f | %+.1f%% | %.1f | %.1f | %.1f |\n", m.server, what, mib(m.size), per/(1<<20),
				100*(per/float64(m.size)-1), mib(m.base), mib(m.one), mib(m.five))
		}
		if grown {
			b.WriteString("\nA filter that grew a sub-filter found no room for an item (cuckoo: no free slot after max_iterations kicks; Bloom: capacity reached) and added one; its size and RSS both include it, so the percentage stays comparable. Seen now and then at this low fill with redis-benchmark's keys on both servers, not reproduced in isolation:\n\n")
			for _, m := range r.mems {
				for _, g := range m.grownInfo {
					b.WriteString("* " + g + "\n")
				}
			}
		}
	}
	b.WriteString("\n## Every run\n\nrequests/s (p99 ms, server CPU µs/req) per repetition, in the order they ran.\n\n")
	b.WriteString("| command | -P | server | runs |\n|---|---:|---|---|\n")
	for _, p := range cfg.pipelines {
		for _, op := range cfg.ops {
			for _, s := range r.targets {
				c := r.results[key{op, p, s}]
				if c == nil {
					continue
				}
				var parts []string
				for _, x := range c.runs {
					parts = append(parts, fmt.Sprintf("%.0f (%.2f, %.2f)", x.rps, x.p99, x.cpu))
				}
				fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", op, p, s, strings.Join(parts, ", "))
			}
		}
	}
	b.WriteString("\nOn a shared machine, other load moves both servers' numbers; the interleaving puts that noise on both sides, and the paired range shows how much the per-repetition ratio moved.\n")
	return b.String()
}

// paired is the median, lowest and highest ratio of a's to c's rate over
// the repetitions (run i of a pairs with run i of c).
func paired(a, c *cell) (med, lo, hi float64) {
	var q []float64
	for i := 0; i < len(a.runs) && i < len(c.runs); i++ {
		q = append(q, a.runs[i].rps/c.runs[i].rps)
	}
	if len(q) == 0 {
		return 0, 0, 0
	}
	sort.Float64s(q)
	return median(q), q[0], q[len(q)-1]
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
