// Command redisbench measures redisfilter, bloomkit's Bloom filter kept in
// Redis, against a Redisson-like baseline (a plain Redis bitmap, one
// SETBIT or GETBIT per probe, pipelined), on a local redis-server and on a
// local three-master Redis Cluster that it starts and stops itself. It
// writes a Markdown report. Run it from the bench directory:
//
//	go run ./cmd/redisbench -out REDIS.md
//
// -quick runs 100,000 keys instead of 1,000,000. redis-server and
// redis-cli must be installed (`make deps`).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/bloomkit/bloomkit/redisfilter"
	"github.com/redis/go-redis/v9"
	"github.com/zeebo/xxh3"
)

type config struct {
	out      string
	n        int
	p        float64
	batch    int
	parallel int
	shard    uint64
}

func main() {
	var c config
	quick := flag.Bool("quick", false, "100,000 keys instead of -n")
	flag.StringVar(&c.out, "out", "REDIS.md", "report file")
	flag.IntVar(&c.n, "n", 1_000_000, "keys added and tested")
	flag.Float64Var(&c.p, "p", 0.01, "false-positive rate the filters are sized for")
	flag.IntVar(&c.batch, "batch", redisfilter.DefaultBatchSize, "keys per batch (one pipeline)")
	flag.IntVar(&c.parallel, "parallel", redisfilter.DefaultParallel, "batches in flight at once, for both contenders")
	flag.Uint64Var(&c.shard, "shard", 64<<10, "shard size in bytes of the spread-out redisfilter variant")
	flag.Parse()
	if *quick {
		c.n = 100_000
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "redisbench:", err)
		os.Exit(1)
	}
}

// result is one line of the report.
type result struct {
	setup, contender, op string
	keys                 int
	capacity             uint64 // the filter was sized for
	elapsed              time.Duration
	batches              int
	roundTrips           int64 // pipelines seen by the node clients
	commands             int64
	note                 string
}

func run(c config) error {
	dir, err := os.MkdirTemp("", "redisbench-")
	if err != nil {
		return err
	}
	var servers []*server
	cleanup := func() {
		for _, s := range servers {
			s.stop()
		}
		_ = os.RemoveAll(dir)
	}
	defer cleanup()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { <-sig; cleanup(); os.Exit(1) }()

	single, err := startServer(filepath.Join(dir, "single"))
	if err != nil {
		return err
	}
	servers = append(servers, single)
	var nodes []string
	for i := range 3 {
		s, err := startServer(filepath.Join(dir, fmt.Sprint("node", i)),
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
		if err != nil {
			return err
		}
		servers = append(servers, s)
		nodes = append(nodes, s.addr)
	}
	if err := createCluster(nodes); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "single redis on %s, cluster on %s\n", single.addr, strings.Join(nodes, " "))

	keys := make([][]byte, c.n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "https://example.com/page/%d", i)
	}
	var results []result
	for _, setup := range []string{"single", "cluster"} {
		var counter pipeCounter
		var client redis.UniversalClient
		if setup == "single" {
			cl := redis.NewClient(&redis.Options{Addr: single.addr, PoolSize: 4 * c.parallel})
			cl.AddHook(&counter)
			client = cl
		} else {
			client = redis.NewClusterClient(&redis.ClusterOptions{
				Addrs: nodes,
				NewClient: func(o *redis.Options) *redis.Client {
					o.PoolSize = 4 * c.parallel
					cl := redis.NewClient(o)
					cl.AddHook(&counter)
					return cl
				},
			})
		}
		rs, err := benchSetup(c, setup, client, &counter, keys)
		_ = client.Close()
		if err != nil {
			return err
		}
		results = append(results, rs...)
	}
	return writeReport(c, results)
}

