package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// commandLine is how this run was started, as one would type it in bench/.
func commandLine() string {
	parts := []string{"go run ./cmd/torture"}
	for _, a := range os.Args[1:] {
		if a == "" || strings.ContainsAny(a, " '\"$") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

func gitDescribe(repo string) string {
	out, err := exec.Command("git", "-C", repo, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown commit"
	}
	s := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", repo, "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)bench/*.md").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		s += " (with uncommitted changes)"
	}
	return s
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func writeReport(cfg config, results []*modeResult, elapsed time.Duration) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	load, _ := os.ReadFile("/proc/loadavg")
	p("# Torture: acknowledged writes across SIGKILL\n\n")
	p("Written by `%s` in bench/ on %s (%s/%s, %d CPUs, load average at the end: %s), bloomkit %s, seed %d, %v.\n\n",
		commandLine(), time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
		strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "),
		gitDescribe(cfg.repo), cfg.seed, elapsed.Round(time.Second))
	p("Each round: %d clients write (BF.ADD, BF.MADD, BF.INSERT, CF.ADD, CF.DEL, BF.LOADCHUNK) while another sends BGSAVE and BGREWRITEAOF every 30–300 ms; "+
		"SIGKILL after %v–%v; restart on the same directory; every write acknowledged so far (in any round) is checked. "+
		"After the last round: SIGTERM, restart, check again (nothing may be missing). "+
		"Under everysec a loss is allowed only for a write acknowledged at most %v before the kill that just happened. "+
		"The package comment of bench/cmd/torture explains how deletions are made checkable.\n\n",
		cfg.clients, cfg.killMin, cfg.killMax, cfg.window)

	p("| appendfsync | verdict | rounds | acknowledged writes | items added | CF.DEL | LOADCHUNK copies | unknown | refused | lost | lost inside window | lost outside window | deletes undone | applied twice | seen, then lost | violations |\n")
	p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		verdict := "**pass**"
		switch {
		case r.failed():
			verdict = "**FAIL**"
		case r.err != "":
			verdict = "incomplete"
		}
		lost := r.v.lost + r.v.copyBad
		inside := r.v.lostAllowed + r.v.copyBadAllowed
		p("| %s | %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |\n",
			r.mode, verdict, r.rounds, r.st.acked(), r.st.items, r.st.cfDels, r.st.copies, r.st.unknown, r.st.refused,
			lost, inside, lost-inside, r.v.resurrected, r.v.duplicated, r.v.revealed, r.v.violations)
	}
	p("\n\"Acknowledged writes\" counts commands whose reply arrived (a BF.MADD of 8 items is one write, 8 items); \"unknown\" commands lost their connection to the kill and are not checked; \"refused\" got an error reply. \"Lost\" includes LOADCHUNK copies missing an acknowledged chunk; \"deletes undone\" are acknowledged CF.DEL whose item came back; \"seen, then lost\" are CF.ADDs still unanswered at the kill that a reading client had already seen (CF.EXISTS 1) and that were gone after the restart (no reply may reveal a write before it is durable).\n\n")

	for _, r := range results {
		p("## appendfsync %s\n\n", r.mode)
		var names []string
		for k := range r.st.ops {
			names = append(names, k)
		}
		slices.Sort(names)
		var ops []string
		for _, k := range names {
			ops = append(ops, fmt.Sprintf("%s %d", k, r.st.ops[k]))
		}
		p("- Acknowledged by command: %s.\n", strings.Join(ops, ", "))
		rw := fmt.Sprintf("%d started, %d \"in progress\"", r.admin.rewrite, r.admin.rewriteBusy)
		if r.admin.rewriteUnsupported {
			rw += "; the server answered \"unknown command\" (not implemented in this build)"
		}
		p("- Readers: %d CF.EXISTS calls on items being added, %d of them answered 1 before the CF.ADD's own reply.\n", r.reads, r.sightings)
		p("- BGSAVE: %d started, %d \"already in progress\". BGREWRITEAOF: %s.\n", r.admin.bgsave, r.admin.bgsaveBusy, rw)
		if len(r.admin.failed) > 0 {
			p("- Other BGSAVE/BGREWRITEAOF replies: %s.\n", strings.Join(sortedCounts(r.admin.failed), "; "))
		}
		if len(r.st.refusedMsg) > 0 {
			l := sortedCounts(r.st.refusedMsg)
			p("- Error replies to writes: %s.\n", strings.Join(l[:min(5, len(l))], "; "))
		}
		if len(r.restarts) > 0 {
			p("- Restart (start-up incl. replay, until PING answers): median %v, max %v.\n",
				median(r.restarts).Round(time.Millisecond), slices.Max(r.restarts).Round(time.Millisecond))
		}
		idle := 0
		for _, l := range r.perRound {
			if l.acked == 0 {
				idle++
			}
		}
		if idle > 0 {
			p("- **%d of %d rounds acknowledged no write at all** (a server refusing every write passes the checks trivially: see the error replies).\n", idle, r.rounds)
		}
		if r.staleRounds > 0 {
			p("- Stale temporary files in the data directory after start-up in %d of %d rounds (start-up must remove them), e.g. %s.\n",
				r.staleRounds, r.rounds, strings.Join(r.staleNames, ", "))
		}
		if r.clean {
			p("- SIGTERM, restart and a final check: done.\n")
		}
		if r.dataBytes > 0 {
			p("- Data directory at the end: %.1f MiB. Run time %v.\n", float64(r.dataBytes)/(1<<20), r.elapsed.Round(time.Second))
		}
		if r.fatal != "" {
			p("\n**Server failure:**\n\n```\n%s\n```\n", strings.TrimSpace(r.fatal))
		}
		if r.err != "" {
			p("\n**The run stopped early:** %s\n", firstLine(r.err))
		}
		if len(r.v.examples) > 0 {
			p("\nViolations (first %d of %d):\n\n", len(r.v.examples), r.v.violations)
			for _, e := range r.v.examples {
				p("- %s\n", e)
			}
		}
		p("\n<details><summary>Per round</summary>\n\n| round | SIGKILL after | acknowledged | unknown | restart | lost | of them allowed | violations |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for i := 1; i <= cfg.rounds; i++ {
			l, ok := r.perRound[i]
			if !ok {
				continue
			}
			p("| %d | %v | %d | %d | %v | %d | %d | %d |\n", i, l.killAfter.Round(time.Millisecond), l.acked, l.unknown,
				l.restart.Round(time.Millisecond), l.lost, l.allowed, l.violations)
		}
		p("\n</details>\n\n")
	}
	return os.WriteFile(cfg.out, []byte(b.String()), 0o644)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
