// Command nativebench measures bloomkit's own filter keys on `bloom serve`
// against RedisBloom-layout keys of the same capacity and rate on the same
// server: requests/s of BF.ADD and BF.EXISTS at -P 1 and -P 16
// (redis-benchmark, interleaved repetitions, medians), bits per item, the
// false-positive rate measured at capacity, and memory, including a time
// window of 10M items a day. It writes bench/NATIVE.md.
//
//	cd bench && go run ./cmd/nativebench
//
// It builds `bloom serve` from the repository it runs in (-repo, default
// ..) and needs redis-benchmark (Debian: redis-tools).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bloomkit/bloomkit/bench/internal/bloomproc"
)

type config struct {
	repo, out, tool string
	n, c, r, reps   int
	pipes           []int
	capacity        int
	rates           []string
	probes          int
}

// kind is one way to make a key of the given rate and capacity.
type kind struct {
	name    string
	reserve func(key, rate string, capacity int) []any
}

var kinds = []kind{
	{"RedisBloom layout", func(key, rate string, capacity int) []any {
		return []any{"BF.RESERVE", key, rate, capacity}
	}},
	{"RedisBloom NONSCALING", func(key, rate string, capacity int) []any {
		return []any{"BF.RESERVE", key, rate, capacity, "NONSCALING"}
	}},
	{"LAYOUT blocked", func(key, rate string, capacity int) []any {
		return []any{"BF.RESERVE", key, rate, capacity, "LAYOUT", "blocked"}
	}},
	{"LAYOUT classic", func(key, rate string, capacity int) []any {
		return []any{"BF.RESERVE", key, rate, capacity, "LAYOUT", "classic"}
	}},
	{"WINDOW 24h", func(key, rate string, capacity int) []any {
		return []any{"BF.RESERVE", key, rate, capacity, "WINDOW", "24h"}
	}},
}

func main() {
	var cfg config
	var pipes, rates string
	flag.StringVar(&cfg.repo, "repo", "..", "bloomkit repository root (builds ./cmd/bloom there)")
	flag.StringVar(&cfg.out, "out", "NATIVE.md", "markdown report to write (empty: none)")
	flag.StringVar(&cfg.tool, "redis-benchmark", "redis-benchmark", "redis-benchmark binary")
	flag.IntVar(&cfg.n, "n", 200000, "requests per run at -P 1; ×10 at -P 16 and deeper")
	flag.IntVar(&cfg.c, "c", 50, "parallel connections (-c of redis-benchmark)")
	flag.IntVar(&cfg.r, "r", 10000000, "random keyspace (-r of redis-benchmark)")
	flag.IntVar(&cfg.reps, "reps", 5, "interleaved repetitions")
	flag.StringVar(&pipes, "P", "1,16", "pipeline depths, comma-separated")
	flag.IntVar(&cfg.capacity, "capacity", 10000000, "filter capacity (items)")
	flag.StringVar(&rates, "rates", "0.01,0.001", "error rates for the size and false-positive table")
	flag.IntVar(&cfg.probes, "probes", 1000000, "absent items probed per filter for the measured rate")
	flag.Parse()
	for _, p := range strings.Split(pipes, ",") {
		v, err := strconv.Atoi(p)
		if err != nil {
			log.Fatalf("-P: %v", err)
		}
		cfg.pipes = append(cfg.pipes, v)
	}
	cfg.rates = strings.Split(rates, ",")
	if err := run(cfg); err != nil {
		log.Fatal(err)
	}
}

type server struct {
	cmd  *exec.Cmd
	addr string
	rdb  *redis.Client
}

func start(ctx context.Context, bin, dir string) (*server, error) {
	addr := freeAddr()
	cmd := exec.Command(bin, "serve", "--addr", addr, "--dir", dir, "--appendfsync", "everysec", "--log-level", "warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	o := bloomproc.ClientOptions(addr, time.Minute)
	o.PoolSize = 4
	s := &server{cmd: cmd, addr: addr, rdb: redis.NewClient(o)}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if s.rdb.Ping(ctx).Err() == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("bloom serve on %s did not answer", addr)
		}
	}
}

func (s *server) stop() {
	s.rdb.Close()
	s.cmd.Process.Kill()
	s.cmd.Wait()
}

// freeAddr is a port the kernel had free a moment ago.
func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// speedRow is one (operation, depth, kind) cell's repetitions.
type speedRow struct {
	op   string
	p    int
	kind string
	runs []bloomproc.Sample
}

