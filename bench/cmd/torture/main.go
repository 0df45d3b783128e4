// Command torture checks that `bloom serve` keeps every acknowledged write
// across crashes. It builds ./cmd/bloom from the
// repository, starts `bloom serve` on a fresh data directory and then, for
// each round:
//
//   - N clients (-clients) write unique items with BF.ADD, BF.MADD,
//     BF.INSERT (into five shared filters — auto-created, small and
//     scaling, large and non-scaling, and bloomkit's own blocked and
//     time-window filters — and into new keys it creates),
//     CF.ADD, CF.DEL and BF.LOADCHUNK (copying a dumped source filter into a
//     new key chunk by chunk), recording every write whose reply arrived;
//   - another client sends BGSAVE and BGREWRITEAOF at random moments
//     ("already in progress" is fine, and so is an unknown BGREWRITEAOF on a
//     server that lacks it);
//   - after a random 0.2–1.2 s the server gets SIGKILL, is restarted on the
//     same directory, and everything acknowledged so far, in every round, is
//     checked: each added item answers BF.EXISTS 1 / CF.COUNT 1, each
//     deleted cuckoo item CF.COUNT 0, and each acknowledged BF.LOADCHUNK
//     chunk is in its copy (its SCANDUMP gives the same bytes at the same
//     iterator; a complete copy answers BF.MEXISTS like the source).
//
// After the last round the server is stopped with SIGTERM, restarted and
// checked once more; then nothing at all may be missing.
//
// Only a reply counts as an acknowledgement. A command whose connection
// failed or timed out has an unknown outcome and is not checked, except
// that a cuckoo item must never be counted twice. An error reply (MISCONF,
// a full filter) means "not applied" and is counted as refused.
//
// Deletions are made checkable through fingerprints. A cuckoo filter stores
// an 8-bit fingerprint per item in one of two buckets; two items with the
// same fingerprint and bucket pair are indistinguishable: after deleting
// one, CF.EXISTS of it still answers 1 through the other, and CF.DEL of one
// may even remove the other's copy, which would then look lost. So every
// cuckoo key holds at most 100 items, each with a fingerprint no other item
// of that key has (the program computes RedisBloom's fingerprint,
// MurmurHash64A % 255 + 1, with the redisbloom package and skips names that
// collide). Then no lookup can match another item's entry in any bucket or
// sub-filter, whatever the filter's size or growth. The fingerprints are
// also odd: the second bucket index is the first XOR fingerprint × an odd
// constant, modulo a power-of-two bucket count, so an even fingerprint can
// put both candidates in the same bucket, where RedisBloom's CF.COUNT
// counts the one copy twice. With both rules CF.COUNT is exactly the
// number of copies of that item: 1 after an acknowledged add, 0 after an
// acknowledged delete, and 2 reveals a write applied twice (for example
// once from the snapshot and once from the log). Each item is added once
// and deleted at most once; half the cuckoo keys are reserved small
// (capacity 64, expansion 1) so they grow several sub-filters.
//
// With -fsync everysec a loss is tolerated only for a write acknowledged
// in the round that just ended, at most -window (default 2 s: the 1 s fsync
// interval plus one slow fsync) before the kill; any other loss is a
// violation. SIGKILL does not drop the kernel's page cache, so a server
// that write()s its log before replying (as Redis does, and as the
// persistence design requires) loses nothing here even under everysec; losses inside the
// window are reported separately so the difference shows.
//
// It exits 1 when any acknowledged write was lost outside the allowed
// window, a deleted item came back, a write was applied twice, or the
// server failed to restart; 2 when the program itself could not run. The
// report goes to TORTURE.md (-out). Typical use, from bench/:
//
//	go run ./cmd/torture                                  # 50 rounds, appendfsync always
//	go run ./cmd/torture -fsync always,everysec -rounds 50
//	go run ./cmd/torture -rounds 5 -keep -out ''          # quick look; keep the data on failure
//
// or `make torture` in the repository root.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bloomkit/bloomkit/bench/internal/bloomproc"
)

type config struct {
	repo             string
	rounds, clients  int
	readers          int
	sabotage         bool
	fsync            []string
	seed             uint64
	keep             bool
	out              string
	window           time.Duration
	killMin, killMax time.Duration
	opTimeout        time.Duration
	startTimeout     time.Duration
}

