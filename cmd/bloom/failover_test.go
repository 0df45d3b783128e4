package main

// Automatic failover by Redis Sentinel, with real processes: three servers
// (a master and two replicas) and three redis-sentinels. A writer using
// go-redis's failover client adds items and sends WAIT 1 after each; the
// master is killed with SIGKILL; Sentinel promotes a replica and the
// writer continues on it. Every item WAIT confirmed must be on the new
// master; the old master, restarted on its port and data directory, must
// be turned into a replica by Sentinel and converge to the master's keys.
//
// The same scenario runs against redis-server (target "redis"), which
// checks the harness itself and gives the times to compare with. The long
// form (BLOOMKIT_LONG=1, or BLOOMKIT_FAILOVER_KILLS=n) kills the master of
// one group again and again; BLOOMKIT_FAILOVER_BENCH=n measures the time
// from the kill to the first acknowledged write, n groups of each target
// interleaved.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"
	"github.com/bloomkit/bloomkit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// failoverTarget is what the scenario runs on: how to start one instance
// and how to write, check and compare its data.
type failoverTarget struct {
	name string
	// password, when set, is every instance's requirepass and masterauth,
	// and the sentinels' auth-pass.
	password string
	// conf is the config file of an instance on port with data in dir,
	// a replica of master unless master is "".
	conf func(port int, dir, master string) string
	// argv starts an instance with its config file.
	argv func(conf string) []string
	// prepare runs once on the first master.
	prepare func(ctx context.Context, c *redis.Client) error
	// add is the write the writer repeats (one item).
	add func(p redis.Pipeliner, item string) *redis.Cmd
	// present reports which items are on the instance.
	present func(ctx context.Context, c *redis.Client, items []string) ([]bool, error)
	// digest sums up an instance's data, to compare a replica with its master.
	digest func(ctx context.Context, c *redis.Client) (string, error)
}

const failoverKey = "failover"

func bloomTarget() failoverTarget {
	return failoverTarget{
		name: "bloom",
		conf: func(port int, dir, master string) string {
			c := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nappendonly yes\nappendfsync everysec\n", port, dir)
			if master != "" {
				host, mport, _ := net.SplitHostPort(master)
				c += "replicaof " + host + " " + mport + "\n"
			}
			return c
		},
		argv: func(conf string) []string { return []string{bin, "serve", "--config", conf, "--log-level", "warn"} },
		prepare: func(ctx context.Context, c *redis.Client) error {
			return c.Do(ctx, "BF.RESERVE", failoverKey, "0.001", "1000000").Err()
		},
		add: func(p redis.Pipeliner, item string) *redis.Cmd {
			return p.Do(context.Background(), "BF.ADD", failoverKey, item)
		},
		present: func(ctx context.Context, c *redis.Client, items []string) ([]bool, error) {
			args := []any{"BF.MEXISTS", failoverKey}
			for _, it := range items {
				args = append(args, it)
			}
			v, err := c.Do(ctx, args...).Slice()
			if err != nil {
				return nil, err
			}
			out := make([]bool, len(v))
			for i, x := range v {
				// RESP3 booleans, or RESP2's 0 and 1.
				out[i] = x == true || x == int64(1)
			}
			return out, nil
		},
		digest: func(ctx context.Context, c *redis.Client) (string, error) {
			keys, err := c.Keys(ctx, "*").Result()
			if err != nil {
				return "", err
			}
			sort.Strings(keys)
			var b strings.Builder
			for _, k := range keys {
				b.WriteString(k + ":")
				for it := int64(0); ; {
					v, err := c.Do(ctx, "BF.SCANDUMP", k, it).Slice()
					if err != nil {
						return "", fmt.Errorf("BF.SCANDUMP %s: %w", k, err)
					}
					it = v[0].(int64)
					if it == 0 {
						break
					}
					fmt.Fprintf(&b, "%d:%x;", it, v[1])
				}
			}
			return b.String(), nil
		},
	}
}

