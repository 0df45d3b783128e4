package server

// Redis's latency instruments: the latency monitor (LATENCY LATEST,
// HISTORY, RESET, DOCTOR, with latency-monitor-threshold) and the
// per-command latency histograms behind INFO latencystats and LATENCY
// HISTOGRAM (latency-tracking, latency-tracking-info-percentiles).

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/internal/confval"
)

// latencyHistory is how many samples an event keeps (Redis's 160).
const latencyHistory = 160

type latencySample struct {
	at int64 // unix seconds
	ms int64
}

// latencyEvent is one event's samples, oldest first, and its all-time
// maximum.
type latencyEvent struct {
	samples []latencySample
	max     int64
}

// latencyMonitor records the events that took at least the threshold
// (milliseconds; 0: off, the default, as Redis). The events are Redis's
// names: "command" and "fast-command" (a command's execution), "fork"
// (a snapshot's start pause, which stands for Redis's fork),
// "expire-cycle" (a round of active expiry), "aof-write" (a write(2) of
// the append-only log) and "aof-fsync-always" (its fsync under
// appendfsync always).
type latencyMonitor struct {
	threshold atomic.Int64 // read on every command, without a lock
	mu        sync.Mutex
	events    map[string]*latencyEvent
}

// add records an event of duration d if the monitor is on and d reaches
// the threshold.
func (m *latencyMonitor) add(event string, d time.Duration) {
	t := m.threshold.Load()
	if t <= 0 {
		return
	}
	ms := d.Milliseconds()
	if ms < t {
		return
	}
	now := time.Now().Unix()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		m.events = map[string]*latencyEvent{}
	}
	e := m.events[event]
	if e == nil {
		e = &latencyEvent{}
		m.events[event] = e
	}
	e.max = max(e.max, ms)
	// Samples of the same second are one, with the larger latency.
	if n := len(e.samples); n > 0 && e.samples[n-1].at == now {
		e.samples[n-1].ms = max(e.samples[n-1].ms, ms)
		return
	}
	if len(e.samples) == latencyHistory {
		copy(e.samples, e.samples[1:])
		e.samples = e.samples[:latencyHistory-1]
	}
	e.samples = append(e.samples, latencySample{now, ms})
}

