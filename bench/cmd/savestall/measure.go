package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bloomkit/bloomkit/bench/internal/bloomproc"
)

// target is one server holding one large value.
type target struct {
	name      string // "bloom serve" or "redis-server"
	p         *proc
	what      string // the value, for the report
	dataBytes int64
	read      func(rng *rand.Rand) []any // the 2 ms probe
	write     func(rng *rand.Rand) []any // the writer's command
	forks     bool                       // saves in a forked child (Redis)
}

// scenario is one measured save.
type scenario struct {
	cmd    string // BGSAVE or BGREWRITEAOF
	writer bool   // a client writes as fast as it can during the save
	// redisNoCompress runs it on Redis with rdbcompression no (CONFIG SET
	// before, restored after): with compression on, Redis's child
	// allocates an LZF output buffer as large as the value, which is
	// memory the save needs but not copy-on-write. Redis only.
	redisNoCompress bool
}

func (s scenario) String() string {
	n := s.cmd
	if s.redisNoCompress {
		n += " (rdbcompression no)"
	}
	if s.writer {
		n += " + writer"
	}
	return n
}

// span is one request: sent at start, answered at end.
type span struct{ start, end time.Time }

func (s span) d() time.Duration { return s.end.Sub(s.start) }

// measurement is one save with clients running.
type measurement struct {
	unsupported bool
	saveTime    time.Duration
	during      []time.Duration // probe latencies of requests overlapping the save
	slow        []string        // "latency at +offset" of probes ≥ 25 ms, offset from the command
	idle        []time.Duration // probe latencies in the idle time before it
	idleTime    time.Duration
	writes      []time.Duration // writer latencies overlapping the save
	rssBefore   int64
	extra       int64 // peak extra memory during the save (see sampleMemory)
	hwmExtra    int64 // VmHWM after the save − RSS before (bloom serve: peak reset before)
	cow         int64 // Redis's own rdb_last_cow_size / aof_last_cow_size
	cowKnown    bool
	fork        time.Duration // Redis's latest_fork_usec
	status      string
}

// corrected adds, for each probe slower than the interval, the probes a
// client on a fixed schedule would have sent meanwhile and that would have
// waited for the same reply (HdrHistogram's coordinated-omission
// correction): a 2 s stall then counts as a thousand slow probes, not one.
func corrected(d []time.Duration, interval time.Duration) []time.Duration {
	out := slices.Clone(d)
	for _, x := range d {
		for y := x - interval; y > 0; y -= interval {
			out = append(out, y)
		}
	}
	return out
}

// slowProbe is the goal's limit: probes this slow are listed with the
// moment they were sent, to tell a stall at the start of a save (taking the
// point in time) from one at its end (switching files).
const slowProbe = 25 * time.Millisecond

// clientTimeout is long: a server stalled for seconds is a result.
const clientTimeout = 2 * time.Minute

func infoMap(ctx context.Context, c *redis.Client, sections ...string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, clientTimeout)
	defer cancel()
	s, err := c.Info(ctx, sections...).Result()
	if err != nil {
		return nil, fmt.Errorf("INFO: %w", err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}

// busy reports whether a snapshot or log rewrite is running or scheduled.
func busy(m map[string]string) bool {
	return m["rdb_bgsave_in_progress"] == "1" || m["aof_rewrite_in_progress"] == "1" || m["aof_rewrite_scheduled"] == "1"
}

// waitIdle waits until no save or rewrite runs.
func waitIdle(ctx context.Context, c *redis.Client, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		m, err := infoMap(ctx, c, "persistence")
		if err != nil {
			return err
		}
		if !busy(m) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("a save or rewrite is still running after %v", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// loop sends cmd every interval (back to back when interval is 0 or a reply
// is late) until ctx ends, recording each request.
func loop(ctx context.Context, addr string, interval time.Duration, rng *rand.Rand, cmd func(*rand.Rand) []any, out *[]span) error {
	c := redis.NewClient(bloomproc.ClientOptions(addr, clientTimeout))
	defer c.Close()
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		if tick != nil {
			select {
			case <-ctx.Done():
				return nil
			case <-tick:
			}
		} else if ctx.Err() != nil {
			return nil
		}
		args := cmd(rng)
		rctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
		start := time.Now()
		err := c.Do(rctx, args...).Err()
		end := time.Now()
		cancel()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("%v: %w", args[0], err)
		}
		*out = append(*out, span{start, end})
	}
}

// memSampler samples the server's memory every 5 ms: its RSS and, for a
// forking server, the private memory of its children (the saver's
// copied-on-write pages). peak is the largest (RSS − before) + children.
type memSampler struct {
	pid    int
	forks  bool
	before int64
	mu     sync.Mutex
	peak   int64
}

func (m *memSampler) run(ctx context.Context) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rss, err := statusKB(m.pid, "VmRSS")
		if err != nil {
			continue
		}
		extra := rss - m.before
		if m.forks {
			for _, ch := range children(m.pid) {
				if p, err := privateBytes(ch); err == nil {
					extra += p
				}
			}
		}
		m.mu.Lock()
		m.peak = max(m.peak, extra)
		m.mu.Unlock()
	}
}