func redisTarget(t *testing.T) failoverTarget {
	server := redistest.Require(t).Server
	return failoverTarget{
		name: "redis",
		conf: func(port int, dir, master string) string {
			c := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsave \"\"\nappendonly no\ndaemonize no\nlogfile \"\"\n", port, dir)
			if master != "" {
				host, mport, _ := net.SplitHostPort(master)
				c += "replicaof " + host + " " + mport + "\n"
			}
			return c
		},
		argv:    func(conf string) []string { return []string{server, conf} },
		prepare: func(ctx context.Context, c *redis.Client) error { return nil },
		add: func(p redis.Pipeliner, item string) *redis.Cmd {
			return p.Do(context.Background(), "SADD", failoverKey, item)
		},
		present: func(ctx context.Context, c *redis.Client, items []string) ([]bool, error) {
			return c.SMIsMember(ctx, failoverKey, toAny(items)...).Result()
		},
		digest: func(ctx context.Context, c *redis.Client) (string, error) {
			m, err := c.SMembers(ctx, failoverKey).Result()
			if err != nil {
				return "", err
			}
			sort.Strings(m)
			return strings.Join(m, ","), nil
		},
	}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// instance is one server process, restartable on its port with its data
// directory and config file (which CONFIG REWRITE may have changed).
type instance struct {
	addr, dir, conf string
	password        string
	argv            []string
	cmd             *exec.Cmd
	done            chan struct{}
	log             *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (in *instance) start() error {
	in.done = make(chan struct{})
	in.cmd = exec.Command(in.argv[0], in.argv[1:]...)
	in.cmd.Dir = in.dir
	in.cmd.Stdout, in.cmd.Stderr = in.log, in.log
	if err := in.cmd.Start(); err != nil {
		return err
	}
	done := in.done
	go func() { in.cmd.Wait(); close(done) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c := in.client()
		err := c.Ping(context.Background()).Err()
		c.Close()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s exited during start-up", in.addr)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not answering PING: %w", in.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill is SIGKILL: no shutdown, no last fsync.
func (in *instance) kill() {
	select {
	case <-in.done:
		return
	default:
	}
	in.cmd.Process.Kill()
	<-in.done
}

func (in *instance) client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: in.addr, Password: in.password, MaxRetries: -1, DialTimeout: time.Second})
}

// failoverGroup is a master, its replicas and the sentinels watching them.
type failoverGroup struct {
	t         *testing.T
	tg        failoverTarget
	nodes     []*instance
	sentinels []*redistest.Sentinel
	master    int // index in nodes
}