// names are the recorded events, sorted (m.mu held).
func (m *latencyMonitor) names() []string {
	out := make([]string, 0, len(m.events))
	for n := range m.events {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Per-command latency histograms, as Redis's latency tracking keeps them:
// every execution's time in nanoseconds, clamped to [1 ns, 1 s], with two
// significant digits of precision. Values below histSub are counted
// exactly; above, each power of two is split into histSub/2 linear
// steps (relative error below 1/128).
const (
	histSubBits = 8
	histSub     = 1 << histSubBits // 256
	histHalf    = histSub / 2
	histMax     = int64(time.Second)
	// histLen covers values up to histMax (2^30 ns): the exact part,
	// then histHalf steps for each doubling from histSub to 2^30.
	histLen = histSub + (30-histSubBits+1)*histHalf
)

// latencyHist is one command's histogram; allocated when the command
// first runs, so commands never run cost nothing.
type latencyHist struct {
	counts [histLen]uint64
	total  uint64
}

// histIndex is the bucket of v nanoseconds.
func histIndex(v int64) int {
	v = min(max(v, 1), histMax)
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - histSubBits // v>>shift is in [histHalf, histSub)
	return histSub + (shift-1)*histHalf + int(v>>shift) - histHalf
}

// histUpper is the largest value that falls in bucket i.
func histUpper(i int) int64 {
	if i < histSub {
		return int64(i)
	}
	j := i - histSub
	shift := j/histHalf + 1
	lo := int64(histHalf+j%histHalf) << shift
	return lo + int64(1)<<shift - 1
}

func (h *latencyHist) record(d time.Duration) {
	h.counts[histIndex(int64(d))]++
	h.total++
}

func (h *latencyHist) merge(o *latencyHist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
}

// percentile is the value (ns) below or at which p percent of the
// executions fall: the upper end of the bucket holding that rank.
func (h *latencyHist) percentile(p float64) int64 {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(p / 100 * float64(h.total)))
	rank = min(max(rank, 1), h.total)
	var cum uint64
	for i, c := range h.counts {
		cum += c
		if cum >= rank {
			return histUpper(i)
		}
	}
	return histMax
}

// below counts the executions that took at most v nanoseconds (v at a
// bucket boundary: a power of two).
func (h *latencyHist) below(v int64) uint64 {
	var cum uint64
	for i, c := range h.counts {
		if histUpper(i) > v {
			break
		}
		cum += c
	}
	return cum
}

// defaultPercentiles are latency-tracking-info-percentiles' default.
var defaultPercentiles = []float64{50, 99, 99.9}

// latencyTracking holds latency-tracking-info-percentiles (whether
// tracking is on is serverStats.tracking, read on every command).
type latencyTracking struct {
	mu          sync.Mutex
	percentiles []float64
}

// formatPercentiles is the setting as CONFIG GET shows it ("50 99 99.9").
func formatPercentiles(ps []float64) string {
	w := make([]string, len(ps))
	for i, p := range ps {
		w[i] = strconv.FormatFloat(p, 'f', -1, 64)
	}
	return strings.Join(w, " ")
}

// parsePercentiles reads "50 99 99.9": numbers in [0, 100], blank
// separated; "" is none.
func parsePercentiles(v string) ([]float64, error) {
	var out []float64
	for _, w := range strings.Fields(v) {
		p, err := strconv.ParseFloat(w, 64)
		if err != nil || math.IsNaN(p) || p < 0 || p > 100 {
			return nil, errConfigValue("latency-tracking-info-percentiles: each value must be a number between 0 and 100")
		}
		out = append(out, p)
	}
	if len(out) > 64 {
		return nil, errConfigValue("latency-tracking-info-percentiles: at most 64 values")
	}
	return out, nil
}

// commandHist is cmd's histogram so far (both halves), nil when it never
// ran (db.mu held).
func (st *serverStats) commandHist(idx int) *latencyHist {
	cs := &st.perCmd[idx]
	st.tmu.Lock()
	defer st.tmu.Unlock()
	if cs.hist == nil && cs.uhist == nil {
		return nil
	}
	h := &latencyHist{}
	if cs.hist != nil {
		h.merge(cs.hist)
	}
	if cs.uhist != nil {
		h.merge(cs.uhist)
	}
	return h
}

// latencyLines are INFO latencystats' lines: for every command that ran,
// the configured percentiles in microseconds (db.mu held).
func (s *Server) latencyLines() []string {
	s.track.mu.Lock()
	ps := append([]float64(nil), s.track.percentiles...)
	s.track.mu.Unlock()
	var out []string
	for _, cmd := range commandList {
		h := s.stats.commandHist(cmd.idx)
		if h == nil || h.total == 0 {
			continue
		}
		var b strings.Builder
		b.WriteString("latency_percentiles_usec_" + cmd.name + ":")
		for i, p := range ps {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("p" + strconv.FormatFloat(p, 'f', -1, 64) + "=")
			b.WriteString(strconv.FormatFloat(float64(h.percentile(p))/1000, 'f', 3, 64))
		}
		out = append(out, b.String())
	}
	sort.Strings(out)
	return out
}

// LATENCY LATEST | HISTORY event | RESET [event ...] | DOCTOR |
// HISTOGRAM [command ...] | HELP
func cmdLatency(s *Server, c *Session, args [][]byte, r *Reply) {
	m := &s.latency
	sub := strings.ToLower(string(args[1]))
	switch {
	case sub == "latest" && len(args) == 2:
		m.mu.Lock()
		names := m.names()
		r.Array(len(names))
		for _, n := range names {
			e := m.events[n]
			last := e.samples[len(e.samples)-1]
			r.Array(4)
			r.BulkString(n)
			r.Int(last.at)
			r.Int(last.ms)
			r.Int(e.max)
		}
		m.mu.Unlock()
	case sub == "history" && len(args) == 3:
		m.mu.Lock()
		e := m.events[string(args[2])]
		if e == nil {
			r.Array(0)
		} else {
			r.Array(len(e.samples))
			for _, smp := range e.samples {
				r.Array(2)
				r.Int(smp.at)
				r.Int(smp.ms)
			}
		}
		m.mu.Unlock()
	case sub == "reset":
		m.mu.Lock()
		n := 0
		if len(args) == 2 {
			n = len(m.events)
			m.events = nil
		} else {
			for _, a := range args[2:] {
				if _, ok := m.events[string(a)]; ok {
					delete(m.events, string(a))
					n++
				}
			}
		}
		m.mu.Unlock()
		r.Int(int64(n))
	case sub == "doctor" && len(args) == 2:
		r.Verbatim(s.latencyDoctor())
	case sub == "histogram":
		s.latencyHistogram(c, args[2:], r)
	case sub == "help" && len(args) == 2:
		helpReply(r, "LATENCY",
			"DOCTOR",
			"    Return a human readable latency analysis report.",
			"HISTORY <event>",
			"    Return time-latency samples for the <event> class.",
			"LATEST",
			"    Return the latest latency samples for all events.",
			"RESET [<event> ...]",
			"    Reset latency data of one or more <event> classes.",
			"    (default: reset all data for all event classes)",
			"HISTOGRAM [COMMAND ...]",
			"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
			"    If no commands are specified then all histograms are replied.",
		)
	case sub == "latest" || sub == "history" || sub == "doctor" || sub == "help":
		r.Error(wrongArity("latency|" + sub))
	default:
		r.Error("ERR unknown subcommand '" + trimArg(args[1]) + "'. Try LATENCY HELP.")
	}
}

// latencyHistogram answers LATENCY HISTOGRAM as Redis does: for each
// command named (all that ran when none is), a map of its calls and a
// cumulative histogram, in microseconds, at powers of two from 1024 ns;
// only the points where the count grows are listed.
func (s *Server) latencyHistogram(c *Session, names [][]byte, r *Reply) {
	var cmds []*command
	if len(names) == 0 {
		cmds = commandList
	} else {
		for _, n := range names {
			if cmd, ok := lookupCommand(n); ok {
				cmds = append(cmds, cmd)
			}
		}
	}
	type row struct {
		name string
		h    *latencyHist
	}
	var rows []row
	seen := map[*command]bool{}
	unlock := s.lockDB(c) // inside EXEC the lock is already held
	for _, cmd := range cmds {
		if seen[cmd] {
			continue
		}
		seen[cmd] = true
		if h := s.stats.commandHist(cmd.idx); h != nil && h.total > 0 {
			rows = append(rows, row{cmd.name, h})
		}
	}
	unlock()
	r.Map(len(rows))
	for _, rw := range rows {
		r.BulkString(rw.name)
		r.Map(2)
		r.BulkString("calls")
		r.Int(int64(rw.h.total))
		r.BulkString("histogram_usec")
		var points [][2]int64
		var prev uint64
		for v := int64(1024); ; v *= 2 {
			cum := rw.h.below(v - 1)
			if cum > prev {
				points = append(points, [2]int64{v / 1000, int64(cum)})
			}
			prev = cum
			if cum == rw.h.total || v > histMax {
				break
			}
		}
		r.Map(len(points))
		for _, p := range points {
			r.Int(p[0])
			r.Int(p[1])
		}
	}
}

// latencyDoctor is a short report of the events recorded.
func (s *Server) latencyDoctor() string {
	m := &s.latency
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.events) == 0 {
		if m.threshold.Load() <= 0 {
			return "Dave, the latency monitor is disabled (latency-monitor-threshold 0). Enable it with CONFIG SET latency-monitor-threshold <milliseconds>.\n"
		}
		return "Dave, no latency spike was observed during the lifetime of this server, not in the slightest bit.\n"
	}
	var b strings.Builder
	b.WriteString("Dave, I have observed latency spikes in this server. You don't mind talking about it, do you Dave?\n\n")
	for i, n := range m.names() {
		e := m.events[n]
		var sum int64
		for _, smp := range e.samples {
			sum += smp.ms
		}
		fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms). Worst all time event %dms.\n",
			i+1, n, len(e.samples), sum/int64(len(e.samples)), e.max)
	}
	b.WriteString("\nI have a few advices for you:\n\n")
	advice := map[string]string{
		"command":          "- Check SLOWLOG GET for the commands that took long: big BF.MERGE, KEYS or SCANDUMP calls, or an overloaded machine.\n",
		"fork":             "- Snapshots pause the keyspace briefly to fix their point in time; many keys make the pause longer.\n",
		"aof-write":        "- The disk of the data directory is slow: consider appendfsync everysec, or a faster disk.\n",
		"expire-cycle":     "- Many keys expire at once: spread their expiry times.\n",
		"fast-command":     "",
		"aof-fsync-always": "",
	}
	advice["fast-command"] = advice["command"]
	advice["aof-fsync-always"] = advice["aof-write"]
	given := map[string]bool{}
	for _, n := range m.names() {
		if a := advice[n]; a != "" && !given[a] {
			given[a] = true
			b.WriteString(a)
		}
	}
	return b.String()
}