func benchSetup(c config, setup string, client redis.UniversalClient, counter *pipeCounter, keys [][]byte) ([]result, error) {
	ctx := context.Background()
	var out []result
	flush := func() error {
		if cc, ok := client.(*redis.ClusterClient); ok {
			return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return c.FlushAll(ctx).Err() })
		}
		return client.FlushAll(ctx).Err()
	}
	batches := (len(keys) + c.batch - 1) / c.batch
	measure := func(contender, op string, fn func() error) (result, error) {
		counter.reset()
		start := time.Now()
		err := fn()
		r := result{setup: setup, contender: contender, op: op, keys: len(keys), elapsed: time.Since(start),
			batches: batches, roundTrips: counter.pipelines.Load(), commands: counter.cmds.Load()}
		fmt.Fprintf(os.Stderr, "%-8s %-34s %-8s %8.0f keys/s  %5.1f round trips/batch\n", setup, contender, op,
			float64(r.keys)/r.elapsed.Seconds(), float64(r.roundTrips)/float64(r.batches))
		return r, err
	}

	for _, v := range []struct {
		capacity uint64
		shard    uint64
	}{
		{uint64(len(keys)), 0},       // one shard: batches are dense (image commands)
		{uint64(len(keys)), c.shard}, // small shards spread over the cluster
		{100 * uint64(len(keys)), 0}, // a filter 100x larger: batches are sparse (BITFIELDs)
	} {
		if err := flush(); err != nil {
			return nil, err
		}
		opts := redisfilter.Options{Capacity: v.capacity, ErrorRate: c.p, ShardBytes: v.shard,
			BatchSize: c.batch, Parallel: c.parallel}
		f, err := redisfilter.Open(ctx, client, "bench", opts)
		if err != nil {
			return nil, err
		}
		info, err := f.Info(ctx)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("redisfilter: %s filter, %d shard(s) of %s", size(info.Params.M/8), info.Shards, size(min(info.ShardBytes, info.Params.M/8)))
		var st0 redisfilter.Stats
		kinds := func() string {
			st := f.Stats()
			d, im := st.Commands-st0.Commands, st.Images-st0.Images
			st0 = st
			return fmt.Sprintf("%d BITFIELD, %d image", d-im, im)
		}
		r, err := measure(name, "AddMany", func() error { return f.AddMany(ctx, keys) })
		if err != nil {
			return nil, err
		}
		r.note, r.capacity = kinds(), v.capacity
		out = append(out, r)
		var got []bool
		r, err = measure(name, "TestMany", func() error {
			var err error
			got, err = f.TestMany(ctx, keys, nil)
			return err
		})
		if err != nil {
			return nil, err
		}
		r.note, r.capacity = kinds(), v.capacity
		if err := allTrue(got); err != nil {
			return nil, err
		}
		out = append(out, r)
		absent := make([][]byte, 100_000)
		for i := range absent {
			absent[i] = fmt.Appendf(nil, "absent-%d", i)
		}
		got, err = f.TestMany(ctx, absent, got[:0])
		if err != nil {
			return nil, err
		}
		out[len(out)-1].note += fmt.Sprintf("; FPR %.4f", fpr(got))
	}

	for _, capacity := range []uint64{uint64(len(keys)), 100 * uint64(len(keys))} {
		if err := flush(); err != nil {
			return nil, err
		}
		b := newBaseline(client, capacity, c.p)
		name := fmt.Sprintf("baseline: %s bitmap, k = %d", size(b.m/8), b.k)
		r, err := measure(name, "AddMany", func() error { return b.each(ctx, keys, c, b.addBatch) })
		if err != nil {
			return nil, err
		}
		r.capacity = capacity
		out = append(out, r)
		r, err = measure(name, "TestMany", func() error { return b.each(ctx, keys, c, b.testBatch) })
		if err != nil {
			return nil, err
		}
		if b.misses.Load() != 0 {
			return nil, fmt.Errorf("baseline: %d false negatives", b.misses.Load())
		}
		r.capacity = capacity
		out = append(out, r)
	}
	return out, nil
}

func allTrue(got []bool) error {
	for i, ok := range got {
		if !ok {
			return fmt.Errorf("false negative at key %d", i)
		}
	}
	return nil
}

