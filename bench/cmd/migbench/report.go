package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// niceness is this process's nice value, from /proc/self/stat.
func niceness() string {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return "?"
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 17 {
		return "?"
	}
	return f[16]
}

// spread is "median (min–max)" of xs, formatted by f.
func spread(xs []float64, f func(float64) string) string {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	if len(s) == 1 {
		return f(med)
	}
	return fmt.Sprintf("%s (%s–%s)", f(med), f(s[0]), f(s[len(s)-1]))
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

func report(cfg config, sd seedInfo, redisVer string, targets []target, res map[string][]result) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	cmdline := "go run ./cmd/migbench"
	if len(os.Args) > 1 {
		cmdline += " " + strings.Join(os.Args[1:], " ")
	}
	if n := niceness(); n != "0" {
		cmdline = "nice -n " + n + " " + cmdline
	}
	p("# Moving from Redis + RedisBloom: bloom serve beside a Redis replica\n\n")
	p("Written by `%s` in bench/ on %s (%d CPUs, load average at the end: %s).\n\n",
		cmdline, time.Now().UTC().Format("2006-01-02 15:04 UTC"), numCPU(), loadavg())
	p("Servers: %s, with RedisBloom (%s); bloom serve built from this repository.\n\n", redisVer, sd.bfVersion)
	p("## The source\n\n")
	p("A redis-server with RedisBloom holding %d keys: %s. Loaded in %.1f s by pipelines of go-redis over one connection, then saved: an RDB of %.1f MB, used_memory %.1f MB. ",
		sd.dbsize, sd.mix.describe(), sd.took.Seconds(), float64(sd.rdbBytes)/1e6, float64(sd.usedMemory)/1e6)
	p("Every repetition starts a fresh source from that file and a fresh, empty target. ")
	p("Redis runs with `--save \"\" --repl-diskless-sync yes --repl-diskless-sync-delay 0` (Redis 7's default method, without the wait for more replicas; a Redis replica writes the RDB it receives to its disk, then loads it), the source with `--appendonly no`. ")
	if cfg.persist {
		p("Both targets log every write: the Redis target with `--appendonly yes --appendfsync everysec` (after loading the master's data it rewrites its log in a forked child), bloom serve with `--dir D --appendonly yes --appendfsync everysec` (it writes what it loaded as its snapshot before serving it). ")
	} else {
		p("Neither target persists anything of its own: the Redis target with `--appendonly no`, bloom serve with `--appendonly no` (it loads what it receives into memory and writes no snapshot). ")
	}
	p("Repetitions interleaved: bloom serve, Redis, bloom serve, …\n\n")

	p("## Full sync\n\n")
	p("A writer sends %d mixed writes a second to the source (SET with and without a TTL, BF.ADD and CF.ADD creating filters) from before `REPLICAOF` until after the lag measurements. ", cfg.rate)
	p("Sync time: from `REPLICAOF` on the target to its INFO showing `master_link_status:up` and `master_sync_in_progress:0` (polled every 10 ms). ")
	p("Durable: until, further, no background save or log rewrite runs on either server (INFO persistence). ")
	p("CPU: user + system time of each server process from `REPLICAOF` to that point, from /proc/<pid>/stat (forked children included: the source's for the sync, the Redis target's log rewrite). ")
	p("RSS after the sync. Catch-up: then until the target's offset reaches the source's. ")
	p("Later: the target's RSS, and its CPU since `REPLICAOF`, %s after the catch-up (the paced writer still writing).\n\n", settleLater)
	p("| target | rep | sync time | durable | CPU source | CPU target | RSS source | RSS target | catch-up | RSS target later | CPU target later | load average |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, tg := range targets {
		for i, r := range res[tg.name] {
			p("| %s | %d | **%s** | %s | %.2f s | **%.2f s** | %.0f MB | %.0f MB | %s | %.0f MB | %.2f s | %s |\n", tg.name, i+1, secs(r.sync), secs(r.durable), r.cpuSrc, r.cpuDst,
				float64(r.rssSrc)/1e6, float64(r.rssDst)/1e6, ms(r.catchup), float64(r.rssDstLater)/1e6, r.cpuDstLater, r.loadSync)
		}
	}
	p("\n## Replication lag\n\n")
	p("A client SETs `marker:N` on the source every 20 ms for %d s and polls the target (EXISTS, back to back) until it is there: the lag is from the SET's send to the first EXISTS that sees it (one round trip to each server included). ", cfg.lagSecs)
	p("Paced: the %d writes/s writer alone. Saturated: two more connections writing the same mix as fast as they can in pipelines of 32. ", cfg.rate)
	p("Source ops/s: the source's commands a second during the saturated measurement. Drain: once the saturating writers stop, until the target's offset reaches the source's.\n\n")
	p("| target | rep | paced p50 | paced p99 | paced max | saturated p50 | saturated p99 | saturated max | source ops/s | drain | load average |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, tg := range targets {
		for i, r := range res[tg.name] {
			p("| %s | %d | %s | **%s** | %s | %s | **%s** | %s | %.0f | %s | %s |\n", tg.name, i+1, ms(r.paced.p50), ms(r.paced.p99), ms(r.paced.max),
				ms(r.sat.p50), ms(r.sat.p99), ms(r.sat.max), r.sat.ops, ms(r.drain), r.loadLag)
		}
	}
	p("\n## The move\n\n")
	p("With the writers stopped and the offsets equal, both servers' DBSIZE are compared and 2,000 random strings (value, TTL within 5 s) and 500 random filters (BF.MEXISTS/CF.MEXISTS of 10 items, half added, half not) read from both (\"same data\"). ")
	p("Then one client writes acknowledged items one after another (`SET ack:N 1` and `BF.ADD ackbf ack:N` in turn, into a filter reserved at 0.01%% error), to the source, turning to the other server each time one refuses (READONLY), 1 ms apart after the first refusal. ")
	p("After 1.5 s of that, the cut-over: `bloom move --from SOURCE --to TARGET --pause %v` for bloom serve; for Redis the same steps by hand (the target caught up to within 1 MB, `CLIENT PAUSE %d WRITE` on the source, the target's `slave_repl_offset` equal to the source's `master_repl_offset`, `REPLICAOF NO ONE` on the target, `REPLICAOF target` on the source, `CLIENT UNPAUSE`). ", cfg.pause, cfg.pause.Milliseconds())
	p("Paused: `CLIENT PAUSE` to `CLIENT UNPAUSE` (bloom move's own report). Longest gap: between two acknowledged writes, from the move's start to 1 s after its end (the writer's view of the pause, its switch included); before: the same in the second before the move. ")
	p("Lost: acknowledged items that the target, afterwards, does not hold (EXISTS, BF.MEXISTS).\n\n")
	p("| target | rep | same data | move | paused | longest gap | last source ack → first target ack | longest gap before | acked (by the source) | lost | load average |\n|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, tg := range targets {
		for i, r := range res[tg.name] {
			same := "yes"
			if r.diff != "" {
				same = "**no**: " + r.diff
			}
			p("| %s | %d | %s | %s | %s | **%s** | %s | %s | %d (%d) | **%d** | %s |\n", tg.name, i+1, same, ms(r.mv.total), ms(r.mv.paused), ms(r.mv.maxGap),
				ms(r.mv.switchGap), ms(r.mv.baseGap), r.mv.acked, r.mv.onSource, r.mv.lost, r.loadMove)
		}
	}
	p("\n## Against the goals\n\n")
	p("Medians over the repetitions, range in brackets; the ratio is bloom serve's median over Redis's.\n\n")
	get := func(name string, f func(result) float64) []float64 {
		var xs []float64
		for _, r := range res[name] {
			xs = append(xs, f(r))
		}
		return xs
	}
	line := func(what string, f func(result) float64, unit func(float64) string) {
		bl, rd := get(targets[0].name, f), get(targets[1].name, f)
		ratio := ""
		if median(rd) > 0 {
			ratio = fmt.Sprintf("; ratio %.2f", median(bl)/median(rd))
		}
		p("- %s: bloom serve %s, Redis %s%s.\n", what, spread(bl, unit), spread(rd, unit), ratio)
	}
	fs := func(x float64) string { return fmt.Sprintf("%.2f s", x) }
	fms := func(x float64) string { return fmt.Sprintf("%.1f ms", x) }
	fmb := func(x float64) string { return fmt.Sprintf("%.0f MB", x) }
	d := func(g func(result) time.Duration) func(result) float64 {
		return func(r result) float64 { return float64(g(r)) / 1e6 }
	}
	line("Full sync time", func(r result) float64 { return r.sync.Seconds() }, fs)
	line("Sync and background saves done", func(r result) float64 { return r.durable.Seconds() }, fs)
	line("CPU of the source during the sync", func(r result) float64 { return r.cpuSrc }, fs)
	line("CPU of the target during the sync", func(r result) float64 { return r.cpuDst }, fs)
	line("RSS of the target after the sync", func(r result) float64 { return float64(r.rssDst) / 1e6 }, fmb)
	line(fmt.Sprintf("RSS of the target %s after the catch-up", settleLater), func(r result) float64 { return float64(r.rssDstLater) / 1e6 }, fmb)
	line("Lag p99, paced writer (goal ≤ 10 ms)", d(func(r result) time.Duration { return r.paced.p99 }), fms)
	line("Lag p99, saturated", d(func(r result) time.Duration { return r.sat.p99 }), fms)
	line("Write pause seen by the client (longest gap between acknowledged writes)", d(func(r result) time.Duration { return r.mv.maxGap }), fms)
	line("Source paused", d(func(r result) time.Duration { return r.mv.paused }), fms)
	for _, tg := range targets {
		lost, acked, diffs := 0, 0, 0
		for _, r := range res[tg.name] {
			lost += r.mv.lost
			acked += r.mv.acked
			if r.diff != "" {
				diffs++
			}
		}
		p("- %s: %d of %d acknowledged writes lost (goal 0); %d of %d repetitions with a difference between source and target before the move (goal 0).\n",
			tg.name, lost, acked, diffs, len(res[tg.name]))
	}
	return os.WriteFile(cfg.out, []byte(b.String()), 0o644)
}
