package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bloomkit/bloomkit/bench/internal/bloomproc"
	"github.com/redis/go-redis/v9"
)

type lagResult struct {
	p50, p99, max time.Duration
	markers       int
	ops           float64 // the source's commands a second meanwhile
}

// moveOut is what a cut-over reports of itself.
type moveOut struct {
	total  time.Duration // start to end of the cut-over
	paused time.Duration // CLIENT PAUSE WRITE to CLIENT UNPAUSE on the source
}

type moveResult struct {
	moveOut
	maxGap    time.Duration // the longest gap between acknowledged writes from the move's start to 1 s after its end
	switchGap time.Duration // the last write acknowledged by the source to the first by the target
	baseGap   time.Duration // the longest gap in the second before the move
	acked     int
	onSource  int // of them, acknowledged by the source
	lost      int // acknowledged, and not on the target afterwards
}

// settleLater is how long after the catch-up the target's RSS and CPU
// are read again.
const settleLater = 3 * time.Second

type result struct {
	sync           time.Duration
	durable        time.Duration // to the end of the target's own background save, if any
	cpuSrc, cpuDst float64
	rssSrc, rssDst int64
	catchup        time.Duration
	// The target's RSS and CPU (from REPLICAOF on) settleLater after the
	// catch-up, the paced writer still writing: what it gives back once
	// loaded, and what that costs.
	rssDstLater int64
	cpuDstLater float64
	loadSync    string
	paced, sat  lagResult
	drain       time.Duration
	loadLag     string
	diff        string // the first difference compare found, or ""
	mv          moveResult
	loadMove    string
}

// measure runs one repetition for one target: a fresh source from the seed
// RDB, a fresh empty target, the sync, the lag, the comparison, the move.
func measure(ctx context.Context, cfg config, sd seedInfo, tg target, dir string) (_ result, err error) {
	var r result
	sdir, ddir := filepath.Join(dir, "source"), filepath.Join(dir, "target")
	for _, d := range []string{sdir, ddir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return r, err
		}
	}
	sp, dp := freePort(), freePort()
	sproc, err := startSource(ctx, cfg, sd, sdir, sp)
	if err != nil {
		return r, err
	}
	defer sproc.stop()
	dproc, err := tg.start(ddir, dp)
	if err != nil {
		return r, err
	}
	defer dproc.stop()
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\nthe source's log ends:\n%s\nthe target's log ends:\n%s", err, sproc.logTail(), dproc.logTail())
		}
	}()
	src, dst := client(sp), client(dp)
	defer src.Close()
	defer dst.Close()

	// The sync, with the paced writer writing.
	paced := startPaced(ctx, sp, cfg.rate)
	defer paced.stop()
	cs0, err1 := cpuSeconds(sproc.pid())
	cd0, err2 := cpuSeconds(dproc.pid())
	if err := errors.Join(err1, err2); err != nil {
		return r, err
	}
	t0 := time.Now()
	if err := dst.Do(ctx, "REPLICAOF", "127.0.0.1", sp).Err(); err != nil {
		return r, fmt.Errorf("REPLICAOF: %w", err)
	}
	err = waitFor("the full sync", 5*time.Minute, 10*time.Millisecond, func() (bool, error) {
		info, err := dst.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up") && strings.Contains(info, "master_sync_in_progress:0"), err
	})
	if err != nil {
		last, _ := infoField(ctx, dst, "replication", "master_sync_last_error")
		return r, fmt.Errorf("%w (target's master_sync_last_error: %q)", err, last)
	}
	r.sync = time.Since(t0)
	// The source's fork for the sync, and the target's own background
	// save or log rewrite after it (Redis rewrites its log once it has
	// loaded the master's data), have ended and been waited for: their
	// CPU is counted.
	r.durable = r.sync
	for _, c := range []*redis.Client{src, dst} {
		err = waitFor("background saves ending", 2*time.Minute, 10*time.Millisecond, func() (bool, error) {
			n1, err1 := infoInt(ctx, c, "persistence", "rdb_bgsave_in_progress")
			n2, err2 := infoInt(ctx, c, "persistence", "aof_rewrite_in_progress")
			n3, err3 := infoInt(ctx, c, "persistence", "aof_rewrite_scheduled")
			return n1+n2+n3 == 0, errors.Join(err1, err2, err3)
		})
		if err != nil {
			return r, err
		}
	}
	r.durable = time.Since(t0)
	cs1, err1 := cpuSeconds(sproc.pid())
	cd1, err2 := cpuSeconds(dproc.pid())
	if err := errors.Join(err1, err2); err != nil {
		return r, err
	}
	r.cpuSrc, r.cpuDst = cs1-cs0, cd1-cd0
	r.rssSrc, _ = bloomproc.RSS(sproc.pid())
	r.rssDst, _ = bloomproc.RSS(dproc.pid())
	if r.catchup, err = caughtUp(ctx, src, dst, time.Minute); err != nil {
		return r, err
	}
	time.Sleep(settleLater)
	r.rssDstLater, _ = bloomproc.RSS(dproc.pid())
	if cd2, err := cpuSeconds(dproc.pid()); err == nil {
		r.cpuDstLater = cd2 - cd0
	}
	r.loadSync = loadavg()

	// Lag: the paced writer alone, then with two saturating connections.
	if r.paced, err = markers(ctx, src, dst, cfg.lagSecs, "mp"); err != nil {
		return r, fmt.Errorf("lag under the paced writer: %w", err)
	}
	sat := startSaturating(ctx, sp, 2)
	time.Sleep(300 * time.Millisecond) // let it reach its rate
	r.sat, err = markers(ctx, src, dst, cfg.lagSecs, "ms")
	if err2 := sat.stop(); err == nil && err2 != nil {
		err = fmt.Errorf("saturating writer: %w", err2)
	}
	if err != nil {
		return r, fmt.Errorf("lag under saturating writers: %w", err)
	}
	if r.drain, err = caughtUp(ctx, src, dst, 2*time.Minute); err != nil {
		return r, err
	}
	if err := paced.stop(); err != nil {
		return r, fmt.Errorf("paced writer: %w", err)
	}
	r.loadLag = loadavg()

	// Same data on both before the move.
	if _, err := caughtUp(ctx, src, dst, time.Minute); err != nil {
		return r, err
	}
	if r.diff, err = compare(ctx, sd.mix, src, dst); err != nil {
		return r, err
	}

	// The move under a writer of acknowledged items.
	if r.mv, err = moveUnderWrites(ctx, tg, sp, dp); err != nil {
		return r, err
	}
	r.loadMove = loadavg()
	return r, nil
}

