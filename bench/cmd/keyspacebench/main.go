// Command keyspacebench measures what one small filter key costs in resident
// memory: `bloom serve` against RedisBloom (redis-server with the
// redisbloom.so module) in the same run. Many small filters are a real
// workload (one "already shown" filter per user), and there the per-key
// bookkeeping (the keyspace entry, the key, the filter's headers) weighs as
// much as the filter's bits.
//
// Every row creates -n keys (default 1,000,000) on a freshly started server,
// pipelined over one connection, and reads the server's RSS before and after
// (at rest: no background save or log rewrite running, after a short pause):
//
//	BF.ADD user:<i>:seen item                        auto-created (capacity 100, 1%, scaling)
//	BF.RESERVE user:<i>:seen 0.01 100                reserved small, RedisBloom's layout
//	BF.RESERVE user:<i>:seen 0.01 100 LAYOUT blocked reserved small, bloomkit's blocked layout
//
// RedisBloom has no blocked layout, so that row has bloom serve only.
// Repetitions are interleaved: each repetition runs every row on every
// server, alternating the order. Both servers run with appendonly and
// appendfsync everysec (their log rewrite is waited for before RSS is read).
//
// With -baseline REV it also builds `bloom serve` from an older commit of
// the same repository (git archive into a temporary directory) and measures
// it in the same interleaving: the before/after of a change, in one run.
// With -cpu it then measures the server CPU per request at pipeline depth 16
// (redis-benchmark -c 50 -P 16) for BF.ADD and BF.EXISTS on one filter
// reserved for 10M items and on -n small keys, for each build of bloom serve
// (the per-command cost a smaller keyspace entry must not raise).
//
//	cd bench && go run ./cmd/keyspacebench -module "$BLOOMKIT_REDISBLOOM_MODULE"
//	cd bench && go run ./cmd/keyspacebench -module ... -baseline 1737226 -cpu
//
// The report replaces the part of KEYSPACE.md between its keyspacebench
// markers (-out; empty: print only). RedisBloom is not part of this
// repository: build redisbloom.so from its public source elsewhere; without
// -module its rows are skipped. It needs redis-server (and redis-benchmark
// for -cpu).
package main

import (
	"bufio"
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

// workload is one way of creating the keys.
type workload struct {
	name   string // row label
	native bool   // bloomkit only (RedisBloom has no such layout)
	args   func(key string) []string
}

var workloads = []workload{
	{name: "BF.ADD k item (auto-created: 100, 1%)", args: func(k string) []string { return []string{"BF.ADD", k, "item"} }},
	{name: "BF.RESERVE k 0.01 100", args: func(k string) []string { return []string{"BF.RESERVE", k, "0.01", "100"} }},
	{name: "BF.RESERVE k 0.01 100 LAYOUT blocked", native: true,
		args: func(k string) []string { return []string{"BF.RESERVE", k, "0.01", "100", "LAYOUT", "blocked"} }},
}

// server is one server kind under test.
type server struct {
	name  string
	bin   string // bloom binary; empty for Redis
	redis bool
	rev   string
}

type config struct {
	repo, out, module, redisServer, redisBenchmark, baseline string
	n, reps, cpuReps                                         int
	cpu                                                      bool
	cmdline                                                  string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.repo, "repo", "..", "bloomkit repository root (builds ./cmd/bloom there)")
	flag.StringVar(&cfg.out, "out", "KEYSPACE.md", "markdown file whose keyspacebench section is replaced (empty: print only)")
	flag.StringVar(&cfg.module, "module", os.Getenv("BLOOMKIT_REDISBLOOM_MODULE"), "path to RedisBloom's redisbloom.so (default $BLOOMKIT_REDISBLOOM_MODULE; empty: RedisBloom rows skipped)")
	flag.StringVar(&cfg.redisServer, "redis-server", "redis-server", "redis-server binary")
	flag.StringVar(&cfg.redisBenchmark, "redis-benchmark", "redis-benchmark", "redis-benchmark binary (-cpu)")
	flag.StringVar(&cfg.baseline, "baseline", "", "also measure bloom serve built from this commit of -repo")
	flag.IntVar(&cfg.n, "n", 1000000, "keys per row")
	flag.IntVar(&cfg.reps, "reps", 3, "interleaved repetitions of the memory rows (0: none, with -cpu)")
	flag.BoolVar(&cfg.cpu, "cpu", false, "also measure server CPU per request at -P 16 for each bloom serve build")
	flag.IntVar(&cfg.cpuReps, "cpu-reps", 7, "interleaved repetitions of the CPU runs")
	flag.Parse()
	if cfg.n < 1000 || cfg.reps < 0 || cfg.cpuReps < 1 || (cfg.reps == 0 && !cfg.cpu) {
		fail(errors.New("-n must be at least 1000, -reps not negative (0 only with -cpu), -cpu-reps positive"))
	}
	cfg.cmdline = commandLine()
	if err := run(cfg); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "keyspacebench:", err)
	os.Exit(1)
}