func run(cfg config) error {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "nativebench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := bloomproc.Build(ctx, cfg.repo, tmp)
	if err != nil {
		return err
	}
	srv, err := start(ctx, bin, filepath.Join(tmp, "data"))
	if err != nil {
		return err
	}
	defer srv.stop()

	// Throughput: ADD into a fresh key, then EXISTS on it, kinds in a new
	// random order each time, every depth and repetition interleaved.
	rows := map[string]*speedRow{}
	row := func(op string, p int, k string) *speedRow {
		id := fmt.Sprint(op, p, k)
		if rows[id] == nil {
			rows[id] = &speedRow{op: op, p: p, kind: k}
		}
		return rows[id]
	}
	load0 := loadAvg()
	for rep := 0; rep < cfg.reps; rep++ {
		for _, p := range cfg.pipes {
			n := cfg.n
			if p > 1 {
				n *= 10
			}
			for _, op := range []string{"BF.ADD", "BF.EXISTS"} {
				order := slices.Clone(kinds)
				rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				for _, k := range order {
					key := "speed:" + strings.ReplaceAll(k.name, " ", "_")
					if op == "BF.ADD" {
						srv.rdb.Del(ctx, key)
						if err := srv.rdb.Do(ctx, k.reserve(key, "0.01", cfg.capacity)...).Err(); err != nil {
							return fmt.Errorf("%s: %w", k.name, err)
						}
					}
					smp, err := bloomproc.RedisBenchmark(cfg.tool, srv.addr, n, cfg.c, p, cfg.r, []string{op, key, "item:__rand_int__"})
					if err != nil {
						return err
					}
					row(op, p, k.name).runs = append(row(op, p, k.name).runs, smp)
					fmt.Fprintf(os.Stderr, "rep %d -P %d %s %s: %.0f/s p99 %.2f ms\n", rep+1, p, op, k.name, smp.RPS, smp.P99)
				}
			}
		}
	}
	load1 := loadAvg()
	for _, k := range kinds {
		srv.rdb.Del(ctx, "speed:"+strings.ReplaceAll(k.name, " ", "_"))
	}

	// Size, measured rate and memory at capacity.
	type sizeRow struct {
		rate, kind     string
		size           int64
		rssGrowth      int64
		fpr            float64
		fillS, probesS float64
	}
	var sizes []sizeRow
	for _, rate := range cfg.rates {
		for _, k := range kinds {
			key := "size:" + rate + ":" + strings.ReplaceAll(k.name, " ", "_")
			rss0, _ := bloomproc.RSS(srv.cmd.Process.Pid)
			if err := srv.rdb.Do(ctx, k.reserve(key, rate, cfg.capacity)...).Err(); err != nil {
				return fmt.Errorf("%s: %w", k.name, err)
			}
			t0 := time.Now()
			if err := fill(ctx, srv.rdb, key, cfg.capacity); err != nil {
				return err
			}
			fillS := time.Since(t0).Seconds()
			rss1, _ := bloomproc.RSS(srv.cmd.Process.Pid)
			t0 = time.Now()
			pos, err := probe(ctx, srv.rdb, key, cfg.probes)
			if err != nil {
				return err
			}
			size, err := srv.rdb.Do(ctx, "BF.INFO", key, "SIZE").Int64Slice()
			if err != nil || len(size) != 1 {
				return fmt.Errorf("BF.INFO %s SIZE: %v %v", key, size, err)
			}
			r := sizeRow{rate: rate, kind: k.name, size: size[0], rssGrowth: rss1 - rss0,
				fpr: float64(pos) / float64(cfg.probes), fillS: fillS, probesS: time.Since(t0).Seconds()}
			sizes = append(sizes, r)
			fmt.Fprintf(os.Stderr, "%s %s: %.2f MiB, %.1f bits/item, rate %.4f%%, RSS +%.2f MiB\n", rate, k.name,
				float64(r.size)/(1<<20), float64(r.size)*8/float64(cfg.capacity), 100*r.fpr, float64(r.rssGrowth)/(1<<20))
			srv.rdb.Del(ctx, key)
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "# bloomkit's own filters on bloom serve vs RedisBloom-layout keys\n\n")
	fmt.Fprintf(&b, "Written by `go run ./cmd/nativebench` in bench/ on %s (bloom serve built from commit %s), %d CPUs, load average %.1f before and %.1f after the throughput runs. ",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), commit(cfg.repo), runtime.NumCPU(), load0, load1)
	fmt.Fprintf(&b, "One bloom serve (appendfsync everysec); every key has capacity %s. A `RedisBloom layout` key is `BF.RESERVE key rate capacity` (RedisBloom's own sizing and hashing: a scaling filter, whose first link gets half the rate), `RedisBloom NONSCALING` adds `NONSCALING` (one link at the full rate, the fair comparison for bits per item); the others add `LAYOUT blocked`, `LAYOUT classic` or `WINDOW 24h` (docs/commands.md, \"bloomkit's own filters\").\n\n", commas(cfg.capacity))
	fmt.Fprintf(&b, "## Requests per second (redis-benchmark)\n\n")
	fmt.Fprintf(&b, "redis-benchmark -c %d -r %s, -n %s at -P 1 and ×10 deeper, rate 0.01; each ADD run into a freshly reserved key, the EXISTS run on it; the kinds in a new random order each time, %d interleaved repetitions; medians, and the ratio to the RedisBloom-layout key's median.\n\n",
		cfg.c, commas(cfg.r), commas(cfg.n), cfg.reps)
	fmt.Fprintf(&b, "| command | -P | key | requests/s | ratio | p99 ms | runs (requests/s) |\n|---|---:|---|---:|---:|---:|---|\n")
	for _, p := range cfg.pipes {
		for _, op := range []string{"BF.ADD", "BF.EXISTS"} {
			base := median(rows[fmt.Sprint(op, p, kinds[0].name)].runs, func(s bloomproc.Sample) float64 { return s.RPS })
			for _, k := range kinds {
				r := rows[fmt.Sprint(op, p, k.name)]
				rps := median(r.runs, func(s bloomproc.Sample) float64 { return s.RPS })
				p99 := median(r.runs, func(s bloomproc.Sample) float64 { return s.P99 })
				var all []string
				for _, s := range r.runs {
					all = append(all, fmt.Sprintf("%.0f", s.RPS))
				}
				fmt.Fprintf(&b, "| %s | %d | %s | %.0f | %.2fx | %.2f | %s |\n", op, p, k.name, rps, rps/base, p99, strings.Join(all, ", "))
			}
		}
	}
	fmt.Fprintf(&b, "\n## Size and measured false-positive rate at capacity\n\n")
	fmt.Fprintf(&b, "Each key filled with exactly %s distinct items (pipelined BF.MADD of 1,000), then %s items never added probed with BF.MEXISTS. *Size* is BF.INFO's; *RSS growth* the server's resident memory after filling minus before reserving (a window's older generations stay untouched, zero pages that cost nothing, until the clock reaches them). For the window all items arrive at once — the burst its sizing guarantees (docs/filters.md, \"Window\").\n\n",
		commas(cfg.capacity), commas(cfg.probes))
	fmt.Fprintf(&b, "| rate | key | size MiB | bits per item | measured rate | RSS growth MiB | fill s |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, r := range sizes {
		fmt.Fprintf(&b, "| %s | %s | %.2f | %.2f | %.4f%% | %.2f | %.1f |\n", r.rate, r.kind, float64(r.size)/(1<<20),
			float64(r.size)*8/float64(cfg.capacity), 100*r.fpr, float64(r.rssGrowth)/(1<<20), r.fillS)
	}
	text := b.String()
	fmt.Print(text)
	if cfg.out == "" {
		return nil
	}
	return os.WriteFile(cfg.out, []byte(text), 0o644)
}