// writer is a background writer with a stop that returns its first error.
type writer struct {
	done chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	err  error
	once sync.Once
}

func (w *writer) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
}

func (w *writer) stop() error {
	w.once.Do(func() { close(w.done) })
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// mixed is the n-th write of a writer: strings with and without a TTL,
// BF.ADD and CF.ADD into filters they create.
func mixed(ctx context.Context, p redis.Pipeliner, prefix string, n int) {
	key := prefix + ":" + strconv.Itoa(n)
	switch n % 4 {
	case 0:
		p.Set(ctx, key, "v"+strconv.Itoa(n), time.Hour)
	case 1:
		p.Do(ctx, "BF.ADD", prefix+"bf:"+strconv.Itoa(n/4%1000), key)
	case 2:
		p.Do(ctx, "CF.ADD", prefix+"cf:"+strconv.Itoa(n/4%1000), key)
	default:
		p.Set(ctx, key, "value-"+strconv.Itoa(n), 0)
	}
}

// startPaced writes rate mixed commands a second to the source, one at a
// time.
func startPaced(ctx context.Context, port, rate int) *writer {
	w := &writer{done: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		c := client(port)
		defer c.Close()
		t := time.NewTicker(time.Second / time.Duration(rate))
		defer t.Stop()
		for n := 0; ; n++ {
			select {
			case <-w.done:
				return
			case <-t.C:
			}
			p := c.Pipeline()
			mixed(ctx, p, "pw", n)
			if _, err := p.Exec(ctx); err != nil {
				w.fail(err)
				return
			}
		}
	}()
	return w
}

// startSaturating writes mixed commands to the source as fast as conns
// connections can, in pipelines of 32.
func startSaturating(ctx context.Context, port, conns int) *writer {
	w := &writer{done: make(chan struct{})}
	for g := 0; g < conns; g++ {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			c := client(port)
			defer c.Close()
			prefix := "sat" + strconv.Itoa(g)
			for n := 0; ; {
				select {
				case <-w.done:
					return
				default:
				}
				p := c.Pipeline()
				for k := 0; k < 32; k++ {
					mixed(ctx, p, prefix, n)
					n++
				}
				if _, err := p.Exec(ctx); err != nil {
					w.fail(err)
					return
				}
			}
		}()
	}
	return w
}

