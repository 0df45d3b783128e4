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
}

// maxErrorCodes bounds the distinct error codes INFO errorstats tracks
// (Redis's limit is 128 too); later codes are counted in total only.
const maxErrorCodes = 128

// serverStats holds what INFO stats, commandstats and errorstats report;
// CONFIG RESETSTAT zeroes it.
type serverStats struct {
	perCmd      []cmdStats // by command.idx
	errorsTotal atomic.Int64
	emu         sync.Mutex
	errors      map[string]int64 // error code (first word) → count
}

func newServerStats() *serverStats {
	return &serverStats{perCmd: make([]cmdStats, len(commandList)), errors: map[string]int64{}}
}

// executedLocked counts one execution of cmd that took d and answered r
// (db.mu held).
func (st *serverStats) executedLocked(cmd *command, d time.Duration, r *Reply) {
	cs := &st.perCmd[cmd.idx]
	cs.calls++
	cs.usec += d.Microseconds()
	if r.failed {
		cs.failed++
		st.countError(r)
	}
}

// executed counts one execution of a command run without the lock.
func (st *serverStats) executed(cmd *command, d time.Duration, r *Reply) {
	cs := &st.perCmd[cmd.idx]
	cs.ucalls.Add(1)
	cs.uusec.Add(d.Microseconds())
	if r.failed {
		cs.ufailed.Add(1)
		st.countError(r)
	}
}

// rejected counts a command refused before it ran (cmd nil: unknown).
func (st *serverStats) rejected(cmd *command, r *Reply) {
	if cmd != nil {
		st.perCmd[cmd.idx].rejected.Add(1)
	}
	st.countError(r)
}

// countError counts the error reply in r by its code, the first word.
func (st *serverStats) countError(r *Reply) {
	st.errorsTotal.Add(1)
	b := r.buf[r.start:]
	if len(b) < 2 || b[0] != '-' {
		return
	}
	b = b[1:]
	end := 0
	for end < len(b) && b[end] != ' ' && b[end] != '\r' {
		end++
	}
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
		cs.ucalls.Store(0)
		cs.uusec.Store(0)
		cs.ufailed.Store(0)
		cs.rejected.Store(0)
	}
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