// measure runs one scenario: a probe every interval (and a writer), an
// idle baseline, the save command, polling INFO every 10 ms until
// it is over, and 300 ms more.
func measure(ctx context.Context, t *target, sc scenario, interval, idle time.Duration, seed uint64) (*measurement, error) {
	ctl := redis.NewClient(bloomproc.ClientOptions(t.p.addr, clientTimeout))
	defer ctl.Close()
	if err := waitIdle(ctx, ctl, 10*time.Minute); err != nil {
		return nil, err
	}
	m := &measurement{}
	if sc.redisNoCompress {
		if err := ctl.Do(ctx, "CONFIG", "SET", "rdbcompression", "no").Err(); err != nil {
			return nil, fmt.Errorf("CONFIG SET rdbcompression no: %w", err)
		}
		defer ctl.Do(context.Background(), "CONFIG", "SET", "rdbcompression", "yes")
	}
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	var reads, writes []span
	var readErr, writeErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		readErr = loop(lctx, t.p.addr, interval, rand.New(rand.NewPCG(seed, 1)), t.read, &reads)
	}()
	if sc.writer {
		wg.Add(1)
		go func() {
			defer wg.Done()
			writeErr = loop(lctx, t.p.addr, 0, rand.New(rand.NewPCG(seed, 2)), t.write, &writes)
		}()
	}
	finish := func() error {
		stop()
		wg.Wait()
		return errors.Join(readErr, writeErr)
	}
	select {
	case <-time.After(idle):
	case <-ctx.Done():
		finish()
		return nil, ctx.Err()
	}

	pid := t.p.pid()
	resetPeak(pid) // best effort; without it VmHWM is the peak since start
	before, err := statusKB(pid, "VmRSS")
	if err != nil {
		finish()
		return nil, fmt.Errorf("read RSS of %s: %w", t.name, err)
	}
	m.rssBefore = before
	sampler := &memSampler{pid: pid, forks: t.forks, before: before}
	mctx, mstop := context.WithCancel(lctx)
	mdone := make(chan struct{})
	go func() { sampler.run(mctx); close(mdone) }()

	t0 := time.Now()
	cctx, cancel := context.WithTimeout(ctx, clientTimeout)
	err = ctl.Do(cctx, sc.cmd).Err()
	cancel()
	if err != nil {
		mstop()
		<-mdone
		finish()
		if strings.Contains(strings.ToLower(err.Error()), "unknown command") {
			m.unsupported = true
			return m, nil
		}
		return nil, fmt.Errorf("%s: %w", sc.cmd, err)
	}
	var final map[string]string
	deadline := time.Now().Add(20 * time.Minute)
	for {
		info, err := infoMap(ctx, ctl, "persistence")
		if err != nil {
			mstop()
			finish()
			return nil, err
		}
		if sc.cmd == "BGREWRITEAOF" {
			if _, ok := info["aof_rewrite_in_progress"]; !ok {
				mstop()
				finish()
				return nil, errors.New("INFO persistence has no aof_rewrite_in_progress: cannot tell when BGREWRITEAOF ends")
			}
		}
		if !busy(info) {
			final = info
			break
		}
		if time.Now().After(deadline) {
			mstop()
			finish()
			return nil, fmt.Errorf("%s still running after 20 minutes", sc.cmd)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t1 := time.Now()
	m.saveTime = t1.Sub(t0)
	m.idleTime = idle
	time.Sleep(300 * time.Millisecond)
	mstop()
	<-mdone
	if err := finish(); err != nil {
		return nil, err
	}
	m.extra = sampler.peak
	if hwm, err := statusKB(pid, "VmHWM"); err == nil {
		m.hwmExtra = hwm - before
	}
	if t.forks {
		if st, err := infoMap(ctx, ctl, "stats"); err == nil {
			us, _ := strconv.ParseInt(st["latest_fork_usec"], 10, 64)
			m.fork = time.Duration(us) * time.Microsecond
		}
	}
	if sc.cmd == "BGSAVE" {
		m.status = final["rdb_last_bgsave_status"]
		m.cow, m.cowKnown = intField(final, "rdb_last_cow_size")
	} else {
		m.status = final["aof_last_bgrewrite_status"]
		m.cow, m.cowKnown = intField(final, "aof_last_cow_size")
	}
	overlaps := func(s span) bool { return s.end.After(t0) && s.start.Before(t1) }
	for _, s := range reads {
		switch {
		case overlaps(s):
			m.during = append(m.during, s.d())
			if s.d() >= slowProbe {
				m.slow = append(m.slow, fmt.Sprintf("%s at %+.0f ms", ms(s.d()), float64(s.start.Sub(t0))/float64(time.Millisecond)))
			}
		case s.end.Before(t0):
			m.idle = append(m.idle, s.d())
		}
	}
	for _, s := range writes {
		if overlaps(s) {
			m.writes = append(m.writes, s.d())
		}
	}
	if len(m.during) == 0 {
		return nil, errors.New("no probe request overlapped the save")
	}
	return m, nil
}

// pct returns the q-quantile (0..1) of d (nearest rank).
func pct(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func countAtLeast(d []time.Duration, limit time.Duration) int {
	n := 0
	for _, x := range d {
		if x >= limit {
			n++
		}
	}
	return n
}

// intField parses an integer INFO field; ok is false when it is missing.
func intField(m map[string]string, name string) (int64, bool) {
	v, err := strconv.ParseInt(m[name], 10, 64)
	return v, err == nil
}