func fpr(got []bool) float64 {
	n := 0
	for _, ok := range got {
		if ok {
			n++
		}
	}
	return float64(n) / float64(len(got))
}

// baseline is a Redisson-like filter: one bitmap key holding a classic
// m-bit filter, probe i at (h1 + i*h2) mod m, one SETBIT or GETBIT per
// probe, pipelined a batch at a time.
type baseline struct {
	c      redis.UniversalClient
	key    string
	m      uint64
	k      uint32
	misses atomic.Int64
}

func newBaseline(c redis.UniversalClient, n uint64, p float64) *baseline {
	est := bloom.Estimate(n, p)
	return &baseline{c: c, key: "{baseline}:bits", m: est.M, k: est.K}
}

func (b *baseline) positions(key []byte, dst []int64) []int64 {
	h := xxh3.Hash128(key)
	for i := range uint64(b.k) {
		dst = append(dst, int64((h.Lo+i*h.Hi)%b.m))
	}
	return dst
}

func (b *baseline) addBatch(ctx context.Context, keys [][]byte) error {
	pipe := b.c.Pipeline()
	var pos []int64
	for _, k := range keys {
		for _, p := range b.positions(k, pos[:0]) {
			pipe.SetBit(ctx, b.key, p, 1)
		}
	}
	_, err := pipe.Exec(ctx)
	return err
}