func main() {
	var cfg config
	var fsync string
	var timeout time.Duration
	flag.StringVar(&cfg.repo, "repo", "..", "bloomkit repository root (builds ./cmd/bloom there)")
	flag.IntVar(&cfg.rounds, "rounds", 50, "kill/restart rounds per fsync mode")
	flag.IntVar(&cfg.clients, "clients", 8, "concurrent writing clients")
	flag.IntVar(&cfg.readers, "readers", 2, "clients reading the cuckoo items being added (0: none)")
	flag.BoolVar(&cfg.sabotage, "sabotage", false, "self-test: after each kill delete the data directory's newest file; the run must then fail")
	flag.StringVar(&fsync, "fsync", "always", "appendfsync mode(s) to test, comma-separated: always, everysec")
	flag.Uint64Var(&cfg.seed, "seed", 0, "random seed (0: from the clock; printed and reported)")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the data directory and server log when a run fails")
	flag.StringVar(&cfg.out, "out", "TORTURE.md", "markdown report to write ('' for none)")
	flag.DurationVar(&cfg.window, "window", 2*time.Second, "everysec: losses allowed for writes acknowledged this long before a kill")
	flag.DurationVar(&cfg.killMin, "kill-min", 200*time.Millisecond, "shortest time between start and SIGKILL")
	flag.DurationVar(&cfg.killMax, "kill-max", 1200*time.Millisecond, "longest time between start and SIGKILL")
	flag.DurationVar(&cfg.opTimeout, "op-timeout", 10*time.Second, "timeout of one command (then its outcome is unknown)")
	flag.DurationVar(&cfg.startTimeout, "start-timeout", 2*time.Minute, "how long a (re)start may take before the server counts as hung")
	flag.DurationVar(&timeout, "timeout", time.Hour, "give up after this long")
	flag.Parse()
	if err := check(&cfg, fsync); err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	code := run(ctx, cfg)
	stop()
	cancel()
	os.Exit(code)
}

func check(cfg *config, fsync string) error {
	for _, m := range strings.Split(fsync, ",") {
		m = strings.TrimSpace(m)
		if m != "always" && m != "everysec" {
			return fmt.Errorf("-fsync: %q is not always or everysec", m)
		}
		cfg.fsync = append(cfg.fsync, m)
	}
	switch {
	case cfg.rounds < 1:
		return errors.New("-rounds must be at least 1")
	case cfg.clients < 1 || cfg.clients > 1000:
		return errors.New("-clients must be 1..1000")
	case cfg.readers < 0 || cfg.readers > 1000:
		return errors.New("-readers must be 0..1000")
	case cfg.killMin <= 0 || cfg.killMax < cfg.killMin:
		return errors.New("need 0 < -kill-min ≤ -kill-max")
	case cfg.opTimeout <= 0 || cfg.startTimeout <= 0 || cfg.window < 0:
		return errors.New("timeouts must be positive")
	}
	if cfg.seed == 0 {
		cfg.seed = uint64(time.Now().UnixNano())
	}
	return nil
}

func run(ctx context.Context, cfg config) int {
	start := time.Now()
	fmt.Printf("torture: seed %d, %d rounds × %v, %d clients\n", cfg.seed, cfg.rounds, cfg.fsync, cfg.clients)
	tmp, err := os.MkdirTemp("", "torture-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		return 2
	}
	keep := false
	defer func() {
		if keep {
			fmt.Fprintf(os.Stderr, "torture: data directories and server logs kept in %s\n", tmp)
			return
		}
		os.RemoveAll(tmp)
	}()
	bin, err := bloomproc.Build(ctx, cfg.repo, tmp)
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		return 2
	}
	var results []*modeResult
	code := 0
	for i, mode := range cfg.fsync {
		r := &modeResult{mode: mode, perRound: map[int]roundLine{}, admin: adminStats{failed: map[string]int{}}, st: newStats()}
		results = append(results, r)
		err := runMode(ctx, cfg, bin, filepath.Join(tmp, mode), r, cfg.seed+uint64(i))
		if err != nil {
			r.err = err.Error()
			fmt.Fprintf(os.Stderr, "torture: %s: %v\n", mode, err)
			code = max(code, 2)
		}
		if r.failed() {
			code = max(code, 1)
		}
		if (err != nil || r.failed()) && cfg.keep {
			keep = true
		}
		if ctx.Err() != nil {
			break
		}
	}
	for _, r := range results {
		fmt.Println(r.summary())
	}
	if cfg.out != "" {
		if err := writeReport(cfg, results, time.Since(start)); err != nil {
			fmt.Fprintln(os.Stderr, "torture:", err)
			code = max(code, 2)
		} else {
			fmt.Println("torture: report written to", cfg.out)
		}
	}
	return code
}

