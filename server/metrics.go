package server

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MaxMetricsKeys bounds Config.MetricsKeys: each key exported costs a pass
// over its filter at every scrape (cached for filterStatsTTL) and four
// series in every Prometheus server that scrapes.
const MaxMetricsKeys = 10000

// metrics is the Prometheus registry. Per-command counters and latencies
// are counted by serverStats (tallies) and turned into metrics when
// scraped (commandCollector).
type metrics struct {
	reg          *prometheus.Registry
	authFailures prometheus.Counter
	saves        prometheus.Counter
	saveFailures prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		authFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bloomkit_auth_failures_total", Help: "Failed AUTH / HELLO AUTH attempts.",
		}),
		saves: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bloomkit_snapshots_total", Help: "Snapshots written.",
		}),
		saveFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bloomkit_snapshot_failures_total", Help: "Snapshots that failed.",
		}),
	}
	return m
}

func (m *metrics) register(s *Server) {
	m.reg.MustRegister(m.authFailures, m.saves, m.saveFailures,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&stateCollector{s: s}, &commandCollector{s: s}, buildInfoGauge())
}

// buildInfoGauge is bloomkit_build_info, always 1, whose labels say which
// build is running (as Prometheus's own *_build_info metrics do).
func buildInfoGauge() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "bloomkit_build_info",
		Help: "Always 1; the labels say which build of bloomkit is running.",
		ConstLabels: prometheus.Labels{
			"version": buildInfo.Version, "revision": buildInfo.Commit, "goversion": buildInfo.GoVersion,
		},
	})
	g.Set(1)
	return g
}

var (
	descCommands = prometheus.NewDesc("bloomkit_commands_total", "Commands processed, by command.", []string{"cmd"}, nil)
	descErrors   = prometheus.NewDesc("bloomkit_command_errors_total", "Commands answered with an error reply, by command.", []string{"cmd"}, nil)
	descLatency  = prometheus.NewDesc("bloomkit_command_duration_seconds", "Time to execute a command (excluding network I/O), by command.", []string{"cmd"}, nil)
	descRefused  = prometheus.NewDesc("bloomkit_writes_refused_total", "Writes refused: reason misconf (the log or a snapshot failed: disk full, I/O error), maxmemory, readonly (a replica), min-replicas.", []string{"reason"}, nil)
)

// commandCollector exports the per-command tallies of the commands that
// ran ("unknown" for unknown command names): a command never called has
// no series, so an idle server does not export a histogram of empty
// buckets for each of its commands.
type commandCollector struct{ s *Server }

// Describe implements prometheus.Collector.
func (c *commandCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descCommands
	ch <- descErrors
	ch <- descLatency
	ch <- descRefused
}

// Collect implements prometheus.Collector.
func (c *commandCollector) Collect(ch chan<- prometheus.Metric) {
	for _, reason := range refusalLabels {
		ch <- prometheus.MustNewConstMetric(descRefused, prometheus.CounterValue, float64(c.s.stats.refusedBy(reason)), reason)
	}
	t := c.s.tallies()
	for i := range t {
		if t[i].calls == 0 {
			continue
		}
		name := "unknown"
		if i < len(commandList) {
			name = commandList[i].name
		}
		ch <- prometheus.MustNewConstMetric(descCommands, prometheus.CounterValue, float64(t[i].calls), name)
		ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(t[i].errs), name)
		buckets := make(map[float64]uint64, len(latencyBounds))
		var cum uint64
		for j, b := range latencyBounds {
			cum += uint64(t[i].buckets[j])
			buckets[b.Seconds()] = cum
		}
		ch <- prometheus.MustNewConstHistogram(descLatency, uint64(t[i].calls), t[i].sum.Seconds(), buckets, name)
	}
}

func (m *metrics) handler(s *Server) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", basicAuth(s.cfg.MetricsPassword, promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})))
	// /livez: the process answers and its event loops and background
	// work go round. For a liveness probe: it stays 200 while writes are
	// refused (MISCONF), which a restart would not cure.
	mux.HandleFunc("/livez", func(w http.ResponseWriter, r *http.Request) {
		if msg := s.liveProblem(); msg != "" {
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("ok\n"))
	})
	// /readyz: the data is loaded, writes are accepted and (on a replica)
	// the link to the primary is up. For a readiness probe or a load
	// balancer.
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if msg := s.readyProblem(); msg != "" {
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("ok\n"))
	})
	// /healthz keeps its meaning: 503 while shutting down or while writes
	// are refused (MISCONF). It is /readyz without the replica check; do
	// not use it as a liveness probe (a full disk would restart the
	// process in a loop).
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if s.closed.Load() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		if s.loadingNow() {
			http.Error(w, "loading", http.StatusServiceUnavailable)
			return
		}
		if msg := s.misconf(); msg != "" {
			// Reads are served, writes refused: not healthy.
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("ok\n"))
	})
	return mux
}

