// Command migbench measures moving a running Redis + RedisBloom server onto
// bloom serve by replication, beside moving it onto a second Redis +
// RedisBloom server the same way, in the same run:
//
//   - full sync: a source redis-server with the RedisBloom module holding
//     -keys keys (strings with and without TTLs, reserved, auto-created and
//     scaled Bloom filters, reserved and auto-created cuckoo filters: the
//     mix is printed in the report) is followed by a fresh target (REPLICAOF);
//     the time until the target's INFO shows master_link_status:up and
//     master_sync_in_progress:0, and the CPU time each server process spent
//     meanwhile (/proc/<pid>/stat, children included: Redis's fork);
//   - replication lag: while a writer writes -rate mixed commands a second
//     to the source, and again while two more connections write as fast as
//     they can (pipelines of 32), a marker key is SET on the source every
//     20 ms and polled on the target until it is there;
//   - the move: while a client writes one acknowledged item after another
//     (SET and BF.ADD, turning to the target when the source refuses), the
//     cut-over runs: `bloom move` for bloom serve, the same steps by hand for
//     Redis (CLIENT PAUSE WRITE, offsets equal, REPLICAOF NO ONE on the
//     target, REPLICAOF target on the source, CLIENT UNPAUSE). Reported: the
//     longest gap between two acknowledged writes, the pause on the source,
//     and every acknowledged item looked up on the target (lost must be 0).
//
// With -persist (the default) both targets log every write (appendonly
// yes, appendfsync everysec) and the CPU is counted until their own
// background saves after the sync have ended; -persist=false runs both
// without persistence.
//
// Before the move, with the writers stopped and the offsets equal, the
// key counts are compared and a sample of keys read from both servers
// (values, TTLs, filter answers) must agree.
//
// Repetitions are interleaved (bloom serve, Redis, bloom serve, …), each on
// a fresh source started from the same RDB file. It writes MIGRATION.md
// (-out) with the load average beside every wall-clock number.
//
// Needs redis-server (7.x) and RedisBloom's module file: -module, or
// $BLOOMKIT_REDISBLOOM_MODULE. RedisBloom is not part of
// this repository; without the module the program stops with exit status 2
// and says so. bloom serve is built from -repo (default: the repository
// bench/ is in).
//
//	cd bench && nice -n 10 go run ./cmd/migbench -keys 1000000 -reps 2
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/bloomkit/bloomkit/bench/internal/bloomproc"
)

type config struct {
	keys, bf, cf int
	reps         int
	rate         int
	lagSecs      int
	pause        time.Duration
	persist      bool
	module       string
	out          string
	repo         string
}

func main() {
	var cfg config
	flag.IntVar(&cfg.keys, "keys", 1000000, "keys on the source, filters included")
	flag.IntVar(&cfg.bf, "bf", 5000, "Bloom filter keys among them (2/5 reserved, 2/5 auto-created, 1/5 scaled to 3 sub-filters)")
	flag.IntVar(&cfg.cf, "cf", 3000, "cuckoo filter keys among them (half reserved, half auto-created)")
	flag.IntVar(&cfg.reps, "reps", 2, "repetitions for each target (interleaved)")
	flag.IntVar(&cfg.rate, "rate", 400, "writes a second of the paced writer (during the sync and the lag measurements)")
	flag.IntVar(&cfg.lagSecs, "lag-seconds", 8, "seconds of each lag measurement (paced, then saturated)")
	flag.BoolVar(&cfg.persist, "persist", true, "targets log every write (appendonly yes, appendfsync everysec); false: no persistence on either target")
	flag.DurationVar(&cfg.pause, "pause", 10*time.Second, "the longest the source's writes may be paused by the move")
	flag.StringVar(&cfg.module, "module", os.Getenv("BLOOMKIT_REDISBLOOM_MODULE"), "RedisBloom's module file (default $BLOOMKIT_REDISBLOOM_MODULE)")
	flag.StringVar(&cfg.out, "out", "MIGRATION.md", "report file")
	flag.StringVar(&cfg.repo, "repo", "..", "repository whose cmd/bloom is measured")
	flag.Parse()
	if err := check(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "migbench:", err)
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "migbench:", err)
		os.Exit(1)
	}
}