// roundLine is one row of the per-round table.
type roundLine struct {
	killAfter, restart time.Duration
	acked, unknown     int
	lost, allowed      int
	violations         int
	stale              []string
}

// modeResult accumulates one fsync mode's run.
type modeResult struct {
	mode        string
	rounds      int
	clean       bool // the final SIGTERM + restart check ran
	st          stats
	admin       adminStats
	v           verdict
	perRound    map[int]roundLine
	restarts    []time.Duration
	staleRounds int
	reads       int // reader CF.EXISTS calls
	sightings   int // of them answered 1 for an add still unanswered
	staleNames  []string
	fatal       string // the server could not be restarted or stopped
	err         string // the program could not continue
	dataBytes   int64
	elapsed     time.Duration
}

func (r *modeResult) failed() bool { return r.v.violations > 0 || r.fatal != "" }

func (r *modeResult) summary() string {
	verdict := "PASS"
	if r.failed() {
		verdict = "FAIL"
	} else if r.err != "" {
		verdict = "INCOMPLETE"
	}
	return fmt.Sprintf("torture %s: %s — %d rounds, %d acknowledged writes (%d items, %d CF.DEL, %d copies), %d unknown, %d refused; lost %d (inside the everysec window %d), deletes undone %d, applied twice %d, seen then lost %d, violations %d",
		r.mode, verdict, r.rounds, r.st.acked(), r.st.items, r.st.cfDels, r.st.copies, r.st.unknown, r.st.refused,
		r.v.lost+r.v.copyBad, r.v.lostAllowed+r.v.copyBadAllowed, r.v.resurrected, r.v.duplicated, r.v.revealed, r.v.violations)
}

// runMode runs the rounds for one appendfsync mode in its own directory.
func runMode(ctx context.Context, cfg config, bin, dir string, res *modeResult, seed uint64) error {
	started := time.Now()
	defer func() { res.elapsed = time.Since(started) }()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	srv := &server{bin: bin, dir: filepath.Join(dir, "data"), fsync: res.mode,
		logPath: filepath.Join(dir, "server.log"), startTimeout: cfg.startTimeout}
	defer srv.kill()
	if err := srv.start(ctx, "setup"); err != nil {
		return fmt.Errorf("first start: %w", err)
	}
	rng := rand.New(rand.NewPCG(seed, 0x70727475))
	run := "t" + strconv.FormatUint(seed%100000, 36)
	fx, err := setup(ctx, srv.addr, run, cfg.opTimeout)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if res.mode == "everysec" {
		// Keep the fixtures out of every loss window.
		time.Sleep(cfg.window)
	}
	ws := make([]*worker, cfg.clients)
	for i := range ws {
		ws[i] = &worker{id: i, run: run, rng: rand.New(rand.NewPCG(seed, uint64(i)+1)), src: fx.src,
			opTimeout: cfg.opTimeout, st: newStats()}
	}
	rs := make([]*reader, cfg.readers)
	for i := range rs {
		rs[i] = &reader{id: i, rng: rand.New(rand.NewPCG(seed, uint64(1000+i))), opTimeout: cfg.opTimeout}
	}
	for round := 1; round <= cfg.rounds; round++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		line, err := oneRound(ctx, cfg, srv, ws, rs, fx, rng, round, res)
		res.perRound[round] = line
		if err != nil {
			return err
		}
		res.rounds = round
		fmt.Printf("%s round %d/%d: SIGKILL after %v; %d acknowledged, %d unknown; restart %v; lost %d (allowed %d), violations %d%s\n",
			res.mode, round, cfg.rounds, line.killAfter.Round(time.Millisecond), line.acked, line.unknown,
			line.restart.Round(time.Millisecond), line.lost, line.allowed, line.violations, staleNote(line.stale))
		if res.fatal != "" {
			return nil
		}
	}
	// A clean stop: SIGTERM saves; after it nothing may be missing. A
	// stop that goes wrong (no exit, a non-zero status) is a failure, but
	// the data is still checked.
	if err := srv.stop(cfg.startTimeout); err != nil {
		res.fatal = "SIGTERM: " + err.Error()
	}
	if err := srv.start(ctx, "after SIGTERM"); err != nil {
		res.fatal = strings.TrimPrefix(res.fatal+"\n", "\n") + "restart after SIGTERM: " + err.Error()
		return nil
	}
	chk := &checker{c: redis.NewClient(bloomproc.ClientOptions(srv.addr, cfg.opTimeout)), round: cfg.rounds + 1,
		fsync: res.mode, clean: true, src: fx.src, probes: fx.probes, want: fx.want}
	err = chk.verify(ctx, ws, rs)
	chk.c.Close()
	if err != nil {
		return fmt.Errorf("check after SIGTERM: %w", err)
	}
	res.v.add(chk.v)
	res.clean = true
	fmt.Printf("%s after SIGTERM and restart: lost %d, violations %d\n", res.mode, chk.v.lost, chk.v.violations)
	if err := srv.stop(cfg.startTimeout); err != nil && res.fatal == "" {
		res.fatal = "final SIGTERM: " + err.Error()
	}
	res.dataBytes = dirSize(srv.dir)
	return nil
}

