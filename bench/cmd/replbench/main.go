// Command replbench measures replication between two bloom serves and, in
// the same run, between two redis-servers with the RedisBloom module:
//
//   - full sync of about -gib GiB of Bloom filters (random bits, loaded
//     with BF.RESERVE … NONSCALING and BF.LOADCHUNK, so both servers hold
//     the same bytes): the time from REPLICAOF until the replica's link is
//     up, its throughput against the loopback and disk limits this run
//     measures, and the master's slowest reply to a client probing it
//     every 2 ms meanwhile;
//   - replication lag under redis-benchmark -P 16 load on the master: a
//     marker key written on the master every 20 ms, polled on the replica
//     until it appears.
//
// Repetitions are interleaved (bloom, redis, bloom, …). It writes
// REPLICATION.md (-out) with the load average beside every wall-clock
// number. Needs redis-server, redis-benchmark and, for Redis, the
// RedisBloom module in $BLOOMKIT_REDISBLOOM_MODULE (Redis is skipped with a note
// without it).
//
//	cd bench && go run ./cmd/replbench -gib 1 -reps 3
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkit/bloomkit/bench/internal/bloomproc"
	"github.com/redis/go-redis/v9"
)

type config struct {
	gib     float64
	reps    int
	keys    int
	lagSecs int
	out     string
	repo    string
}

func main() {
	var cfg config
	flag.Float64Var(&cfg.gib, "gib", 1, "GiB of filters to sync")
	flag.IntVar(&cfg.reps, "reps", 3, "repetitions of each measurement (interleaved)")
	flag.IntVar(&cfg.keys, "keys", 8, "filters the data is split into")
	flag.IntVar(&cfg.lagSecs, "lag-seconds", 10, "seconds of redis-benchmark load per lag measurement")
	flag.StringVar(&cfg.out, "out", "REPLICATION.md", "report file")
	flag.StringVar(&cfg.repo, "repo", "..", "repository whose cmd/bloom is measured")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "replbench:", err)
		os.Exit(1)
	}
}

// server is one kind of server under test.
type server struct {
	name  string
	start func(dir string, port int, extra ...string) (*exec.Cmd, error)
	// replicaOf is the command making it a replica.
	version string
}

func run(cfg config) error {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "replbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := bloomproc.Build(ctx, cfg.repo, tmp)
	if err != nil {
		return err
	}
	servers := []server{{name: "bloom serve", start: func(dir string, port int, extra ...string) (*exec.Cmd, error) {
		args := append([]string{"serve", "--addr", "127.0.0.1:" + strconv.Itoa(port), "--dir", dir, "--log-level", "warn"}, extra...)
		return startProc(exec.Command(bin, args...), port)
	}}}
	redisNote := ""
	so := os.Getenv("BLOOMKIT_REDISBLOOM_MODULE")
	if _, err := exec.LookPath("redis-server"); err != nil {
		redisNote = "redis-server is not installed: no comparison."
	} else if so == "" {
		redisNote = "$BLOOMKIT_REDISBLOOM_MODULE is not set: no comparison with Redis + RedisBloom."
	} else {
		servers = append(servers, server{name: "redis-server + RedisBloom", start: func(dir string, port int, extra ...string) (*exec.Cmd, error) {
			args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
				"--appendonly", "yes", "--appendfsync", "everysec", "--protected-mode", "no", "--loadmodule", so,
				"--repl-diskless-sync", "no", "--proto-max-bulk-len", "2gb"}, extra...)
			return startProc(exec.Command("redis-server", args...), port)
		}})
	}
	loop, err := loopbackMBs(1 << 30)
	if err != nil {
		return err
	}
	disk, err := diskMBs(tmp, 1<<30)
	if err != nil {
		return err
	}
	fmt.Printf("replbench: loopback %.0f MB/s, disk (write + fsync) %.0f MB/s\n", loop, disk)
	syncs := map[string][]syncResult{}
	lags := map[string][]lagResult{}
	for rep := 0; rep < cfg.reps; rep++ {
		for _, sv := range servers {
			r, err := measureSync(ctx, cfg, sv, filepath.Join(tmp, fmt.Sprintf("s%d", rep)))
			if err != nil {
				return fmt.Errorf("%s full sync: %w", sv.name, err)
			}
			fmt.Printf("replbench: %s full sync %v, %.0f MB/s, probe max %v (load %s)\n", sv.name, r.took.Round(time.Millisecond), r.mbs, r.probeMax.Round(10*time.Microsecond), r.load)
			syncs[sv.name] = append(syncs[sv.name], r)
		}
		for _, sv := range servers {
			r, err := measureLag(ctx, cfg, sv, filepath.Join(tmp, fmt.Sprintf("l%d", rep)))
			if err != nil {
				return fmt.Errorf("%s lag: %w", sv.name, err)
			}
			fmt.Printf("replbench: %s lag p50 %v p99 %v max %v under %.0f req/s (load %s)\n", sv.name, r.p50, r.p99, r.max, r.rps, r.load)
			lags[sv.name] = append(lags[sv.name], r)
		}
	}
	return report(cfg, servers, redisNote, loop, disk, syncs, lags)
}