func (b *baseline) testBatch(ctx context.Context, keys [][]byte) error {
	pipe := b.c.Pipeline()
	var pos []int64
	cmds := make([]*redis.IntCmd, 0, len(keys)*int(b.k))
	for _, k := range keys {
		for _, p := range b.positions(k, pos[:0]) {
			cmds = append(cmds, pipe.GetBit(ctx, b.key, p))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	for i := 0; i < len(cmds); i += int(b.k) {
		for _, c := range cmds[i : i+int(b.k)] {
			if c.Val() != 1 {
				b.misses.Add(1)
				break
			}
		}
	}
	return nil
}

// each runs fn over keys in batches, c.parallel batches at a time, as
// redisfilter does.
func (b *baseline) each(ctx context.Context, keys [][]byte, c config, fn func(context.Context, [][]byte) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, c.parallel)
	for w := range c.parallel {
		wg.Go(func() {
			for {
				i := int(next.Add(1)-1) * c.batch
				if i >= len(keys) {
					return
				}
				if err := fn(ctx, keys[i:min(i+c.batch, len(keys))]); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// pipeCounter counts, on the node clients, the pipelines sent (each one
// round trip to one node) and the commands in them.
type pipeCounter struct{ pipelines, cmds atomic.Int64 }

func (h *pipeCounter) reset() { h.pipelines.Store(0); h.cmds.Store(0) }

func (h *pipeCounter) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *pipeCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *pipeCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 {
			switch cmds[0].Name() {
			case "bitfield", "bitfield_ro", "eval", "evalsha", "getrange", "setbit", "getbit":
				h.pipelines.Add(1)
				h.cmds.Add(int64(len(cmds)))
			}
		}
		return next(ctx, cmds)
	}
}

func writeReport(c config, rs []result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# redisfilter against a Redisson-like baseline\n\n")
	fmt.Fprintf(&b, "Written by `go run ./cmd/redisbench -n %d -batch %d -parallel %d` on %s.\n\n", c.n, c.batch, c.parallel, time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "%d keys added (AddMany), then tested (TestMany), in batches of %d keys, %d batches in flight; "+
		"filters sized for %d keys at p = %v. Machine: %s/%s, %d CPUs (shared; load average %s at the end), %s, %s.\n\n",
		c.n, c.batch, c.parallel, c.n, c.p, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), loadAvg(), runtime.Version(), redisVersion())
	b.WriteString("- **redisfilter**: a blocked Bloom filter; each batch is one pipeline holding, per shard it touches, " +
		"either BITFIELDs (`SET u1` / `BITFIELD_RO GET u1` at each key's probes, 128 keys per command) or, when the batch's keys " +
		"are dense in the shard (their blocks span under 128 bytes per probe), one image command: a script that ORs a bitmap " +
		"of the touched blocks in with BITOP (AddMany) or one GETRANGE of the span, tested locally (TestMany). " +
		"A 1,000,000-key filter at 1% is 1.2 MB, so its batches of 8,192 keys are dense; the 100x larger filter shows the BITFIELD path.\n" +
		"- **baseline** (what Redisson's RBloomFilter does): one bitmap key, a classic filter, one SETBIT / GETBIT per probe, " +
		"pipelined a batch at a time with the same batch size and parallelism, sized like each redisfilter variant " +
		"(\"vs baseline\" compares filters sized for the same number of keys). In the cluster its one key lives on one node.\n" +
		"- **round trips/batch**: pipelines the node clients sent, divided by batches; in the cluster a batch's pipeline is " +
		"split per node and the parts are sent in parallel.\n\n")
	b.WriteString("| setup | sized for | contender | op | keys/s | vs baseline | round trips/batch | commands/batch | note |\n")
	b.WriteString("|---|---:|---|---|---:|---:|---:|---:|---|\n")
	base := map[string]float64{}
	for _, r := range rs {
		if strings.HasPrefix(r.contender, "baseline") {
			base[fmt.Sprint(r.setup, r.op, r.capacity)] = float64(r.keys) / r.elapsed.Seconds()
		}
	}
	for _, r := range rs {
		rate := float64(r.keys) / r.elapsed.Seconds()
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.1fx | %.2f | %.0f | %s |\n", r.setup, thousands(float64(r.capacity)), r.contender, r.op,
			thousands(rate), rate/base[fmt.Sprint(r.setup, r.op, r.capacity)], float64(r.roundTrips)/float64(r.batches),
			float64(r.commands)/float64(r.batches), r.note)
	}
	b.WriteString("\nThe CPU is shared with other work, so absolute rates move from run to run; compare rows of one run.\n")
	if err := os.WriteFile(c.out, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", c.out)
	return nil
}

func thousands(x float64) string {
	s := strconv.FormatInt(int64(x+0.5), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func size(b uint64) string {
	switch {
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", b>>20)
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", b>>10)
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

func loadAvg() string {
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

func redisVersion() string {
	out, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		return "redis-server unknown"
	}
	f := strings.Fields(string(out))
	for _, w := range f {
		if strings.HasPrefix(w, "v=") {
			return "Redis " + strings.TrimPrefix(w, "v=")
		}
	}
	return strings.TrimSpace(string(out))
}

// server is a redis-server this program started.
type server struct {
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// freePort returns a loopback port that is free together with its cluster
// bus port (port + 10000).
func freePort() (int, error) {
	for range 200 {
		p := 20000 + rand.IntN(25000)
		var ls []net.Listener
		ok := true
		for _, q := range []int{p, p + 10000} {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(q)))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			_ = l.Close()
		}
		if ok {
			return p, nil
		}
	}
	return 0, errors.New("no free loopback port")
}

func startServer(dir string, extra ...string) (*server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server is needed (make deps): %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no"}, extra...)
	s := &server{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: exec.Command(bin, args...), done: make(chan struct{})}
	s.cmd.Dir = dir
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting redis-server: %w", err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := ping(s.addr); err == nil {
			return s, nil
		} else if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("redis-server on %s does not answer: %w", s.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// createCluster joins the nodes with redis-cli and waits for every node
// to report cluster_state:ok.
func createCluster(nodes []string) error {
	args := append([]string{"--cluster", "create"}, nodes...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("redis-cli --cluster create: %w\n%s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range nodes {
		for {
			c := redis.NewClient(&redis.Options{Addr: n})
			info, err := c.ClusterInfo(context.Background()).Result()
			_ = c.Close()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("cluster node %s not ready: %v", n, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}