// oneRound runs the clients until the kill, restarts the server and checks
// everything acknowledged so far.
func oneRound(ctx context.Context, cfg config, srv *server, ws []*worker, rs []*reader, fx *fixtures, rng *rand.Rand, round int, res *modeResult) (roundLine, error) {
	var line roundLine
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	line.killAfter = cfg.killMin + time.Duration(rng.Int64N(int64(cfg.killMax-cfg.killMin)+1))
	arng := rand.New(rand.NewPCG(rng.Uint64(), uint64(round)))
	done := make(chan adminStats, 1)
	go func() { done <- runWorkers(rctx, srv.addr, round, ws, rs, arng, cfg.opTimeout) }()
	select {
	case <-time.After(line.killAfter):
	case <-ctx.Done():
	}
	killAt := time.Now()
	kerr := srv.kill()
	cancel()
	var adm adminStats
	select {
	case adm = <-done:
	case <-time.After(cfg.opTimeout + 30*time.Second):
		return line, errors.New("clients did not stop after the kill")
	}
	if kerr != nil {
		return line, kerr
	}
	if ctx.Err() != nil {
		return line, ctx.Err()
	}
	res.admin.add(adm)
	for _, r := range rs {
		res.reads += r.reads
		res.sightings += len(r.seen)
		r.reads = 0
	}
	if cfg.sabotage {
		name, err := removeNewest(srv.dir)
		if err != nil {
			return line, fmt.Errorf("sabotage: %w", err)
		}
		fmt.Printf("%s round %d: sabotage: removed %s\n", res.mode, round, name)
	}
	for _, w := range ws {
		line.acked += w.st.acked()
		line.unknown += w.st.unknown
		res.st.add(w.st)
		w.st = newStats()
		for _, l := range w.live {
			res.v.violations++
			if len(res.v.examples) < maxExamples {
				res.v.examples = append(res.v.examples, fmt.Sprintf("round %d: %s", round, l))
			}
			line.violations++
		}
		w.live = nil
	}

	t := time.Now()
	if err := srv.start(ctx, fmt.Sprintf("restart after round %d", round)); err != nil {
		if ctx.Err() != nil {
			return line, ctx.Err()
		}
		res.fatal = fmt.Sprintf("round %d: restart failed: %v", round, err)
		line.violations++
		return line, nil
	}
	line.restart = time.Since(t)
	res.restarts = append(res.restarts, line.restart)
	line.stale = staleTemp(srv.dir)
	if len(line.stale) > 0 {
		res.staleRounds++
		for _, n := range line.stale {
			if len(res.staleNames) < 5 && !slices.Contains(res.staleNames, n) {
				res.staleNames = append(res.staleNames, n)
			}
		}
	}
	chk := &checker{c: redis.NewClient(bloomproc.ClientOptions(srv.addr, cfg.opTimeout)), round: round, killAt: killAt,
		fsync: res.mode, window: cfg.window, src: fx.src, probes: fx.probes, want: fx.want}
	defer chk.c.Close()
	if err := chk.verify(ctx, ws, rs); err != nil {
		return line, fmt.Errorf("round %d: check: %w; server log ends:\n%s", round, err, srv.logTail(2048))
	}
	res.v.add(chk.v)
	line.lost = chk.v.lost + chk.v.copyBad + chk.v.resurrected + chk.v.revealed
	line.allowed = chk.v.lostAllowed + chk.v.copyBadAllowed + chk.v.resurrectedAllowed + chk.v.revealedAllowed
	line.violations += chk.v.violations
	return line, nil
}