var (
	descKeys      = prometheus.NewDesc("bloomkit_keys", "Keys in the keyspace.", nil, nil)
	descMemory    = prometheus.NewDesc("bloomkit_memory_used_bytes", "Bytes used by keys and filters.", nil, nil)
	descMaxMemory = prometheus.NewDesc("bloomkit_memory_limit_bytes", "Effective memory limit (maxmemory).", nil, nil)
	descClients   = prometheus.NewDesc("bloomkit_connected_clients", "Open client connections.", nil, nil)
	descExpired   = prometheus.NewDesc("bloomkit_expired_keys_total", "Keys removed by expiry.", nil, nil)
	descAOF       = prometheus.NewDesc("bloomkit_aof_size_bytes", "Size of the append-only log.", nil, nil)
	descLastSave  = prometheus.NewDesc("bloomkit_last_save_timestamp_seconds", "Unix time of the last snapshot.", nil, nil)
	descTLSFailed = prometheus.NewDesc("bloomkit_tls_handshake_failures_total", "TLS handshakes that failed: a client certificate refused or expired, plain text on the TLS port, no common protocol or cipher, a timeout.", nil, nil)
	descFill      = prometheus.NewDesc("bloomkit_filter_fill_ratio", "Fraction of bits (Bloom) or slots (cuckoo) in use.", []string{"key", "type"}, nil)
	descRate      = prometheus.NewDesc("bloomkit_filter_estimated_fpr", "False-positive rate implied by the filter's current fill.", []string{"key", "type"}, nil)
	descItems     = prometheus.NewDesc("bloomkit_filter_items", "Items counted by the filter (BF.CARD / CF items inserted).", []string{"key", "type"}, nil)
	descBytes     = prometheus.NewDesc("bloomkit_filter_size_bytes", "The filter's size as BF.INFO/CF.INFO report it.", []string{"key", "type"}, nil)
)

// stateCollector reads the keyspace at scrape time.
type stateCollector struct{ s *Server }

// Describe implements prometheus.Collector.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descKeys, descMemory, descMaxMemory, descClients, descExpired, descAOF, descLastSave, descTLSFailed, descFill, descRate, descItems, descBytes} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. The keyspace lock is held only
// for O(1) reads; the per-filter series come from filterStats.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	ch <- prometheus.MustNewConstMetric(descClients, prometheus.GaugeValue, float64(s.clients.Load()))
	ch <- prometheus.MustNewConstMetric(descAOF, prometheus.GaugeValue, float64(s.aofSize()))
	ch <- prometheus.MustNewConstMetric(descLastSave, prometheus.GaugeValue, float64(s.persist.lastSave.Load()))
	ch <- prometheus.MustNewConstMetric(descTLSFailed, prometheus.CounterValue, float64(s.tlsRefused.Load()))
	s.db.Lock()
	ch <- prometheus.MustNewConstMetric(descKeys, prometheus.GaugeValue, float64(s.db.Len()))
	ch <- prometheus.MustNewConstMetric(descMemory, prometheus.GaugeValue, float64(s.db.Used()))
	ch <- prometheus.MustNewConstMetric(descMaxMemory, prometheus.GaugeValue, float64(s.db.Limit()))
	ch <- prometheus.MustNewConstMetric(descExpired, prometheus.CounterValue, float64(s.db.Expired()))
	s.db.Unlock()
	rows := s.filterStats.get(s)
	seen := make(map[string]bool, len(rows))
	for _, r := range rows {
		key := labelValue(r.key)
		if seen[key] {
			// Two names that escape alike (a key spelled like another's
			// escape): one series, not a scrape error.
			continue
		}
		seen[key] = true
		ch <- prometheus.MustNewConstMetric(descFill, prometheus.GaugeValue, r.fill, key, r.typ)
		ch <- prometheus.MustNewConstMetric(descRate, prometheus.GaugeValue, r.rate, key, r.typ)
		ch <- prometheus.MustNewConstMetric(descItems, prometheus.GaugeValue, r.items, key, r.typ)
		ch <- prometheus.MustNewConstMetric(descBytes, prometheus.GaugeValue, r.bytes, key, r.typ)
	}
}