// startProc starts a server and waits until it accepts connections.
func startProc(cmd *exec.Cmd, port int) (*exec.Cmd, error) {
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			c.Close()
			return cmd, nil
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, fmt.Errorf("%s did not start", cmd.Path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func stop(cmd *exec.Cmd) {
	cmd.Process.Kill()
	cmd.Wait()
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func client(port int) *redis.Client {
	return redis.NewClient(bloomproc.ClientOptions("127.0.0.1:"+strconv.Itoa(port), 60*time.Second))
}

// loadavg is /proc/loadavg's first three fields.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// fill loads n filters of random bits totalling about gib GiB, the same
// bytes on either server (RedisBloom's layout is bloomkit's).
func fill(ctx context.Context, c *redis.Client, cfg config) (int64, error) {
	// 9.585 bits per item at 1%: items per filter for the share of bytes.
	per := int64(cfg.gib * float64(1<<30) / float64(cfg.keys) * 8 / 9.585)
	var total int64
	buf := make([]byte, 16<<20)
	for k := 0; k < cfg.keys; k++ {
		key := "f" + strconv.Itoa(k)
		if err := c.Do(ctx, "BF.RESERVE", key, "0.01", per, "NONSCALING").Err(); err != nil {
			return 0, err
		}
		type chunk struct {
			iter int64
			n    int
		}
		var chunks []chunk
		for it := int64(0); ; {
			res, err := c.Do(ctx, "BF.SCANDUMP", key, it).Slice()
			if err != nil {
				return 0, err
			}
			it = res[0].(int64)
			if it == 0 {
				break
			}
			data, _ := res[1].(string)
			chunks = append(chunks, chunk{it, len(data)})
		}
		for i, ch := range chunks {
			if i == 0 {
				continue // the header
			}
			if ch.n > len(buf) {
				buf = make([]byte, ch.n)
			}
			rand.Read(buf[:ch.n])
			if err := c.Do(ctx, "BF.LOADCHUNK", key, ch.iter, buf[:ch.n]).Err(); err != nil {
				return 0, err
			}
			total += int64(ch.n)
		}
	}
	return total, nil
}

type syncResult struct {
	took     time.Duration
	bytes    int64
	mbs      float64
	probeMax time.Duration
	probeP99 time.Duration
	probes   int
	over25   int
	load     string
	fillTook time.Duration
	idleMax  time.Duration
}

// startMaster empties dir, makes its m (master) and r (replica)
// directories, picks both ports and starts the master on dir/m.
func startMaster(sv server, dir string) (m *exec.Cmd, mp, rp int, err error) {
	os.RemoveAll(dir)
	os.MkdirAll(filepath.Join(dir, "m"), 0o755)
	os.MkdirAll(filepath.Join(dir, "r"), 0o755)
	mp, rp = freePort(), freePort()
	m, err = sv.start(filepath.Join(dir, "m"), mp)
	return m, mp, rp, err
}

// measureSync fills a master, then times a replica's full sync while a
// client probes the master every 2 ms.
func measureSync(ctx context.Context, cfg config, sv server, dir string) (syncResult, error) {
	var r syncResult
	m, mp, rp, err := startMaster(sv, dir)
	if err != nil {
		return r, err
	}
	defer stop(m)
	mc := client(mp)
	defer mc.Close()
	t0 := time.Now()
	if r.bytes, err = fill(ctx, mc, cfg); err != nil {
		return r, err
	}
	r.fillTook = time.Since(t0)
	rs, err := sv.start(filepath.Join(dir, "r"), rp)
	if err != nil {
		return r, err
	}
	defer stop(rs)
	rc := client(rp)
	defer rc.Close()
	probe := client(mp)
	defer probe.Close()
	// Probe idle for a second, then through the sync.
	type sample struct {
		at  time.Time
		lat time.Duration
	}
	samples := make(chan []sample, 1)
	done := make(chan struct{})
	go func() {
		var out []sample
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				samples <- out
				return
			case <-t.C:
			}
			s := time.Now()
			probe.Do(ctx, "BF.EXISTS", "f0", "probe"+strconv.Itoa(i))
			out = append(out, sample{s, time.Since(s)})
		}
	}()
	time.Sleep(time.Second)
	start := time.Now()
	if err := rc.Do(ctx, "REPLICAOF", "127.0.0.1", mp).Err(); err != nil {
		close(done)
		<-samples
		return r, err
	}
	for {
		info, err := rc.Info(ctx, "replication").Result()
		if err != nil {
			close(done)
			<-samples
			return r, err
		}
		if strings.Contains(info, "master_link_status:up") && strings.Contains(info, "master_sync_in_progress:0") {
			break
		}
		if time.Since(start) > 10*time.Minute {
			close(done)
			<-samples
			return r, fmt.Errorf("sync did not finish")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.took = time.Since(start)
	end := time.Now()
	close(done)
	ss := <-samples
	var during []time.Duration
	for _, s := range ss {
		if s.at.Add(s.lat).Before(start) {
			r.idleMax = max(r.idleMax, s.lat)
			continue
		}
		if s.at.After(end) {
			continue
		}
		during = append(during, s.lat)
		if s.lat >= 25*time.Millisecond {
			r.over25++
		}
	}
	sort.Slice(during, func(i, j int) bool { return during[i] < during[j] })
	r.probes = len(during)
	if len(during) > 0 {
		r.probeMax = during[len(during)-1]
		r.probeP99 = during[len(during)*99/100]
	}
	r.mbs = float64(r.bytes) / 1e6 / r.took.Seconds()
	r.load = loadavg()
	return r, nil
}

type lagResult struct {
	p50, p99, max time.Duration
	markers       int
	rps           float64
	load          string
}

// measureLag runs redis-benchmark -P 16 against a master with a replica
// and measures how long each marker key takes to appear on the replica.
func measureLag(ctx context.Context, cfg config, sv server, dir string) (lagResult, error) {
	var r lagResult
	m, mp, rp, err := startMaster(sv, dir)
	if err != nil {
		return r, err
	}
	defer stop(m)
	rs, err := sv.start(filepath.Join(dir, "r"), rp)
	if err != nil {
		return r, err
	}
	defer stop(rs)
	mc, rc := client(mp), client(rp)
	defer mc.Close()
	defer rc.Close()
	if err := mc.Do(ctx, "BF.RESERVE", "load", "0.01", 10000000).Err(); err != nil {
		return r, err
	}
	if err := rc.Do(ctx, "REPLICAOF", "127.0.0.1", mp).Err(); err != nil {
		return r, err
	}
	// Synced: the link is up, the snapshot loaded, and a write made
	// after it has arrived (WAIT alone may count a replica still loading).
	if err := mc.Set(ctx, "synced", "1", 0).Err(); err != nil {
		return r, err
	}
	for deadline := time.Now().Add(5 * time.Minute); ; {
		info, _ := rc.Info(ctx, "replication").Result()
		if n, _ := rc.Exists(ctx, "synced").Result(); n == 1 && strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("the replica did not sync")
		}
		time.Sleep(20 * time.Millisecond)
	}
	bctx, cancel := context.WithTimeout(ctx, time.Duration(cfg.lagSecs+1)*time.Second)
	defer cancel()
	bench := exec.CommandContext(bctx, "redis-benchmark", "-p", strconv.Itoa(mp), "-P", "16", "-c", "4", "-n", "100000000",
		"-r", "100000000", "--csv", "BF.ADD", "load", "__rand_int__")
	bench.Stdout, bench.Stderr = io.Discard, io.Discard
	if err := bench.Start(); err != nil {
		return r, err
	}
	time.Sleep(500 * time.Millisecond)
	before, _ := mc.Info(ctx, "stats").Result()
	t0 := time.Now()
	var lags []time.Duration
	for i := 0; time.Since(t0) < time.Duration(cfg.lagSecs)*time.Second-time.Second; i++ {
		key := "marker:" + strconv.Itoa(i)
		s := time.Now()
		if err := mc.Set(ctx, key, "1", 0).Err(); err != nil {
			return r, err
		}
		for {
			n, err := rc.Exists(ctx, key).Result()
			if err != nil {
				return r, err
			}
			if n == 1 {
				break
			}
			if time.Since(s) > 30*time.Second {
				return r, fmt.Errorf("marker %d never reached the replica", i)
			}
		}
		lags = append(lags, time.Since(s))
		time.Sleep(20 * time.Millisecond)
	}
	after, _ := mc.Info(ctx, "stats").Result()
	elapsed := time.Since(t0)
	cancel()
	bench.Wait()
	r.rps = float64(statField(after, "total_commands_processed")-statField(before, "total_commands_processed")) / elapsed.Seconds()
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	r.markers = len(lags)
	if len(lags) > 0 {
		r.p50 = lags[len(lags)/2].Round(10 * time.Microsecond)
		r.p99 = lags[len(lags)*99/100].Round(10 * time.Microsecond)
		r.max = lags[len(lags)-1].Round(10 * time.Microsecond)
	}
	r.load = loadavg()
	return r, nil
}

func statField(info, name string) int64 {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// loopbackMBs sends n bytes over a loopback TCP connection: the network
// limit of this machine's replication.
func loopbackMBs(n int64) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	got := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err
			return
		}
		defer c.Close()
		_, err = io.Copy(io.Discard, c)
		got <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 1<<20)
	rand.Read(buf)
	start := time.Now()
	for sent := int64(0); sent < n; sent += int64(len(buf)) {
		if _, err := c.Write(buf); err != nil {
			return 0, err
		}
	}
	c.Close()
	if err := <-got; err != nil {
		return 0, err
	}
	return float64(n) / 1e6 / time.Since(start).Seconds(), nil
}

