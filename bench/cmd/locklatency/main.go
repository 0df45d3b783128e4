// Command locklatency measures how long `bloom serve` keeps other clients
// waiting while it runs commands whose work grows with the data: FLUSHALL
// (SYNC and ASYNC, and while a snapshot is being written) over many keys,
// DEL and UNLINK of a large filter, and BF.MERGE of large filters (two
// halves of -bytes, and one -bytes/8 source named 40 times).
//
// It builds ./cmd/bloom of -repo, starts `bloom serve` on a fresh data
// directory and, for each scenario, prepares the data (-keys small filters,
// or filters filled with random bits through BF.LOADCHUNK so that every
// page is resident), then starts two probing clients — one sending PING,
// one BF.EXISTS on a small key, each back to back — runs the command on a
// third connection, and reports the slowest probe reply that overlapped the
// command (from its start until 500 ms after its reply, which covers memory
// freed in the background). The goal is ≤ 25 ms. A baseline of the probes
// with nothing running shows the machine's own noise.
//
// From bench/ (needs about 3 × -bytes of memory):
//
//	go run ./cmd/locklatency                      # 1M keys, 1 GiB of filters
//	go run ./cmd/locklatency -quick               # 100k keys, 128 MiB
//	go run ./cmd/locklatency -repo "$OLD_CHECKOUT" # a checkout of the code before the change (before/after)
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/bench/internal/bloomproc"
	"github.com/bloomkit/bloomkit/redisbloom"
	"github.com/redis/go-redis/v9"
)

type config struct {
	repo  string
	keys  int
	bytes int64
	tail  time.Duration
	only  string
}

func main() {
	var cfg config
	quick := flag.Bool("quick", false, "100k keys and 128 MiB of filters")
	flag.StringVar(&cfg.repo, "repo", "..", "bloomkit repository root (builds ./cmd/bloom there)")
	flag.IntVar(&cfg.keys, "keys", 1_000_000, "keys for the FLUSHALL scenarios")
	flag.Int64Var(&cfg.bytes, "bytes", 1<<30, "bytes of filters for DEL, UNLINK and BF.MERGE")
	flag.DurationVar(&cfg.tail, "tail", 500*time.Millisecond, "probing after the command's reply")
	flag.StringVar(&cfg.only, "only", "", "run only the scenarios whose name contains this")
	flag.Parse()
	if *quick {
		cfg.keys, cfg.bytes = 100_000, 128<<20
	}
	if err := run(context.Background(), cfg); err != nil {
		fmt.Fprintln(os.Stderr, "locklatency:", err)
		os.Exit(1)
	}
}

type server struct {
	cmd  *exec.Cmd
	addr string
	c    *redis.Client
}