func startFailoverGroup(t *testing.T, tg failoverTarget) *failoverGroup {
	redistest.RequireSentinel(t)
	g := &failoverGroup{t: t, tg: tg}
	ports := make([]int, 3)
	for i := range ports {
		p, err := redistest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	master := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	for i, p := range ports {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("node%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		of := master
		if i == 0 {
			of = ""
		}
		conf := filepath.Join(filepath.Dir(dir), fmt.Sprintf("node%d.conf", i))
		text := tg.conf(p, dir, of)
		if tg.password != "" {
			text += "requirepass " + tg.password + "\nmasterauth " + tg.password + "\n"
		}
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		in := &instance{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), dir: dir, conf: conf, argv: tg.argv(conf), log: &lockedBuffer{}, password: tg.password}
		if err := in.start(); err != nil {
			t.Fatalf("%s node %d: %v\n%s", tg.name, i, err, in.log)
		}
		t.Cleanup(in.kill)
		g.nodes = append(g.nodes, in)
	}
	t.Cleanup(func() {
		if t.Failed() {
			g.dumpLogs()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := g.nodes[0].client()
	defer c.Close()
	if err := tg.prepare(ctx, c); err != nil {
		t.Fatalf("preparing the master: %v", err)
	}
	g.sentinels = redistest.StartSentinels(t, 3, redistest.SentinelConfig{Master: master, AuthPass: tg.password})
	if err := g.waitReady(60 * time.Second); err != nil {
		t.Fatalf("sentinels not ready: %v", err)
	}
	return g
}

func (g *failoverGroup) dumpLogs() {
	for i, n := range g.nodes {
		g.t.Logf("--- %s node %d (%s) log:\n%s", g.tg.name, i, n.addr, tail(n.log.String(), 4000))
		conf, _ := os.ReadFile(n.conf)
		g.t.Logf("--- node %d config file:\n%s", i, conf)
	}
	for i, s := range g.sentinels {
		g.t.Logf("--- sentinel %d (%s) log:\n%s", i, s.Addr, tail(s.Log(), 4000))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func (g *failoverGroup) replicaAddrs() []string {
	var out []string
	for i, n := range g.nodes {
		if i != g.master {
			out = append(out, n.addr)
		}
	}
	return out
}

// waitReady waits until every sentinel agrees on the master, sees both
// replicas up and linked, and knows the other sentinels.
func (g *failoverGroup) waitReady(limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	return redistest.WaitReady(ctx, g.sentinels, g.nodes[g.master].addr, g.replicaAddrs())
}

// settle waits until every sentinel agrees on a master among the nodes —
// the one they name, which a second failover may have changed — and sees
// the others as its replicas; g.master is then that node.
func (g *failoverGroup) settle(limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for {
		var err error
		if a, merr := g.sentinels[0].Master(ctx); merr != nil {
			err = merr
		} else {
			err = fmt.Errorf("sentinel names %s, not one of the nodes", a)
			for i, n := range g.nodes {
				if n.addr == a {
					g.master = i
					try, stop := context.WithTimeout(ctx, 5*time.Second)
					err = redistest.WaitReady(try, g.sentinels, a, g.replicaAddrs())
					stop()
				}
			}
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (g *failoverGroup) failoverClient() *redis.Client {
	var addrs []string
	for _, s := range g.sentinels {
		addrs = append(addrs, s.Addr)
	}
	return redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    "mymaster",
		Password:      g.tg.password,
		SentinelAddrs: addrs,
		MaxRetries:    -1, // the writer retries with its next item
		DialTimeout:   500 * time.Millisecond,
		ReadTimeout:   2 * time.Second,
		WriteTimeout:  2 * time.Second,
		PoolSize:      2,
	})
}

// failoverWriter adds unique items through the failover client, each
// followed by WAIT 1 on the same connection, and records what WAIT
// confirmed and when writes were acknowledged.
type failoverWriter struct {
	mu        sync.Mutex
	confirmed []string    // WAIT answered ≥ 1
	acks      []time.Time // every acknowledged write
	waited    []time.Time // every write WAIT confirmed
	errTimes  []time.Time // every failed write
	lastErr   error
	pause     sync.RWMutex
	stop      chan struct{}
	stopped   chan struct{}
}

func (w *failoverWriter) run(tg failoverTarget, c *redis.Client) {
	defer close(w.stopped)
	ctx := context.Background()
	// One write every writeEvery at most: a writer flat out cost six
	// processes a core of CPU for the half minute of a failover, and
	// measured the times after a kill no better (a write's round trip
	// with WAIT is itself about a millisecond).
	tick := time.NewTicker(writeEvery)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		w.pause.RLock()
		item := "item-" + strconv.Itoa(i)
		var add, wait *redis.Cmd
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			add = tg.add(p, item)
			wait = p.Do(ctx, "WAIT", 1, 1000)
			return nil
		})
		now := time.Now()
		w.pause.RUnlock()
		w.mu.Lock()
		if add != nil && add.Err() == nil {
			w.acks = append(w.acks, now)
			if n, err := wait.Int64(); err == nil && n >= 1 {
				w.confirmed = append(w.confirmed, item)
				w.waited = append(w.waited, now)
			}
		} else {
			w.errTimes = append(w.errTimes, now)
			w.lastErr = err
		}
		w.mu.Unlock()
		if err != nil {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// writeEvery paces the failover writer.
const writeEvery = 2 * time.Millisecond

// firstAfter returns the first time in ts after t0 (zero if none).
func firstAfter(ts []time.Time, t0 time.Time) time.Time {
	i := sort.Search(len(ts), func(i int) bool { return ts[i].After(t0) })
	if i == len(ts) {
		return time.Time{}
	}
	return ts[i]
}

// failoverRound is what one kill measured.
type failoverRound struct {
	toAck, toConfirmed time.Duration // kill → first acknowledged / WAIT-confirmed write
	confirmed, lost    int
}

// killMaster kills the master, waits for Sentinel's new master and for
// the writer's first acknowledged write there, checks that every write
// WAIT confirmed is on the new master, restarts the old master and waits
// until it is a replica whose data equals the master's.
func (g *failoverGroup) killMaster(w *failoverWriter) failoverRound {
	t := g.t
	old := g.master
	// Writes confirmed before the kill must all survive it: let the writer
	// have 10 more of them confirmed first.
	w.mu.Lock()
	before := len(w.waited)
	w.mu.Unlock()
	poll.Until(t, 30*time.Second, func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		if n := len(w.waited) - before; n < 10 {
			return fmt.Errorf("%s: %d writes confirmed before the kill (last error: %v)", g.tg.name, n, w.lastErr)
		}
		return nil
	})
	killAt := time.Now()
	g.nodes[old].kill()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var newMaster string
	for {
		a, err := g.sentinels[0].Master(ctx)
		if err == nil && a != g.nodes[old].addr {
			newMaster = a
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: no new master 60 s after the kill", g.tg.name)
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.master = -1
	for i, n := range g.nodes {
		if n.addr == newMaster {
			g.master = i
		}
	}
	if g.master < 0 || g.master == old {
		t.Fatalf("sentinel names %s, not one of the replicas", newMaster)
	}
	// The writer must get through to the new master.
	var r failoverRound
	for {
		// A write in flight when the kill began may still be answered by
		// the old master: the new master's writes are those after the
		// writer's first failure.
		w.mu.Lock()
		failed := firstAfter(w.errTimes, killAt)
		var ack, conf time.Time
		if !failed.IsZero() {
			ack, conf = firstAfter(w.acks, failed), firstAfter(w.waited, failed)
		}
		lastErr := w.lastErr
		w.mu.Unlock()
		if !ack.IsZero() && !conf.IsZero() {
			r.toAck, r.toConfirmed = ack.Sub(killAt), conf.Sub(killAt)
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: the writer has no confirmed write 60 s after the kill (last error: %v)", g.tg.name, lastErr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Every write WAIT confirmed is on the new master.
	w.mu.Lock()
	confirmed := slices.Clone(w.confirmed)
	w.mu.Unlock()
	c := g.nodes[g.master].client()
	defer c.Close()
	r.confirmed = len(confirmed)
	for lo := 0; lo < len(confirmed); lo += 1000 {
		batch := confirmed[lo:min(lo+1000, len(confirmed))]
		ok, err := g.tg.present(ctx, c, batch)
		if err != nil {
			t.Fatalf("checking the new master: %v", err)
		}
		for i, p := range ok {
			if !p {
				r.lost++
				if r.lost <= 5 {
					t.Errorf("%s: %s was confirmed by WAIT before the kill but is not on the new master %s", g.tg.name, batch[i], newMaster)
				}
			}
		}
	}
	// The old master comes back where it was; Sentinel makes it a replica.
	if err := g.nodes[old].start(); err != nil {
		t.Fatalf("restarting the old master: %v\n%s", err, g.nodes[old].log)
	}
	if err := g.settle(90 * time.Second); err != nil {
		t.Fatalf("%s: the group did not settle after the failover: %v", g.tg.name, err)
	}
	if g.nodes[g.master].addr != newMaster {
		// On a loaded machine a sentinel may miss the new master's
		// answers for down-after-milliseconds and fail over again; the
		// group must still settle, and converge on that master's data.
		t.Logf("%s: Sentinel failed over again, from %s to %s", g.tg.name, newMaster, g.nodes[g.master].addr)
		c.Close()
		c = g.nodes[g.master].client()
	}
	// It converges: with the writer paused, every replica's data
	// becomes the master's.
	w.pause.Lock()
	defer w.pause.Unlock()
	want, err := g.tg.digest(ctx, c)
	if err != nil {
		t.Fatalf("digest of the master: %v", err)
	}
	for i, n := range g.nodes {
		if i == g.master {
			continue
		}
		rc := n.client()
		for {
			got, err := g.tg.digest(ctx, rc)
			if err == nil && got == want {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: replica %s did not converge to the master's data (err %v)", g.tg.name, n.addr, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		rc.Close()
	}
	return r
}

// runFailover starts a group and a writer and kills the master kills times.
func runFailover(t *testing.T, tg failoverTarget, kills int) []failoverRound {
	g := startFailoverGroup(t, tg)
	fc := g.failoverClient()
	defer fc.Close()
	w := &failoverWriter{stop: make(chan struct{}), stopped: make(chan struct{})}
	go w.run(tg, fc)
	defer func() { close(w.stop); <-w.stopped }()
	var rounds []failoverRound
	for k := range kills {
		r := g.killMaster(w)
		t.Logf("%s kill %d: first acknowledged write %v after the kill, first WAIT-confirmed %v; %d confirmed writes checked, %d lost",
			tg.name, k+1, r.toAck.Round(time.Millisecond), r.toConfirmed.Round(time.Millisecond), r.confirmed, r.lost)
		rounds = append(rounds, r)
	}
	return rounds
}

// failoverKills is how many times the long form kills the master.
func failoverKills(t *testing.T) int {
	if v := os.Getenv("BLOOMKIT_FAILOVER_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("BLOOMKIT_FAILOVER_KILLS=%q: want a positive count", v)
		}
		return n
	}
	if os.Getenv("BLOOMKIT_LONG") == "1" {
		return 20
	}
	return 1
}

// TestSentinelFailover: bloom serve under Redis Sentinel loses no write
// that WAIT confirmed when its master is killed, and the old master
// rejoins as a replica and converges.
func TestSentinelFailover(t *testing.T) {
	if raceEnabled {
		t.Skip("six processes and Sentinel's timers: runs without -race (make test reruns it so)")
	}
	if testing.Short() {
		t.Skip("-short: half a minute of Sentinel's timers (make test runs it)")
	}
	runFailover(t, bloomTarget(), failoverKills(t))
}

// TestSentinelFailoverAuth: the same with a password on every instance
// (requirepass and masterauth; the sentinels' auth-pass), in the long run.
func TestSentinelFailoverAuth(t *testing.T) {
	if raceEnabled {
		t.Skip("runs without -race only")
	}
	if os.Getenv("BLOOMKIT_LONG") != "1" && os.Getenv("BLOOMKIT_FAILOVER_AUTH") != "1" {
		t.Skip("with passwords: BLOOMKIT_LONG=1 or BLOOMKIT_FAILOVER_AUTH=1")
	}
	tg := bloomTarget()
	tg.password = "s3cret"
	runFailover(t, tg, 1)
}

// TestSentinelFailoverRedis runs the same scenario on redis-server: the
// harness's check, and the times bloom serve is compared with.
func TestSentinelFailoverRedis(t *testing.T) {
	if raceEnabled {
		t.Skip("runs without -race only")
	}
	if os.Getenv("BLOOMKIT_LONG") != "1" && os.Getenv("BLOOMKIT_FAILOVER_TARGET") != "redis" {
		t.Skip("the scenario on redis-server checks the harness: BLOOMKIT_LONG=1 or BLOOMKIT_FAILOVER_TARGET=redis")
	}
	kills := 1 // the harness's check; BLOOMKIT_FAILOVER_KILLS repeats it
	if os.Getenv("BLOOMKIT_FAILOVER_KILLS") != "" {
		kills = failoverKills(t)
	}
	runFailover(t, redisTarget(t), kills)
}

// TestSentinelFailoverTimes measures the failover time (kill → first
// acknowledged write on the new master, and → first write WAIT confirmed)
// for bloom serve and redis-server, BLOOMKIT_FAILOVER_BENCH groups of
// each, interleaved, one kill per group.
func TestSentinelFailoverTimes(t *testing.T) {
	v := os.Getenv("BLOOMKIT_FAILOVER_BENCH")
	if v == "" {
		t.Skip("set BLOOMKIT_FAILOVER_BENCH=n to measure n failovers of each target")
	}
	reps, err := strconv.Atoi(v)
	if err != nil || reps < 1 {
		t.Fatalf("BLOOMKIT_FAILOVER_BENCH=%q: want a positive count", v)
	}
	targets := []failoverTarget{bloomTarget(), redisTarget(t)}
	times := map[string][]failoverRound{}
	for rep := range reps {
		for _, tg := range targets {
			t.Run(fmt.Sprintf("%s-%d", tg.name, rep), func(t *testing.T) {
				times[tg.name] = append(times[tg.name], runFailover(t, tg, 1)...)
			})
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("load average: %s", strings.TrimSpace(string(load)))
	for _, tg := range targets {
		var ack, conf []time.Duration
		lost := 0
		for _, r := range times[tg.name] {
			ack = append(ack, r.toAck)
			conf = append(conf, r.toConfirmed)
			lost += r.lost
		}
		slices.Sort(ack)
		slices.Sort(conf)
		if len(ack) == 0 {
			continue
		}
		t.Logf("%-5s n=%d  kill→first ack: min %v median %v max %v  kill→first WAIT-confirmed: min %v median %v max %v  confirmed writes lost: %d",
			tg.name, len(ack), ack[0].Round(time.Millisecond), ack[len(ack)/2].Round(time.Millisecond), ack[len(ack)-1].Round(time.Millisecond),
			conf[0].Round(time.Millisecond), conf[len(conf)/2].Round(time.Millisecond), conf[len(conf)-1].Round(time.Millisecond), lost)
	}
}