// markers SETs prefix:N on the source every 20 ms for secs seconds and
// polls the target (EXISTS, back to back) until each is there.
func markers(ctx context.Context, src, dst *redis.Client, secs int, prefix string) (lagResult, error) {
	var r lagResult
	before, err := infoInt(ctx, src, "stats", "total_commands_processed")
	if err != nil {
		return r, err
	}
	t0 := time.Now()
	var lags []time.Duration
	for i := 0; time.Since(t0) < time.Duration(secs)*time.Second; i++ {
		key := prefix + ":" + strconv.Itoa(i)
		s := time.Now()
		if err := src.Set(ctx, key, "1", 0).Err(); err != nil {
			return r, err
		}
		for {
			n, err := dst.Exists(ctx, key).Result()
			if err != nil {
				return r, err
			}
			if n == 1 {
				break
			}
			if time.Since(s) > time.Minute {
				return r, fmt.Errorf("marker %s not on the target after a minute", key)
			}
		}
		lags = append(lags, time.Since(s))
		time.Sleep(20 * time.Millisecond)
	}
	after, err := infoInt(ctx, src, "stats", "total_commands_processed")
	if err != nil {
		return r, err
	}
	r.ops = float64(after-before) / time.Since(t0).Seconds()
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	r.markers = len(lags)
	r.p50, r.p99, r.max = lags[len(lags)/2], lags[len(lags)*99/100], lags[len(lags)-1]
	return r, nil
}

type ack struct {
	at  time.Time
	srv int // 0 the source, 1 the target
	n   int
}

// moveUnderWrites runs the target's cut-over while one client writes
// acknowledged items one after another (SET ack:N, BF.ADD ackbf ack:N),
// turning to the other server each time one refuses; then looks every
// acknowledged item up on the target.
func moveUnderWrites(ctx context.Context, tg target, sp, dp int) (moveResult, error) {
	var r moveResult
	src, dst := client(sp), client(dp)
	defer src.Close()
	defer dst.Close()
	if err := src.Do(ctx, "BF.RESERVE", "ackbf", "0.0001", 1000000).Err(); err != nil {
		return r, err
	}
	var acks []ack
	var werr error
	stopw := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		cs := [2]*redis.Client{client(sp), client(dp)}
		defer cs[0].Close()
		defer cs[1].Close()
		cur := 0
		var failingSince time.Time
		for n := 0; ; {
			select {
			case <-stopw:
				return
			default:
			}
			var err error
			if n%2 == 0 {
				err = cs[cur].Set(ctx, "ack:"+strconv.Itoa(n), "1", 0).Err()
			} else {
				err = cs[cur].Do(ctx, "BF.ADD", "ackbf", "ack:"+strconv.Itoa(n)).Err()
			}
			if err == nil {
				acks = append(acks, ack{time.Now(), cur, n})
				n++
				failingSince = time.Time{}
				continue
			}
			// Refused (READONLY, or a replica's refusal): the other one.
			if failingSince.IsZero() {
				failingSince = time.Now()
			} else {
				time.Sleep(time.Millisecond)
			}
			if time.Since(failingSince) > 30*time.Second {
				werr = fmt.Errorf("neither server took a write for 30 s: %w", err)
				return
			}
			cur = 1 - cur
		}
	}()
	time.Sleep(1500 * time.Millisecond) // the baseline
	start := time.Now()
	out, err := tg.move(ctx, sp, dp)
	end := time.Now()
	if err == nil {
		time.Sleep(time.Second)
	}
	close(stopw)
	<-done
	if err != nil {
		return r, fmt.Errorf("the move: %w", err)
	}
	if werr != nil {
		return r, werr
	}
	r.moveOut = out
	r.acked = len(acks)
	lastSrc, firstDst := -1, -1
	for i, a := range acks {
		if a.srv == 0 {
			r.onSource++
			lastSrc = i
		} else if firstDst < 0 {
			firstDst = i
		}
		if i == 0 {
			continue
		}
		gap := a.at.Sub(acks[i-1].at)
		switch {
		case a.at.Before(start) && acks[i-1].at.After(start.Add(-time.Second)):
			r.baseGap = max(r.baseGap, gap)
		case !a.at.Before(start) && !acks[i-1].at.After(end.Add(time.Second)):
			r.maxGap = max(r.maxGap, gap)
		}
	}
	if firstDst < 0 || lastSrc < 0 || lastSrc > firstDst {
		return r, fmt.Errorf("the writer's acknowledgements: last from the source #%d, first from the target #%d", lastSrc, firstDst)
	}
	r.switchGap = acks[firstDst].at.Sub(acks[lastSrc].at)
	// Every acknowledged item on the target.
	for i := 0; i < len(acks); i += 500 {
		batch := acks[i:min(i+500, len(acks))]
		p := dst.Pipeline()
		var keys []string
		items := []any{"BF.MEXISTS", "ackbf"}
		for _, a := range batch {
			if a.n%2 == 0 {
				keys = append(keys, "ack:"+strconv.Itoa(a.n))
			} else {
				items = append(items, "ack:"+strconv.Itoa(a.n))
			}
		}
		var ex *redis.IntCmd
		if len(keys) > 0 {
			ex = p.Exists(ctx, keys...)
		}
		var mex *redis.Cmd
		if len(items) > 2 {
			mex = p.Do(ctx, items...)
		}
		if _, err := p.Exec(ctx); err != nil {
			return r, fmt.Errorf("looking the acknowledged writes up: %w", err)
		}
		if ex != nil {
			r.lost += len(keys) - int(ex.Val())
		}
		if mex != nil {
			vals, err := mex.Slice()
			if err != nil {
				return r, err
			}
			for _, v := range vals {
				if v != int64(1) {
					r.lost++
				}
			}
		}
	}
	return r, nil
}