func commandLine() string {
	parts := []string{"go run ./cmd/keyspacebench"}
	flag.Visit(func(f *flag.Flag) {
		switch {
		case f.Name == "out":
		case f.Name == "module":
			// where the module was built is this machine's business
			parts = append(parts, "-module .../"+filepath.Base(f.Value.String()))
		case f.Value.String() == "true":
			parts = append(parts, "-"+f.Name)
		default:
			parts = append(parts, "-"+f.Name+" "+f.Value.String())
		}
	})
	return strings.Join(parts, " ")
}

// result is one row's repetitions on one server.
type result struct {
	perKey   []float64 // RSS growth per key, bytes
	accPerK  []float64 // the server's own accounting per key (INFO used_memory growth)
	before   []int64
	after    []int64
	duration []time.Duration
}

type rowKey struct{ workload, server string }

func run(cfg config) error {
	if _, err := exec.LookPath(cfg.redisServer); err != nil {
		return fmt.Errorf("%s not found (apt-get install redis-server): %w", cfg.redisServer, err)
	}
	if cfg.module != "" {
		abs, err := filepath.Abs(cfg.module)
		if err == nil {
			_, err = os.Stat(abs)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "keyspacebench: -module %s: %v: RedisBloom rows skipped\n", cfg.module, err)
			cfg.module = ""
		} else {
			cfg.module = abs
		}
	}
	tmp, err := os.MkdirTemp("", "keyspacebench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ctx := context.Background()

	var servers []server
	if cfg.baseline != "" {
		src := filepath.Join(tmp, "baseline-src")
		if err := exportRev(cfg.repo, cfg.baseline, src); err != nil {
			return err
		}
		dir := filepath.Join(tmp, "baseline-bin")
		os.MkdirAll(dir, 0o755)
		bin, err := bloomproc.Build(ctx, src, dir)
		if err != nil {
			return err
		}
		servers = append(servers, server{name: "bloom serve " + shortRev(cfg.repo, cfg.baseline), bin: bin, rev: shortRev(cfg.repo, cfg.baseline)})
	}
	dir := filepath.Join(tmp, "current-bin")
	os.MkdirAll(dir, 0o755)
	bin, err := bloomproc.Build(ctx, cfg.repo, dir)
	if err != nil {
		return err
	}
	rev := gitRev(cfg.repo)
	name := "bloom serve"
	if cfg.baseline != "" {
		name = "bloom serve " + rev
	}
	servers = append(servers, server{name: name, bin: bin, rev: rev})
	refModule := ""
	if cfg.module != "" {
		servers = append(servers, server{name: "RedisBloom", redis: true})
	}
	loadStart := loadavg()

	results := map[rowKey]*result{}
	run := 0
	for rep := 0; rep < cfg.reps; rep++ {
		for _, w := range workloads {
			order := append([]server(nil), servers...)
			if rep%2 == 1 {
				for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
					order[i], order[j] = order[j], order[i]
				}
			}
			for _, s := range order {
				if s.redis && w.native {
					continue
				}
				run++
				t, err := start(ctx, cfg, s, filepath.Join(tmp, fmt.Sprintf("run%d", run)))
				if err != nil {
					return err
				}
				if s.redis && refModule == "" {
					refModule = moduleVersion(ctx, t.rdb)
				}
				m, err := measure(ctx, t, w, cfg.n)
				t.stop()
				os.RemoveAll(filepath.Join(tmp, fmt.Sprintf("run%d", run)))
				if err != nil {
					return fmt.Errorf("%s, %s: %w", s.name, w.name, err)
				}
				k := rowKey{w.name, s.name}
				if results[k] == nil {
					results[k] = &result{}
				}
				r := results[k]
				r.perKey = append(r.perKey, float64(m.after-m.before)/float64(cfg.n))
				r.accPerK = append(r.accPerK, float64(m.usedAfter-m.usedBefore)/float64(cfg.n))
				r.before = append(r.before, m.before)
				r.after = append(r.after, m.after)
				r.duration = append(r.duration, m.took)
				fmt.Fprintf(os.Stderr, "rep %d  %-40s %-22s %7.1f B/key RSS (%.0f → %.0f MiB)  accounted %6.1f B/key  %v  load %s\n",
					rep+1, w.name, s.name, r.perKey[len(r.perKey)-1], mib(m.before), mib(m.after), r.accPerK[len(r.accPerK)-1], m.took.Round(time.Millisecond), loadavg())
			}
		}
	}
	var cpu map[cpuKey][]float64
	if cfg.cpu {
		if cpu, err = cpuRuns(ctx, cfg, servers, tmp); err != nil {
			return err
		}
	}
	loadEnd := loadavg()
	text := report(cfg, servers, results, cpu, refModule, loadStart, loadEnd)
	fmt.Print(text)
	if cfg.out == "" {
		return nil
	}
	return replaceSection(cfg.out, text)
}