// initLatency applies Config's latency settings (checked by
// checkLatencyConfig).
func (s *Server) initLatency(cfg *Config) {
	if cfg.LatencyMonitorThreshold != nil {
		s.latency.threshold.Store(*cfg.LatencyMonitorThreshold)
	}
	s.stats.tracking.Store(!strings.EqualFold(cfg.LatencyTracking, "no"))
	s.track.percentiles = defaultPercentiles
	if cfg.LatencyPercentiles != nil {
		s.track.percentiles = cfg.LatencyPercentiles
	}
}

// checkLatencyConfig refuses latency settings out of range.
func checkLatencyConfig(cfg *Config) error {
	if t := cfg.LatencyMonitorThreshold; t != nil && *t < 0 {
		return fmt.Errorf("server: latency-monitor-threshold must be 0 (off) or more milliseconds, not %d", *t)
	}
	switch strings.ToLower(cfg.LatencyTracking) {
	case "", "yes", "no":
	default:
		return fmt.Errorf("server: latency-tracking must be yes or no, not %q", cfg.LatencyTracking)
	}
	if _, err := parsePercentiles(formatPercentiles(cfg.LatencyPercentiles)); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// latencySettings are the CONFIG parameters of the latency instruments.
var latencySettings = []setting{
	{name: "latency-monitor-threshold", def: "0", get: func(s *Server) string { return itoa(s.latency.threshold.Load()) }, set: func(s *Server, v string) error {
		n, err := configInt(v, 0, math.MaxInt64)
		if err == nil {
			s.latency.threshold.Store(n)
		}
		return err
	}, file: intFile(0, math.MaxInt64, func(c *Config, n int64) { c.LatencyMonitorThreshold = &n })},
	{name: "latency-tracking", def: "yes", get: func(s *Server) string { return confval.FormatBool(s.stats.tracking.Load()) }, set: func(s *Server, v string) error {
		b, err := configBool(v)
		if err == nil {
			s.stats.tracking.Store(b)
		}
		return err
	}, file: func(c *Config, v string) error {
		b, err := configBool(v)
		c.LatencyTracking = confval.FormatBool(b)
		return err
	}},
	{name: "latency-tracking-info-percentiles", def: "50 99 99.9", get: func(s *Server) string {
		s.track.mu.Lock()
		defer s.track.mu.Unlock()
		return formatPercentiles(s.track.percentiles)
	}, set: func(s *Server, v string) error {
		ps, err := parsePercentiles(v)
		if err != nil {
			return err
		}
		s.track.mu.Lock()
		s.track.percentiles = ps
		s.track.mu.Unlock()
		return nil
	}},
}

func init() {
	settingList = append(settingList, latencySettings...)
	sort.Slice(settingList, func(i, j int) bool { return settingList[i].name < settingList[j].name })
}