// fill adds items "fill:0" … "fill:n-1" with pipelined BF.MADD.
func fill(ctx context.Context, c *redis.Client, key string, n int) error {
	const batch, depth = 1000, 8
	for i := 0; i < n; {
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for d := 0; d < depth && i < n; d++ {
				args := make([]any, 0, batch+2)
				args = append(args, "BF.MADD", key)
				for j := 0; j < batch && i < n; j++ {
					args = append(args, "fill:"+strconv.Itoa(i))
					i++
				}
				p.Do(ctx, args...)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("BF.MADD %s: %w", key, err)
		}
	}
	return nil
}

// probe asks for n items never added and counts the positives.
func probe(ctx context.Context, c *redis.Client, key string, n int) (int, error) {
	const batch = 1000
	pos := 0
	for i := 0; i < n; {
		args := make([]any, 0, batch+2)
		args = append(args, "BF.MEXISTS", key)
		for j := 0; j < batch && i < n; j++ {
			args = append(args, "absent:"+strconv.Itoa(i))
			i++
		}
		res, err := c.Do(ctx, args...).Int64Slice()
		if err != nil {
			return 0, fmt.Errorf("BF.MEXISTS %s: %w", key, err)
		}
		for _, v := range res {
			pos += int(v)
		}
	}
	return pos, nil
}

func median(runs []bloomproc.Sample, f func(bloomproc.Sample) float64) float64 {
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return v
}

func commit(repo string) string {
	out, err := exec.Command("git", "-C", repo, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