// exportRev writes the tree of commit rev of repo into dir.
func exportRev(repo, rev, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	archive := exec.Command("git", "-C", repo, "archive", rev)
	untar := exec.Command("tar", "x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	untar.Stdin = pipe
	var aerr strings.Builder
	archive.Stderr = &aerr
	if err := archive.Start(); err != nil {
		return err
	}
	if out, err := untar.CombinedOutput(); err != nil {
		return fmt.Errorf("tar: %v: %s", err, out)
	}
	if err := archive.Wait(); err != nil {
		return fmt.Errorf("git archive %s: %v: %s", rev, err, aerr.String())
	}
	return nil
}

func shortRev(repo, rev string) string {
	out, err := exec.Command("git", "-C", repo, "rev-parse", "--short", rev).Output()
	if err != nil {
		return rev
	}
	return strings.TrimSpace(string(out))
}

// target is one running server.
type target struct {
	name string
	proc *exec.Cmd
	addr string
	rdb  *redis.Client
}

func start(ctx context.Context, cfg config, s server, dir string) (*target, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addr := freeAddr()
	var cmd *exec.Cmd
	if s.redis {
		_, port, _ := net.SplitHostPort(addr)
		cmd = exec.Command(cfg.redisServer, "--port", port, "--bind", "127.0.0.1", "--dir", dir, "--save", "",
			"--appendonly", "yes", "--appendfsync", "everysec", "--daemonize", "no",
			"--logfile", filepath.Join(dir, "redis.log"), "--loadmodule", cfg.module)
	} else {
		cmd = exec.Command(s.bin, "serve", "--addr", addr, "--dir", filepath.Join(dir, "data"),
			"--appendfsync", "everysec", "--log-level", "warn")
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	t := &target{name: s.name, proc: cmd, addr: addr}
	t.rdb = redis.NewClient(bloomproc.ClientOptions(addr, time.Minute))
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := t.rdb.Ping(ctx).Err()
		if err == nil {
			return t, nil
		}
		if time.Now().After(deadline) {
			t.stop()
			return nil, fmt.Errorf("%s at %s did not come up: %w", s.name, addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (t *target) stop() {
	if t == nil || t.proc == nil || t.proc.Process == nil {
		return
	}
	t.rdb.Close()
	t.proc.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { t.proc.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.proc.Process.Kill()
		<-done
	}
}

// settle waits until no snapshot or log rewrite runs, then a little more so
// that freed memory is returned as it would be at rest.
func (t *target) settle(ctx context.Context) error {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		info, err := t.rdb.Info(ctx, "persistence").Result()
		if err != nil {
			return fmt.Errorf("INFO persistence: %w", err)
		}
		busy := false
		for _, f := range []string{"rdb_bgsave_in_progress:1", "aof_rewrite_in_progress:1", "aof_rewrite_scheduled:1"} {
			busy = busy || strings.Contains(info, f)
		}
		if !busy {
			time.Sleep(2 * time.Second)
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("a background save is still running after 5 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (t *target) usedMemory(ctx context.Context) int64 {
	info, err := t.rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

type measurement struct {
	before, after         int64
	usedBefore, usedAfter int64
	took                  time.Duration
}

// measure creates n keys with w on t and reads RSS before and after. The
// "before" state has the loading connection open and a first batch of 1000
// other keys created and deleted, so connection buffers and the servers'
// first-use allocations are not charged to the keys.
func measure(ctx context.Context, t *target, w workload, n int) (measurement, error) {
	var m measurement
	conn, err := net.Dial("tcp", t.addr)
	if err != nil {
		return m, err
	}
	defer conn.Close()
	p := &pipeline{w: bufio.NewWriterSize(conn, 64<<10), r: bufio.NewReaderSize(conn, 64<<10)}
	if err := p.create(w, "warm:%d", 0, 1000); err != nil {
		return m, err
	}
	for i := 0; i < 1000; i++ {
		p.send("DEL", fmt.Sprintf("warm:%d", i))
	}
	if err := p.flush(1000); err != nil {
		return m, err
	}
	if err := t.settle(ctx); err != nil {
		return m, err
	}
	m.usedBefore = t.usedMemory(ctx)
	if m.before, err = bloomproc.RSS(t.proc.Process.Pid); err != nil {
		return m, err
	}
	t0 := time.Now()
	if err := p.create(w, "user:%d:seen", 0, n); err != nil {
		return m, err
	}
	m.took = time.Since(t0)
	if err := t.settle(ctx); err != nil {
		return m, err
	}
	if got, err := t.rdb.DBSize(ctx).Result(); err != nil || got != int64(n) {
		return m, fmt.Errorf("DBSIZE %d (%v), want %d", got, err, n)
	}
	m.usedAfter = t.usedMemory(ctx)
	m.after, err = bloomproc.RSS(t.proc.Process.Pid)
	return m, err
}

// pipeline writes commands in batches and checks their replies: every
// reply must be a status or an integer (no error).
type pipeline struct {
	w *bufio.Writer
	r *bufio.Reader
}

func (p *pipeline) send(args ...string) {
	fmt.Fprintf(p.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(p.w, "$%d\r\n%s\r\n", len(a), a)
	}
}

func (p *pipeline) flush(replies int) error {
	if err := p.w.Flush(); err != nil {
		return err
	}
	for i := 0; i < replies; i++ {
		line, err := p.r.ReadString('\n')
		if err != nil {
			return err
		}
		if len(line) == 0 || (line[0] != '+' && line[0] != ':') {
			return fmt.Errorf("unexpected reply %q", strings.TrimSpace(line))
		}
	}
	return nil
}

func (p *pipeline) create(w workload, format string, from, to int) error {
	const batch = 1000
	pending := 0
	for i := from; i < to; i++ {
		p.send(w.args(fmt.Sprintf(format, i))...)
		if pending++; pending == batch {
			if err := p.flush(pending); err != nil {
				return err
			}
			pending = 0
		}
	}
	return p.flush(pending)
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
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

// cpuKey is one CPU measurement: a command on a workload on a build.
type cpuKey struct{ op, server string }

var cpuOps = []struct {
	name  string
	setup [][]string // commands run once on a fresh server
	warm  []string   // redis-benchmark args run once unmeasured
	args  []string   // measured redis-benchmark args
	small bool       // keyspace of -n small keys
}{
	{name: "BF.ADD, one 10M filter", setup: [][]string{{"BF.RESERVE", "bf:10m", "0.01", "10000000"}},
		args: []string{"BF.ADD", "bf:10m", "key:__rand_int__"}},
	{name: "BF.EXISTS, one 10M filter", setup: [][]string{{"BF.RESERVE", "bf:10m", "0.01", "10000000"}},
		warm: []string{"BF.ADD", "bf:10m", "key:__rand_int__"}, args: []string{"BF.EXISTS", "bf:10m", "key:__rand_int__"}},
	{name: "BF.ADD, small keys", small: true,
		warm: []string{"BF.ADD", "user:__rand_int__:seen", "item"}, args: []string{"BF.ADD", "user:__rand_int__:seen", "key:__rand_int__"}},
	{name: "BF.EXISTS, small keys", small: true,
		warm: []string{"BF.ADD", "user:__rand_int__:seen", "item"}, args: []string{"BF.EXISTS", "user:__rand_int__:seen", "key:__rand_int__"}},
}

// cpuRuns measures server CPU per request (user+system, all threads) at
// -P 16, -c 50, for each bloom serve build, interleaved. Each run starts a
// fresh server: the small-keys runs first create up to -n keys (one
// unmeasured redis-benchmark pass), then the measured pass adds to or
// reads them at random.
func cpuRuns(ctx context.Context, cfg config, servers []server, tmp string) (map[cpuKey][]float64, error) {
	if _, err := exec.LookPath(cfg.redisBenchmark); err != nil {
		return nil, fmt.Errorf("%s not found (apt-get install redis-tools): %w", cfg.redisBenchmark, err)
	}
	var builds []server
	for _, s := range servers {
		if !s.redis {
			builds = append(builds, s)
		}
	}
	out := map[cpuKey][]float64{}
	const requests = 2000000
	run := 0
	for rep := 0; rep < cfg.cpuReps; rep++ {
		for _, op := range cpuOps {
			order := append([]server(nil), builds...)
			if rep%2 == 1 {
				for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
					order[i], order[j] = order[j], order[i]
				}
			}
			for _, s := range order {
				run++
				dir := filepath.Join(tmp, fmt.Sprintf("cpu%d", run))
				t, err := start(ctx, cfg, s, dir)
				if err != nil {
					return nil, err
				}
				err = func() error {
					for _, c := range op.setup {
						a := make([]any, len(c))
						for i := range c {
							a[i] = c[i]
						}
						if err := t.rdb.Do(ctx, a...).Err(); err != nil {
							return err
						}
					}
					keyspace := 10000000
					if op.small {
						keyspace = cfg.n
					}
					if op.warm != nil {
						if _, err := bloomproc.RedisBenchmark(cfg.redisBenchmark, t.addr, 2*keyspace/3+requests/4, 50, 16, keyspace, op.warm); err != nil {
							return err
						}
					}
					if err := t.settle(ctx); err != nil {
						return err
					}
					c0 := cpuTime(t.proc.Process.Pid)
					sm, err := bloomproc.RedisBenchmark(cfg.redisBenchmark, t.addr, requests, 50, 16, keyspace, op.args)
					if err != nil {
						return err
					}
					us := float64(cpuTime(t.proc.Process.Pid)-c0) / float64(time.Microsecond) / requests
					k := cpuKey{op.name, s.name}
					out[k] = append(out[k], us)
					fmt.Fprintf(os.Stderr, "cpu rep %d  %-26s %-22s %5.3f µs/req  %8.0f req/s  load %s\n", rep+1, op.name, s.name, us, sm.RPS, loadavg())
					return nil
				}()
				t.stop()
				os.RemoveAll(dir)
				if err != nil {
					return nil, fmt.Errorf("%s %s: %w", s.name, op.name, err)
				}
			}
		}
	}
	return out, nil
}

// cpuTime is the CPU time (user + system, all threads) a process has used,
// from /proc/PID/stat (clock ticks of 1/100 s, Linux's USER_HZ).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
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

func gitRev(dir string) string {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	rev := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench").Output(); err == nil && len(st) > 0 {
		rev += "+"
	}
	return rev
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func span(v []float64) (lo, hi float64) {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[0], s[len(s)-1]
}

const (
	beginMark = "<!-- keyspacebench:begin -->"
	endMark   = "<!-- keyspacebench:end -->"
)

// replaceSection puts text between the markers of file (at its top when the
// file has none).
func replaceSection(file, text string) error {
	old, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	body := beginMark + "\n" + text + endMark + "\n"
	s := string(old)
	i, j := strings.Index(s, beginMark), strings.Index(s, endMark)
	if i >= 0 && j > i {
		s = s[:i] + body + s[j+len(endMark)+1:]
	} else if len(s) > 0 {
		s = body + "\n" + s
	} else {
		s = body
	}
	return os.WriteFile(file, []byte(s), 0o644)
}

func report(cfg config, servers []server, res map[rowKey]*result, cpu map[cpuKey][]float64, refModule, loadStart, loadEnd string) string {
	var b strings.Builder
	rv, _ := exec.Command(cfg.redisServer, "--version").Output()
	fmt.Fprintf(&b, "# Resident memory per small filter key\n\n")
	fmt.Fprintf(&b, "Written by `%s` in bench/ on %s. ", cfg.cmdline, time.Now().UTC().Format("2006-01-02 15:04 MST"))
	var builds []string
	for _, s := range servers {
		if !s.redis {
			builds = append(builds, "`"+s.name+"` built from commit "+s.rev)
		}
	}
	fmt.Fprintf(&b, "%s", strings.Join(builds, "; "))
	if cfg.module != "" {
		fmt.Fprintf(&b, "; reference RedisBloom %s on %s", refModule, strings.TrimSpace(string(rv)))
	} else {
		fmt.Fprintf(&b, "; no -module given: RedisBloom rows skipped")
	}
	fmt.Fprintf(&b, ". %d CPUs, load average %s at the start, %s at the end (memory is not moved by load; CPU time per request is, less than wall time).\n\n",
		runtime.NumCPU(), loadStart, loadEnd)
	if cfg.reps > 0 {
		fmt.Fprintf(&b, "Each row creates %d keys `user:<i>:seen` on a freshly started server, pipelined (1000 commands per batch) over one connection; "+
			"*RSS/key* is the growth of the server's resident memory divided by the keys, read at rest (no log rewrite running, 2 s after the last reply; "+
			"before it, 1000 other keys were created and deleted so first-use allocations are not counted). "+
			"*accounted/key* is the growth of the server's own INFO used_memory (Redis: jemalloc's allocated bytes; bloom serve: its --maxmemory accounting). "+
			"Both servers run with appendonly and appendfsync everysec. %d repetitions, interleaved (each repetition runs every row on every server, alternating the order); "+
			"medians, with the range over the repetitions.\n\n", cfg.n, cfg.reps)
	}
	refName := ""
	for _, s := range servers {
		if s.redis {
			refName = s.name
		}
	}
	if cfg.reps > 0 {
		fmt.Fprintf(&b, "| keys created by | server | RSS/key bytes (range) | vs RedisBloom | accounted/key | RSS after MiB | load time s |\n|---|---|---:|---:|---:|---:|---:|\n")
	}
	for _, w := range workloads {
		for _, s := range servers {
			r := res[rowKey{w.name, s.name}]
			if r == nil {
				continue
			}
			med := median(r.perKey)
			lo, hi := span(r.perKey)
			vs := "—"
			if refName != "" {
				ref := res[rowKey{w.name, refName}]
				if w.native {
					ref = res[rowKey{workloads[1].name, refName}]
				}
				if ref != nil && !s.redis {
					vs = fmt.Sprintf("%.2fx", med/median(ref.perKey))
					if w.native {
						vs += " (of RESERVE)"
					}
				}
			}
			var after, took []float64
			for i := range r.after {
				after = append(after, mib(r.after[i]))
				took = append(took, r.duration[i].Seconds())
			}
			fmt.Fprintf(&b, "| `%s` | %s | **%.0f** (%.0f–%.0f) | %s | %.0f | %.0f | %.1f |\n",
				w.name, s.name, med, lo, hi, vs, median(r.accPerK), median(after), median(took))
		}
	}
	b.WriteString("\n")
	if cpu != nil {
		fmt.Fprintf(&b, "## Server CPU per request at -P 16\n\n"+
			"redis-benchmark -c 50 -P 16 -n 2000000, on a fresh server per run; *one 10M filter*: `BF.RESERVE bf:10m 0.01 10000000` (-r 10000000, EXISTS after an unmeasured ADD pass); "+
			"*small keys*: up to %d keys `user:__rand_int__:seen` created by an unmeasured BF.ADD pass, then the measured commands at random over them. "+
			"CPU is the server process's user+system time (all threads) over the requests. %d repetitions, interleaved; median (range).\n\n", cfg.n, cfg.cpuReps)
		var names []string
		for _, s := range servers {
			if !s.redis {
				names = append(names, s.name)
			}
		}
		fmt.Fprintf(&b, "| command |")
		for _, n := range names {
			fmt.Fprintf(&b, " %s µs/req |", n)
		}
		if len(names) == 2 {
			fmt.Fprintf(&b, " after/before |")
		}
		b.WriteString("\n|---|")
		for range names {
			b.WriteString("---:|")
		}
		if len(names) == 2 {
			b.WriteString("---:|")
		}
		b.WriteString("\n")
		for _, op := range cpuOps {
			fmt.Fprintf(&b, "| %s |", op.name)
			var meds []float64
			for _, n := range names {
				v := cpu[cpuKey{op.name, n}]
				lo, hi := span(v)
				meds = append(meds, median(v))
				fmt.Fprintf(&b, " %.3f (%.3f–%.3f) |", median(v), lo, hi)
			}
			if len(names) == 2 {
				fmt.Fprintf(&b, " %.3f |", meds[1]/meds[0])
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}