func start(ctx context.Context, bin, dir string) (*server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "serve", "--addr", addr, "--dir", dir, "--appendfsync", "everysec", "--log-level", "warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, addr: addr, c: redis.NewClient(bloomproc.ClientOptions(addr, 5*time.Minute))}
	for deadline := time.Now().Add(time.Minute); ; {
		if s.c.Ping(ctx).Err() == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("bloom serve did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *server) stop() {
	s.c.Close()
	s.cmd.Process.Kill()
	s.cmd.Wait()
}

// scenario prepares data, then runs one command (op) whose stall is measured.
type scenario struct {
	name    string
	prepare func(ctx context.Context, c *redis.Client) error
	op      func(ctx context.Context, c *redis.Client) error
}

func run(ctx context.Context, cfg config) error {
	tmp, err := os.MkdirTemp("", "locklatency-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := bloomproc.Build(ctx, cfg.repo, tmp)
	if err != nil {
		return err
	}
	half := cfg.bytes / 2
	small := cfg.bytes / 8
	flushPrep := func(ctx context.Context, c *redis.Client) error { return manyKeys(ctx, c, cfg.keys) }
	scenarios := []scenario{
		{"FLUSHALL SYNC, " + count(cfg.keys) + " keys", flushPrep, cmd("FLUSHALL", "SYNC")},
		{"FLUSHALL ASYNC, " + count(cfg.keys) + " keys", flushPrep, cmd("FLUSHALL", "ASYNC")},
		{"FLUSHALL during BGSAVE, " + count(cfg.keys) + " keys", flushPrep, func(ctx context.Context, c *redis.Client) error {
			if err := c.Do(ctx, "BGSAVE").Err(); err != nil {
				return err
			}
			// FLUSHALL once the snapshot's point in time is fixed and its
			// writer has keys left to write.
			for deadline := time.Now().Add(time.Minute); ; {
				info, err := c.Info(ctx, "persistence").Result()
				if err != nil {
					return err
				}
				if done, total := infoInt(info, "current_save_keys_processed"), infoInt(info, "current_save_keys_total"); total > 0 && done < total/2 {
					break
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("BGSAVE did not start writing 1M keys within a minute")
				}
				time.Sleep(time.Millisecond)
			}
			return c.Do(ctx, "FLUSHALL").Err()
		}},
		{"DEL of a " + mib(cfg.bytes) + " filter", filled("big", cfg.bytes), cmd("DEL", "big")},
		{"UNLINK of a " + mib(cfg.bytes) + " filter", filled("big", cfg.bytes), cmd("UNLINK", "big")},
		{"BF.MERGE of two " + mib(half) + " filters into a new key", func(ctx context.Context, c *redis.Client) error {
			if err := filled("m1", half)(ctx, c); err != nil {
				return err
			}
			return filledSeed("m2", half, 2)(ctx, c)
		}, cmd("BF.MERGE", "dst", "m1", "m2")},
		{"BF.MERGE of one " + mib(small) + " filter named 40 times", filled("s", small), func(ctx context.Context, c *redis.Client) error {
			args := []any{"BF.MERGE", "dst2"}
			for i := 0; i < 40; i++ {
				args = append(args, "s")
			}
			return c.Do(ctx, args...).Err()
		}},
	}
	load1, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("locklatency: %s, %d CPUs, load average at start: %s", gitDescribe(cfg.repo), runtime.NumCPU(), load1)
	fmt.Printf("| scenario | command took | slowest PING | slowest BF.EXISTS | probes | baseline (slowest PING / BF.EXISTS, nothing running) |\n|---|---|---|---|---|---|\n")
	for _, sc := range scenarios {
		if cfg.only != "" && !strings.Contains(sc.name, cfg.only) {
			continue
		}
		dir := filepath.Join(tmp, "data")
		os.RemoveAll(dir)
		s, err := start(ctx, bin, dir)
		if err != nil {
			return err
		}
		err = measure(ctx, cfg, s, sc)
		s.stop()
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
	}
	load2, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("load average at the end: %s", load2)
	return nil
}

func measure(ctx context.Context, cfg config, s *server, sc scenario) error {
	if err := sc.prepare(ctx, s.c); err != nil {
		return err
	}
	if err := s.c.Do(ctx, "BF.ADD", "probe", "x").Err(); err != nil {
		return err
	}
	// Let the prepared data's background work (log writing, the memory
	// recount) settle.
	time.Sleep(time.Second)
	var (
		stop      atomic.Bool
		mu        sync.Mutex
		opStart   time.Time
		opEnd     time.Time
		inOp      bool
		worstPing time.Duration
		worstEx   time.Duration
		baseP     time.Duration
		baseE     time.Duration
		probes    int
		wg        sync.WaitGroup
		probeErr  error
	)
	probe := func(args ...any) {
		defer wg.Done()
		c := redis.NewClient(bloomproc.ClientOptions(s.addr, time.Minute))
		defer c.Close()
		isPing := args[0] == "PING"
		for !stop.Load() {
			t0 := time.Now()
			err := c.Do(ctx, args...).Err()
			d := time.Since(t0)
			mu.Lock()
			if err != nil && probeErr == nil {
				probeErr = err
			}
			during := inOp || (!opStart.IsZero() && t0.Before(opEnd.Add(cfg.tail)) && t0.Add(d).After(opStart))
			switch {
			case during && isPing:
				worstPing = max(worstPing, d)
				probes++
			case during:
				worstEx = max(worstEx, d)
				probes++
			case opStart.IsZero() && isPing:
				baseP = max(baseP, d)
			case opStart.IsZero():
				baseE = max(baseE, d)
			}
			mu.Unlock()
		}
	}
	wg.Add(2)
	go probe("PING")
	go probe("BF.EXISTS", "probe", "x")
	time.Sleep(time.Second) // baseline
	mu.Lock()
	opStart, inOp = time.Now(), true
	mu.Unlock()
	err := sc.op(ctx, s.c)
	mu.Lock()
	opEnd, inOp = time.Now(), false
	took := opEnd.Sub(opStart)
	mu.Unlock()
	time.Sleep(cfg.tail)
	stop.Store(true)
	wg.Wait()
	if err != nil {
		return err
	}
	if probeErr != nil {
		return fmt.Errorf("probe: %w", probeErr)
	}
	fmt.Printf("| %s | %s | %s | %s | %d | %s / %s |\n", sc.name, ms(took), ms(worstPing), ms(worstEx), probes, ms(baseP), ms(baseE))
	return nil
}

func cmd(args ...any) func(context.Context, *redis.Client) error {
	return func(ctx context.Context, c *redis.Client) error { return c.Do(ctx, args...).Err() }
}

// manyKeys creates n keys, each a small Bloom filter with one item.
func manyKeys(ctx context.Context, c *redis.Client, n int) error {
	for i := 0; i < n; {
		p := c.Pipeline()
		for j := 0; j < 1000 && i < n; j, i = j+1, i+1 {
			p.Do(ctx, "BF.ADD", "k:"+strconv.Itoa(i), "x")
		}
		if _, err := p.Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

func filled(key string, size int64) func(context.Context, *redis.Client) error {
	return filledSeed(key, size, 1)
}

// filledSeed reserves a NONSCALING filter of about size bytes and fills
// every byte with random bits (BF.LOADCHUNK), so its pages are resident.
func filledSeed(key string, size int64, seed byte) func(context.Context, *redis.Client) error {
	return func(ctx context.Context, c *redis.Client) error {
		items := uint64(float64(size) / 1.198) // 9.585 bits per item at 1%
		if err := c.Do(ctx, "BF.RESERVE", key, "0.01", items, "NONSCALING").Err(); err != nil {
			return err
		}
		n, err := redisbloom.BloomCreateBytes(items, 0.01, true)
		if err != nil {
			return err
		}
		rng := rand.NewChaCha8([32]byte{seed})
		buf := make([]byte, redisbloom.MaxChunk)
		for off := int64(0); off < int64(n); off += int64(len(buf)) {
			b := buf[:min(int64(len(buf)), int64(n)-off)]
			rng.Read(b)
			if err := c.Do(ctx, "BF.LOADCHUNK", key, 1+off+int64(len(b)), b).Err(); err != nil {
				return fmt.Errorf("BF.LOADCHUNK %s at %d: %w", key, off, err)
			}
		}
		return nil
	}
}

// infoInt is field's value in an INFO reply (0 when absent).
func infoInt(info, field string) int64 {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func mib(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }

func count(n int) string {
	if n >= 1_000_000 && n%1_000_000 == 0 {
		return strconv.Itoa(n/1_000_000) + "M"
	}
	if n >= 1000 && n%1000 == 0 {
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

func gitDescribe(repo string) string {
	out, err := exec.Command("git", "-C", repo, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "(not a git checkout)"
	}
	return "commit " + strings.TrimSpace(string(out))
}