func staleNote(names []string) string {
	if len(names) == 0 {
		return ""
	}
	more := ""
	if len(names) > 2 {
		names, more = names[:2], fmt.Sprintf(" and %d more", len(names)-2)
	}
	return fmt.Sprintf("; stale temp files after start: %s%s", strings.Join(names, ", "), more)
}

// fixtures are written once, before round 1.
type fixtures struct {
	src    []chunk  // BF.SCANDUMP of the LOADCHUNK source
	probes []string // half members of the source, half not
	want   []int64  // the source's BF.MEXISTS answers for probes
}

func setup(ctx context.Context, addr, run string, timeout time.Duration) (*fixtures, error) {
	c := redis.NewClient(bloomproc.ClientOptions(addr, timeout))
	defer c.Close()
	do := func(args ...any) *redis.Cmd {
		octx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return c.Do(octx, args...)
	}
	for _, a := range [][]any{
		{"BF.RESERVE", bfScaling, "0.001", 1000, "EXPANSION", 2},
		{"BF.RESERVE", bfFixed, "0.01", 2000000, "NONSCALING"},
		{"BF.RESERVE", bfBlocked, "0.01", 2000000, "LAYOUT", "blocked"},
		{"BF.RESERVE", bfWindow, "0.01", 200000, "WINDOW", "30m", "GENERATIONS", 60},
		{"BF.RESERVE", srcKey, "0.01", 100, "EXPANSION", 2},
	} {
		if err := do(a...).Err(); err != nil {
			return nil, fmt.Errorf("%v: %w", a, err)
		}
	}
	// 2,000 items over links of 100, 200, 400, 800 and 1,600: a dump of
	// a header and five chunks.
	var members []string
	for i := 0; i < 2000; i += 500 {
		args := []any{"BF.MADD", srcKey}
		for j := i; j < i+500; j++ {
			it := fmt.Sprintf("%s:src:%d", run, j)
			members = append(members, it)
			args = append(args, it)
		}
		if err := do(args...).Err(); err != nil {
			return nil, fmt.Errorf("BF.MADD %s: %w", srcKey, err)
		}
	}
	fx := &fixtures{}
	it := int64(0)
	for n := 0; ; n++ {
		if n > 10000 {
			return nil, errors.New("BF.SCANDUMP of the source never ends")
		}
		v, err := do("BF.SCANDUMP", srcKey, it).Slice()
		if err != nil {
			return nil, fmt.Errorf("BF.SCANDUMP %s %d: %w", srcKey, it, err)
		}
		if len(v) != 2 {
			return nil, fmt.Errorf("BF.SCANDUMP %s %d: %d elements", srcKey, it, len(v))
		}
		next, _ := v[0].(int64)
		data, _ := v[1].(string)
		if next == 0 {
			break
		}
		fx.src = append(fx.src, chunk{iter: next, data: []byte(data)})
		it = next
	}
	if len(fx.src) < 2 {
		return nil, fmt.Errorf("BF.SCANDUMP %s gave %d chunks; want a header and data", srcKey, len(fx.src))
	}
	args := []any{"BF.MEXISTS", srcKey}
	for i := 0; i < 100; i++ {
		fx.probes = append(fx.probes, members[i*20], fmt.Sprintf("%s:probe:%d", run, i))
	}
	for _, p := range fx.probes {
		args = append(args, p)
	}
	want, err := do(args...).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("BF.MEXISTS %s: %w", srcKey, err)
	}
	fx.want = want
	return fx, nil
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// removeNewest deletes the most recently modified regular file in dir (the
// -sabotage self-test: the checks must then find losses or the restart
// must fail).
func removeNewest(dir string) (string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var newest string
	var at time.Time
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if fi.ModTime().After(at) {
			newest, at = e.Name(), fi.ModTime()
		}
	}
	if newest == "" {
		return "", fmt.Errorf("no file in %s", dir)
	}
	return newest, os.Remove(filepath.Join(dir, newest))
}