// labelValue makes a key name a Prometheus label value, which must be
// UTF-8: a name that is not keeps its valid runes and spells every other
// byte as \xNN. A key's name is client input; it must not be able to
// break the scrape (an invalid label fails every metric).
func labelValue(k string) string {
	if utf8.ValidString(k) {
		return k
	}
	var b strings.Builder
	for i := 0; i < len(k); {
		r, n := utf8.DecodeRuneInString(k[i:])
		if r == utf8.RuneError && n <= 1 {
			fmt.Fprintf(&b, `\x%02x`, k[i])
			i++
			continue
		}
		b.WriteString(k[i : i+n])
		i += n
	}
	return b.String()
}

func pid() int { return os.Getpid() }

func splitHostPort(a string) (string, string) {
	h, p, err := net.SplitHostPort(a)
	if err != nil {
		return a, ""
	}
	return h, p
}

// basicAuth guards h with HTTP basic auth when password is set (any user
// name; the password compared in constant time).
func basicAuth(password string, h http.Handler) http.Handler {
	if password == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="bloomkit metrics"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// stallAfter is how long an event loop or the background work may go
// without a round before /livez reports the process stuck.
const stallAfter = 10 * time.Second

// liveProblem says why the process is not alive ("" when it is): shutting
// down, or an event loop or the background goroutine stalled.
func (s *Server) liveProblem() string {
	if s.closed.Load() {
		return "shutting down"
	}
	now := monoNow()
	s.lifeMu.Lock() // Serve sets loops under it
	loops := s.loops
	s.lifeMu.Unlock()
	for i, l := range loops {
		if b := l.lastBeat(); b != 0 && now-b > int64(stallAfter) {
			return fmt.Sprintf("event loop %d has not gone round for %v", i, time.Duration(now-b).Round(time.Second))
		}
	}
	if b := s.bgBeat.Load(); b != 0 && now-b > int64(stallAfter) {
		return fmt.Sprintf("background work has not gone round for %v", time.Duration(now-b).Round(time.Second))
	}
	return ""
}

// readyProblem says why the server should not get traffic ("" when it
// should): shutting down, the data still loading, writes refused, or a
// replica's link down.
func (s *Server) readyProblem() string {
	if s.closed.Load() {
		return "shutting down"
	}
	if s.loadingNow() {
		return "loading"
	}
	if msg := s.misconf(); msg != "" {
		return msg
	}
	if msg := s.replicaLinkProblem(); msg != "" {
		return msg
	}
	return ""
}

// replicaLinkProblem is why a replica is not ready: its link to its
// master is down (it serves stale data, or refuses with MASTERDOWN).
func (s *Server) replicaLinkProblem() string {
	if l := s.currentLink(); l != nil && !l.up() {
		return "replica: link with master " + l.host + ":" + l.port + " is down"
	}
	return ""
}

// Alive reports whether the server is alive as /livez does: nil while it
// serves and its event loops and background work go round. A service
// manager's watchdog is fed only while it is.
func (s *Server) Alive() error {
	if msg := s.liveProblem(); msg != "" {
		return errors.New(msg)
	}
	return nil
}

// The metrics listener's limits: an idle keep-alive connection is closed
// after metricsIdleTimeout (Prometheus reconnects at its next scrape), a
// reply that cannot be written within metricsWriteTimeout is abandoned
// (a scrape of 500k keys takes tens of milliseconds), and at most
// metricsMaxConns connections are open at once.
const (
	metricsIdleTimeout  = 60 * time.Second
	metricsWriteTimeout = 60 * time.Second
	metricsMaxConns     = 64
)

// limitListener accepts at most max connections at a time; one past it is
// closed at once, so that clients opening connections to the metrics port
// cannot take the descriptors the Redis port needs, nor fill the listen
// backlog while they wait.
type limitListener struct {
	net.Listener
	max  int64
	open atomic.Int64
}

// Accept returns the next connection within the limit.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		c.Close()
	}
}

// limitedConn gives its place back when it is closed (once).
type limitedConn struct {
	net.Conn
	l      *limitListener
	closed atomic.Bool
}

// Close closes the connection and frees its place.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	if !c.closed.Swap(true) {
		c.l.open.Add(-1)
	}
	return err
}
