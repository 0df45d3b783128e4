package server

import (
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// cmdStats is one command's counters for INFO commandstats, kept as Redis
// keeps them: calls and usec count executions; rejected_calls the times it
// was refused before running (NOAUTH, arity, MISCONF, not allowed in
// MULTI); failed_calls the executions answered with an error. Commands
// that run under the keyspace lock count in plain fields guarded by it
// (no atomic operation on the hot path); the others, and rejections, in
// atomics. INFO, which holds the lock, adds both.
type cmdStats struct {
	calls, usec, failed    int64 // db.mu held
	ucalls, uusec, ufailed atomic.Int64
	rejected               atomic.Int64
	// hist (db.mu) and uhist (tmu) are the latency histograms of INFO
	// latencystats and LATENCY HISTOGRAM: nil until the command runs.
	hist, uhist *latencyHist
}

// maxErrorCodes bounds the distinct error codes INFO errorstats tracks
// (Redis's limit is 128 too); later codes are counted in total only.
const maxErrorCodes = 128

// serverStats holds what INFO stats, commandstats and errorstats report;
// CONFIG RESETSTAT zeroes it. It also keeps the per-command counters and
// latency histograms /metrics exports (tallies, never reset).
type serverStats struct {
	perCmd      []cmdStats // by command.idx
	errorsTotal atomic.Int64
	emu         sync.Mutex
	errors      map[string]int64 // error code (first word) → count
	// tally is counted with db.mu held (commands that run under the
	// keyspace lock: no atomic operation or extra lock on the hot path);
	// utally under tmu (commands run without it, and rejections). Both
	// are indexed by command.idx, with one more entry for unknown
	// commands; the scrape adds them up.
	tally  []cmdTally
	tmu    sync.Mutex
	utally []cmdTally
	// refused counts the writes refused, by refusalReasons (never
	// reset: a Prometheus counter).
	refused [len(refusalReasons)]atomic.Int64
	// tracking is latency-tracking: the per-command latency histograms
	// are kept while it is on (the default).
	tracking atomic.Bool
}

// latencyBounds are the upper bounds of bloomkit_command_duration_seconds'
// buckets.
var latencyBounds = [...]time.Duration{time.Microsecond, 5 * time.Microsecond, 10 * time.Microsecond,
	50 * time.Microsecond, 100 * time.Microsecond, 500 * time.Microsecond, time.Millisecond,
	5 * time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second}

// cmdTally is one command's lifetime counters for /metrics: a Prometheus
// counter pair and histogram kept as plain integers, turned into metrics
// when scraped. (Observing a prometheus.Histogram per command cost about
// 4% of the server's CPU at pipeline depth 16.)
type cmdTally struct {
	calls, errs int64
	sum         time.Duration
	buckets     [len(latencyBounds)]int64 // not cumulative; above the last bound: calls - their sum
}

func (t *cmdTally) add(d time.Duration, failed bool) {
	t.calls++
	if failed {
		t.errs++
	}
	t.sum += d
	for i, b := range latencyBounds {
		if d <= b {
			t.buckets[i]++
			return
		}
	}
}

func (t *cmdTally) merge(o *cmdTally) {
	t.calls += o.calls
	t.errs += o.errs
	t.sum += o.sum
	for i := range t.buckets {
		t.buckets[i] += o.buckets[i]
	}
}

func newServerStats() *serverStats {
	st := &serverStats{perCmd: make([]cmdStats, len(commandList)), errors: map[string]int64{},
		tally: make([]cmdTally, len(commandList)+1), utally: make([]cmdTally, len(commandList)+1)}
	st.tracking.Store(true)
	return st
}

// executedLocked counts one execution of cmd that took d and answered r
// (db.mu held).
func (st *serverStats) executedLocked(cmd *command, d time.Duration, r *Reply) {
	st.tally[cmd.idx].add(d, r.w.Failed())
	st.executedInTxn(cmd, d, r)
}

// executedInTxn counts a command EXEC ran, for INFO commandstats and
// latencystats only (in /metrics, EXEC counts as one command), db.mu held.
func (st *serverStats) executedInTxn(cmd *command, d time.Duration, r *Reply) {
	cs := &st.perCmd[cmd.idx]
	if st.tracking.Load() {
		if cs.hist == nil {
			cs.hist = &latencyHist{}
		}
		cs.hist.record(d)
	}
	cs.calls++
	cs.usec += d.Microseconds()
	if r.w.Failed() {
		cs.failed++
		st.countError(r)
	}
}

// executed counts one execution of a command run without the lock.
func (st *serverStats) executed(cmd *command, d time.Duration, r *Reply) {
	cs := &st.perCmd[cmd.idx]
	st.tmu.Lock()
	st.utally[cmd.idx].add(d, r.w.Failed())
	if st.tracking.Load() {
		if cs.uhist == nil {
			cs.uhist = &latencyHist{}
		}
		cs.uhist.record(d)
	}
	st.tmu.Unlock()
	cs.ucalls.Add(1)
	cs.uusec.Add(d.Microseconds())
	if r.w.Failed() {
		cs.ufailed.Add(1)
		st.countError(r)
	}
}

// rejected counts a command refused before it ran (cmd nil: unknown) that
// took d.
func (st *serverStats) rejected(cmd *command, d time.Duration, r *Reply) {
	i := len(st.utally) - 1
	if cmd != nil {
		i = cmd.idx
		st.perCmd[cmd.idx].rejected.Add(1)
	}
	st.tmu.Lock()
	st.utally[i].add(d, true)
	st.tmu.Unlock()
	st.countError(r)
}

// tallies returns every command's /metrics counters (index len(commandList):
// unknown commands). It takes db.mu for one copy of the locked half.
func (s *Server) tallies() []cmdTally {
	st := s.stats
	out := make([]cmdTally, len(st.tally))
	s.db.Lock()
	copy(out, st.tally)
	s.db.Unlock()
	st.tmu.Lock()
	for i := range out {
		out[i].merge(&st.utally[i])
	}
	st.tmu.Unlock()
	return out
}

// countError counts the error reply in r by its code, the first word.
func (st *serverStats) countError(r *Reply) {
	st.errorsTotal.Add(1)
	b := r.Bytes()
	if len(b) < 2 || b[0] != '-' {
		return
	}
	b = b[1:]
	end := 0
	for end < len(b) && b[end] != ' ' && b[end] != '\r' {
		end++
	}
	st.countRefusal(b)
	st.emu.Lock()
	if n, ok := st.errors[string(b[:end])]; ok {
		st.errors[string(b[:end])] = n + 1
	} else if len(st.errors) < maxErrorCodes {
		st.errors[string(b[:end])] = 1
	}
	st.emu.Unlock()
}

// reset zeroes the counters (db.mu held).
func (st *serverStats) reset() {
	for i := range st.perCmd {
		cs := &st.perCmd[i]
		cs.calls, cs.usec, cs.failed = 0, 0, 0
		cs.hist = nil
		cs.ucalls.Store(0)
		cs.uusec.Store(0)
		cs.ufailed.Store(0)
		cs.rejected.Store(0)
	}
	st.tmu.Lock()
	for i := range st.perCmd {
		st.perCmd[i].uhist = nil
	}
	st.tmu.Unlock()
	st.errorsTotal.Store(0)
	st.emu.Lock()
	st.errors = map[string]int64{}
	st.emu.Unlock()
}

// commandLines are INFO commandstats' lines, in command-name order (db.mu
// held).
func (st *serverStats) commandLines() []string {
	var out []string
	for _, cmd := range commandList {
		cs := &st.perCmd[cmd.idx]
		calls, usec := cs.calls+cs.ucalls.Load(), cs.usec+cs.uusec.Load()
		rej, failed := cs.rejected.Load(), cs.failed+cs.ufailed.Load()
		if calls == 0 && rej == 0 && failed == 0 {
			continue
		}
		per := 0.0
		if calls > 0 {
			per = float64(usec) / float64(calls)
		}
		out = append(out, "cmdstat_"+cmd.name+":calls="+itoa(calls)+",usec="+itoa(usec)+
			",usec_per_call="+strconv.FormatFloat(per, 'f', 2, 64)+
			",rejected_calls="+itoa(rej)+",failed_calls="+itoa(failed))
	}
	sort.Strings(out)
	return out
}

// errorLines are INFO errorstats' lines, in code order.
func (st *serverStats) errorLines() []string {
	st.emu.Lock()
	out := make([]string, 0, len(st.errors))
	for code, n := range st.errors {
		out = append(out, "errorstat_"+code+":count="+itoa(n))
	}
	st.emu.Unlock()
	sort.Strings(out)
	return out
}

// refusalReasons label bloomkit_writes_refused_total: the error replies
// that refuse a write for a reason an operator must fix, by their code.
var refusalReasons = [...]struct{ reason, prefix string }{
	{"misconf", "MISCONF "},                  // the log or a snapshot failed (disk full, I/O error)
	{"maxmemory", "OOM "},                    // over maxmemory
	{"maxmemory", "ERR Insufficient memory"}, // a filter that would pass maxmemory
	{"readonly", "READONLY "},                // a read-only replica
	{"min-replicas", "NOREPLICAS "},          // too few replicas (min-replicas-to-write)
	{"misconf", "EXECABORT Transaction discarded because of: MISCONF"},
	{"maxmemory", "EXECABORT Transaction discarded because of: OOM"},
	{"readonly", "EXECABORT Transaction discarded because of: READONLY"},
	{"min-replicas", "EXECABORT Transaction discarded because of: NOREPLICAS"},
}

// refusalLabels are the distinct reasons, in the order metrics list them.
var refusalLabels = []string{"misconf", "maxmemory", "readonly", "min-replicas"}

// countRefusal counts an error reply (b, without its '-') that refuses a
// write.
func (st *serverStats) countRefusal(b []byte) {
	for i, rr := range refusalReasons {
		if len(b) >= len(rr.prefix) && string(b[:len(rr.prefix)]) == rr.prefix {
			st.refused[i].Add(1)
			return
		}
	}
}

// refusedBy is the writes refused for reason.
func (st *serverStats) refusedBy(reason string) int64 {
	var n int64
	for i, rr := range refusalReasons {
		if rr.reason == reason {
			n += st.refused[i].Load()
		}
	}
	return n
}