// check refuses to start without what every measurement needs.
func check(cfg config) error {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return errors.New("redis-server is not on $PATH: the source is a redis-server")
	}
	if cfg.module == "" {
		return errors.New("no RedisBloom module: give -module FILE or set $BLOOMKIT_REDISBLOOM_MODULE (the source is Redis + RedisBloom; build the module from RedisBloom's public source)")
	}
	if st, err := os.Stat(cfg.module); err != nil || st.IsDir() {
		return fmt.Errorf("RedisBloom module %q: not a file", cfg.module)
	}
	if cfg.bf+cfg.cf+1000 > cfg.keys || cfg.bf < 5 || cfg.cf < 2 || cfg.reps < 1 || cfg.rate < 1 || cfg.lagSecs < 2 {
		return fmt.Errorf("want -keys > -bf + -cf + 1000, -bf ≥ 5, -cf ≥ 2, -reps ≥ 1, -rate ≥ 1, -lag-seconds ≥ 2")
	}
	return nil
}

// target is one kind of server the source moves to.
type target struct {
	name string
	// start starts an empty target on port, its files in dir.
	start func(dir string, port int) (*proc, error)
	// move runs the cut-over from the source on sp to the target on dp.
	move func(ctx context.Context, sp, dp int) (moveOut, error)
}

func run(cfg config) error {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "migbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := bloomproc.Build(ctx, cfg.repo, tmp)
	if err != nil {
		return err
	}
	redisVer, _ := exec.Command("redis-server", "--version").Output()
	targets := []target{
		{
			name: "bloom serve",
			start: func(dir string, port int) (*proc, error) {
				return startProc(exec.Command(bin, "serve", "--addr", addr(port), "--dir", dir, "--log-level", "warn",
					"--appendonly", yesNo(cfg.persist), "--appendfsync", "everysec"), port, filepath.Join(dir, "..", "bloom.log"))
			},
			move: func(ctx context.Context, sp, dp int) (moveOut, error) { return bloomMove(ctx, bin, sp, dp, cfg.pause) },
		},
		{
			name: "redis-server + RedisBloom",
			start: func(dir string, port int) (*proc, error) {
				return startRedis(cfg.module, dir, port, "--appendonly", yesNo(cfg.persist), "--appendfsync", "everysec")
			},
			move: func(ctx context.Context, sp, dp int) (moveOut, error) {
				return redisMove(ctx, sp, dp, cfg.pause)
			},
		},
	}
	fmt.Printf("migbench: loading the source with %d keys\n", cfg.keys)
	sd, err := seed(ctx, cfg, filepath.Join(tmp, "seed"))
	if err != nil {
		return fmt.Errorf("loading the source: %w", err)
	}
	fmt.Printf("migbench: source loaded in %v: %d keys, RDB %.1f MB, used_memory %.1f MB, %s\n",
		sd.took.Round(time.Millisecond), sd.dbsize, float64(sd.rdbBytes)/1e6, float64(sd.usedMemory)/1e6, sd.bfVersion)
	results := map[string][]result{}
	for rep := 0; rep < cfg.reps; rep++ {
		for _, tg := range targets {
			dir := filepath.Join(tmp, fmt.Sprintf("r%d", rep))
			r, err := measure(ctx, cfg, sd, tg, dir)
			os.RemoveAll(dir)
			if err != nil {
				return fmt.Errorf("%s, repetition %d: %w", tg.name, rep+1, err)
			}
			fmt.Printf("migbench: %s rep %d: sync %v (CPU source %.2fs, target %.2fs); lag p99 %v paced, %v saturated; move max gap %v, paused %v, %d acked, %d lost (load %s)\n",
				tg.name, rep+1, r.sync.Round(time.Millisecond), r.cpuSrc, r.cpuDst, ms(r.paced.p99), ms(r.sat.p99),
				ms(r.mv.maxGap), ms(r.mv.paused), r.mv.acked, r.mv.lost, r.loadMove)
			results[tg.name] = append(results[tg.name], r)
		}
	}
	return report(cfg, sd, strings.TrimSpace(string(redisVer)), targets, results)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func numCPU() int { return runtime.NumCPU() }
