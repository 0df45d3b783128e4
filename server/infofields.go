package server

// INFO fields that monitoring tools written for Redis read (redis_exporter,
// Grafana's Redis dashboards, redis-cli --stat): traffic, rates, memory
// peak and fragmentation, keyspace hits and misses, the snapshot's start
// pause. Each section's extra lines come from one function here, kept
// apart from the sections' fixed lines.

import (
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// netCounters are bytes read from and written to clients.
type netCounters struct {
	in, out atomic.Int64
}

// countingReader counts what a goroutine-served client sends.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// netBytes is every client's traffic since the start (or CONFIG
// RESETSTAT, with sinceReset): the goroutine-served ones' and each event
// loop's.
func (s *Server) netBytes(sinceReset bool) (in, out int64) {
	in, out = s.net.in.Load(), s.net.out.Load()
	if sinceReset {
		in, out = in-s.netBase.in.Load(), out-s.netBase.out.Load()
	}
	s.lifeMu.Lock()
	loops := s.loops
	s.lifeMu.Unlock()
	for _, l := range loops {
		i, o := l.netBytes()
		in += i
		out += o
	}
	return in, out
}

// The instantaneous_* fields are Redis's: a reading every 100 ms (the
// background tick), each turned into a rate per second against the one
// before, and the mean of the last rateSamples rates reported.
const rateSamples = 16

const (
	rateOps = iota
	rateNetIn
	rateNetOut
	rateKinds
)

// rateMeter holds the samples; the background goroutine adds them, INFO
// reads them.
type rateMeter struct {
	mu      sync.Mutex
	last    [rateKinds]int64 // the reading at lastAt
	lastAt  int64            // monoNow of the last reading (0: none yet)
	samples [rateKinds][rateSamples]int64
	next    int
}

// sample takes one reading of each counter at monotonic time now.
func (m *rateMeter) sample(now int64, readings [rateKinds]int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastAt != 0 {
		if ms := (now - m.lastAt) / int64(time.Millisecond); ms > 0 {
			for k := range readings {
				m.samples[k][m.next] = (readings[k] - m.last[k]) * 1000 / ms
			}
			m.next = (m.next + 1) % rateSamples
		}
	}
	m.last, m.lastAt = readings, now
}

// rate is the mean of kind's samples, per second.
func (m *rateMeter) rate(kind int) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var sum int64
	for _, v := range m.samples[kind] {
		sum += v
	}
	return float64(sum) / rateSamples
}

// sampleRates is the background tick's reading for the rates, and the
// memory peak's update.
func (s *Server) sampleRates() {
	in, out := s.netBytes(false)
	s.rates.sample(monoNow(), [rateKinds]int64{s.totalCmds.Load(), in, out})
	s.db.Lock()
	used := s.db.Used()
	s.db.Unlock()
	s.notePeak(used)
}

// notePeak raises used_memory_peak to used if it is higher.
func (s *Server) notePeak(used uint64) {
	for {
		p := s.peakMem.Load()
		if used <= p || s.peakMem.CompareAndSwap(p, used) {
			return
		}
	}
}

// resetInfoExtra is CONFIG RESETSTAT for the traffic counters: they count
// from now. It takes no keyspace lock (CONFIG RESETSTAT may run inside
// EXEC, which holds it); resetStats resets the memory peak under it.
func (s *Server) resetInfoExtra() {
	in, out := s.netBytes(false)
	s.netBase.in.Store(in)
	s.netBase.out.Store(out)
}

// noteSnapshotStart records a snapshot's start pause.
func (s *Server) noteSnapshotStart(d time.Duration) {
	s.snapStall.add(d)
	s.latency.add("fork", d)
}

// snapStall is the pause a snapshot's start imposes: the time the
// keyspace is locked to fix its point in time and switch to a new log.
// It is what Redis's fork costs its clients, so INFO reports it as
// latest_fork_usec and counts starts in total_forks; LATENCY records it
// as the "fork" event.
type snapStall struct {
	latestUsec, total atomic.Int64
}

func (st *snapStall) add(d time.Duration) {
	st.latestUsec.Store(d.Microseconds())
	st.total.Add(1)
}

// memoryInfoExtra are INFO memory's lines beyond used_memory and
// maxmemory (db.mu held: INFO runs under it).
func (s *Server) memoryInfoExtra(rss uint64) []string {
	used := s.db.Used()
	s.notePeak(used)
	peak := s.peakMem.Load()
	perc := 0.0
	if peak > 0 {
		perc = float64(used) * 100 / float64(peak)
	}
	frag, fragBytes := 0.0, int64(rss)-int64(used)
	if used > 0 {
		frag = float64(rss) / float64(used)
	}
	total, _ := s.cfg.memSystem.Total()
	return []string{
		"used_memory_peak:" + strconv.FormatUint(peak, 10),
		"used_memory_peak_human:" + human(peak),
		"used_memory_peak_perc:" + strconv.FormatFloat(perc, 'f', 2, 64) + "%",
		"total_system_memory:" + strconv.FormatUint(total, 10),
		"total_system_memory_human:" + human(total),
		"mem_fragmentation_ratio:" + strconv.FormatFloat(frag, 'f', 2, 64),
		"mem_fragmentation_bytes:" + strconv.FormatInt(fragBytes, 10),
		"mem_allocator:go-" + runtime.Version(),
		// Values leave used_memory when they leave the keyspace; the
		// large ones are returned to the system off the lock, as Redis's
		// lazy free does, and counted here meanwhile.
		"lazyfree_pending_objects:" + strconv.FormatInt(s.db.LazyFreePending(), 10),
		"lazyfreed_objects:" + strconv.FormatInt(s.db.LazyFreed(), 10),
	}
}

// statsInfoExtra are INFO stats' lines beyond the connection, command and
// expiry counters (db.mu held).
func (s *Server) statsInfoExtra() []string {
	in, out := s.netBytes(true)
	hits, misses := s.db.Hits(), s.db.Misses()
	kbps := func(kind int) string { return strconv.FormatFloat(s.rates.rate(kind)/1024, 'f', 2, 64) }
	return []string{
		"instantaneous_ops_per_sec:" + itoa(int64(s.rates.rate(rateOps))),
		"total_net_input_bytes:" + itoa(in),
		"total_net_output_bytes:" + itoa(out),
		"instantaneous_input_kbps:" + kbps(rateNetIn),
		"instantaneous_output_kbps:" + kbps(rateNetOut),
		"keyspace_hits:" + strconv.FormatUint(hits, 10),
		"keyspace_misses:" + strconv.FormatUint(misses, 10),
		"latest_fork_usec:" + itoa(s.snapStall.latestUsec.Load()),
		"total_forks:" + itoa(s.snapStall.total.Load()),
	}
}