var pausedRE = regexp.MustCompile(`writes were paused ([0-9.a-zµ]+)\.`)

// bloomMove runs `bloom move` and reads the pause from its report.
func bloomMove(ctx context.Context, bin string, sp, dp int, pause time.Duration) (moveOut, error) {
	var out moveOut
	cmd := exec.CommandContext(ctx, bin, "move", "--from", addr(sp), "--to", addr(dp), "--pause", pause.String())
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	out.total = time.Since(t0)
	if err != nil {
		return out, fmt.Errorf("bloom move: %w\n%s%s", err, stdout.String(), stderr.String())
	}
	m := pausedRE.FindStringSubmatch(stdout.String())
	if m == nil {
		return out, fmt.Errorf("bloom move: no pause in its report %q", stdout.String())
	}
	out.paused, err = time.ParseDuration(m[1])
	return out, err
}

// redisMove is bloom move's sequence between two Redis servers: the
// target (already following) caught up, CLIENT PAUSE WRITE on the source,
// the target's offset equal to the source's, REPLICAOF NO ONE on the
// target, REPLICAOF target on the source, CLIENT UNPAUSE.
func redisMove(ctx context.Context, sp, dp int, pause time.Duration) (moveOut, error) {
	var out moveOut
	src, dst := client(sp), client(dp)
	defer src.Close()
	defer dst.Close()
	t0 := time.Now()
	if err := dst.Do(ctx, "REPLICAOF", "127.0.0.1", sp).Err(); err != nil {
		return out, err
	}
	err := waitFor("the target catching up", time.Minute, 50*time.Millisecond, func() (bool, error) {
		st, err := infoField(ctx, dst, "replication", "master_link_status")
		if err != nil || st != "up" {
			return false, err
		}
		ro, err1 := infoInt(ctx, dst, "replication", "slave_repl_offset")
		mo, err2 := infoInt(ctx, src, "replication", "master_repl_offset")
		return mo-ro < 1<<20, errors.Join(err1, err2)
	})
	if err != nil {
		return out, err
	}
	ps := time.Now()
	if err := src.Do(ctx, "CLIENT", "PAUSE", pause.Milliseconds(), "WRITE").Err(); err != nil {
		return out, err
	}
	unpause := func() { src.Do(context.Background(), "CLIENT", "UNPAUSE") }
	off, err := infoInt(ctx, src, "replication", "master_repl_offset")
	if err != nil {
		unpause()
		return out, err
	}
	err = waitFor("the target's offset reaching the paused source's", pause*3/4, 2*time.Millisecond, func() (bool, error) {
		ro, err := infoInt(ctx, dst, "replication", "slave_repl_offset")
		if err == nil && ro > off {
			err = fmt.Errorf("the target's offset %d is past the paused source's %d", ro, off)
		}
		return ro == off, err
	})
	if err != nil {
		unpause()
		return out, err
	}
	if err := dst.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		unpause()
		return out, err
	}
	if err := src.Do(ctx, "REPLICAOF", "127.0.0.1", dp).Err(); err != nil {
		return out, err
	}
	unpause()
	out.paused = time.Since(ps)
	out.total = time.Since(t0)
	return out, nil
}