// diskMBs writes n bytes to a file in dir and fsyncs it: the disk limit
// of a sync that goes through a file on each side.
func diskMBs(dir string, n int64) (float64, error) {
	f, err := os.CreateTemp(dir, "disk-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 1<<20)
	rand.Read(buf)
	start := time.Now()
	for w := int64(0); w < n; w += int64(len(buf)) {
		if _, err := f.Write(buf); err != nil {
			return 0, err
		}
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	return float64(n) / 1e6 / time.Since(start).Seconds(), nil
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

func report(cfg config, servers []server, redisNote string, loop, disk float64, syncs map[string][]syncResult, lags map[string][]lagResult) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# Replication: full sync and lag, bloom serve beside Redis + RedisBloom\n\n")
	p("Written by `go run ./cmd/replbench -gib %g -reps %d` in bench/ on %s (%d CPUs, load average at the end: %s).\n\n",
		cfg.gib, cfg.reps, time.Now().UTC().Format("2006-01-02 15:04 UTC"), numCPU(), loadavg())
	if redisNote != "" {
		p("%s\n\n", redisNote)
	}
	p("Limits measured in the same run: loopback TCP %.0f MB/s (one connection, 1 GiB), disk write + fsync %.0f MB/s (1 GiB).\n\n", loop, disk)
	p("## Full sync of %.2f GiB of filters\n\n", cfg.gib)
	p("%d NONSCALING Bloom filters at 1%% filled with random bits (BF.RESERVE, then BF.LOADCHUNK of random chunks), the same bytes on both servers; ", cfg.keys)
	p("the replica is started empty and sent REPLICAOF; the sync ends when its INFO shows master_link_status:up and master_sync_in_progress:0 (polled every 10 ms). ")
	p("A probe client sends BF.EXISTS to the master every 2 ms; its slowest reply during the sync is the master's stall. ")
	p("bloom serve writes the snapshot to a file and sends it (disk-based, its only mode); Redis runs with repl-diskless-sync no (the same method), appendonly yes, appendfsync everysec on both. Throughput is the filters' bytes over the sync time. Repetitions interleaved.\n\n")
	p("| server | rep | sync time | throughput | of loopback | probe max | probe p99 | probes ≥ 25 ms | idle max | load average |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, sv := range servers {
		for i, r := range syncs[sv.name] {
			p("| %s | %d | %s | %.0f MB/s | %.0f%% | **%s** | %s | %d of %d | %s | %s |\n", sv.name, i+1, ms(r.took), r.mbs, 100*r.mbs/loop, ms(r.probeMax), ms(r.probeP99), r.over25, r.probes, ms(r.idleMax), r.load)
		}
	}
	p("\n## Replication lag under redis-benchmark -P 16\n\n")
	p("`redis-benchmark -P 16 -c 4 -r 100000000 BF.ADD load __rand_int__` runs against the master for %d s; meanwhile a client SETs `marker:N` on the master every 20 ms and polls the replica (EXISTS, back to back) until it is there: the lag is from the SET's send to the first EXISTS that sees it (so it includes one round trip to each server).\n\n", cfg.lagSecs)
	p("| server | rep | lag p50 | lag p99 | lag max | markers | master ops/s | load average |\n|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, sv := range servers {
		for i, r := range lags[sv.name] {
			p("| %s | %d | %s | **%s** | %s | %d | %.0f | %s |\n", sv.name, i+1, ms(r.p50), ms(r.p99), ms(r.max), r.markers, r.rps, r.load)
		}
	}
	p("\n## Against the goals\n\n")
	for _, sv := range servers {
		var mx []time.Duration
		var p99 []time.Duration
		var mbs []float64
		for _, r := range syncs[sv.name] {
			mx = append(mx, r.probeMax)
			mbs = append(mbs, r.mbs)
		}
		for _, r := range lags[sv.name] {
			p99 = append(p99, r.p99)
		}
		if len(mx) == 0 {
			continue
		}
		sort.Float64s(mbs)
		p("- %s: master's slowest reply during a full sync, median of runs %s (worst %s; goal ≤ 25 ms); sync throughput median %.0f MB/s (%.0f%% of loopback, %.0f%% of disk); lag p99 median %s (goal ≤ 10 ms).\n",
			sv.name, ms(median(mx)), ms(maxDur(mx)), mbs[len(mbs)/2], 100*mbs[len(mbs)/2]/loop, 100*mbs[len(mbs)/2]/disk, ms(median(p99)))
	}
	return os.WriteFile(cfg.out, []byte(b.String()), 0o644)
}

func maxDur(d []time.Duration) time.Duration {
	var m time.Duration
	for _, x := range d {
		m = max(m, x)
	}
	return m
}
