package server

import (
	"log/slog"
	"os"
	"time"

	"github.com/bloomkit/bloomkit/internal/memlimit"
	"github.com/bloomkit/bloomkit/server/internal/aof"
	"github.com/bloomkit/bloomkit/server/internal/backlog"
)

// Config: what a Server is started with. The values CONFIG SET changes
// while it runs are in settings.go; the parameter table that the config
// file, CONFIG GET/SET/REWRITE and the docs read is in cmd_config.go.

// Config configures a Server. The zero value of each field means its default.
type Config struct {
	// Addr is the listen address (default DefaultAddr, 127.0.0.1:6479).
	Addr string
	// ExtraAddrs are more addresses to listen on, with Addr's meaning (a
	// config file's "bind a b c"). One written "-host:port" may fail to
	// bind (an address family the machine lacks) with a warning.
	ExtraAddrs []string
	// ProtectedMode is "yes" (the default, "") or "no". In protected mode a
	// server without a password refuses clients that do not connect from
	// the loopback interface, with Redis's DENIED error.
	ProtectedMode string
	// TCPKeepAlive is the period of TCP keepalive probes on client
	// connections (default 300 s, Redis's tcp-keepalive; negative: off).
	TCPKeepAlive time.Duration
	// LatencyMonitorThreshold is LATENCY's threshold in milliseconds
	// (nil or 0: the latency monitor is off).
	LatencyMonitorThreshold *int64
	// LatencyTracking is "yes" (the default, "") or "no": per-command
	// latency histograms for INFO latencystats and LATENCY HISTOGRAM.
	LatencyTracking string
	// LatencyPercentiles are the percentiles INFO latencystats reports
	// (nil: 50, 99 and 99.9; empty: none).
	LatencyPercentiles []float64
	// LogLevel, LogFile, PidFile and Supervised carry a config file's
	// loglevel, logfile, pidfile and supervised directives to the program
	// that builds the logger and runs the process (bloom serve); the
	// Server itself does not read them.
	LogLevel, LogFile, PidFile, Supervised string
	// FilterParams sets RedisBloom 8's module configuration parameters by
	// name (bf-error-rate, bf-initial-size, bf-expansion-factor,
	// cf-bucket-size, cf-initial-size, cf-max-iterations,
	// cf-expansion-factor, cf-max-expansions): the defaults of filters
	// that BF.ADD and CF.ADD create. Unset ones have RedisBloom's defaults;
	// a bad name or value makes New fail.
	FilterParams map[string]string
	// IgnoredDirectives lists the config file's directives that have no
	// effect here, each with the reason; New logs them as one warning.
	IgnoredDirectives []string
	// Dir holds the snapshot and the append-only log (default ./bloomkit-data).
	// Empty string with NoPersistence disables persistence.
	Dir string
	// NoPersistence keeps everything in memory only.
	NoPersistence bool
	// LoadWhileServing makes New only check and lock the data directory
	// and leaves loading it to Serve, which accepts clients at once, as
	// redis-server does: until the snapshot and logs are in memory,
	// commands Redis refuses while loading are answered -LOADING, INFO
	// reports loading:1 and its progress, /readyz answers 503, and Loaded
	// is not yet closed. A load that fails ends Serve with the error New
	// would have returned; Close or Shutdown during the load stop it and
	// save nothing. Without it New loads the data before it returns.
	LoadWhileServing bool
	// EnableDebugCommand is Redis's enable-debug-command: "yes", "local"
	// (clients on the loopback interface or a Unix socket) or "no" (the
	// default, ""): who may run DEBUG.
	EnableDebugCommand string
	// NoAppendLog is Redis's "appendonly no": writes are not logged, but
	// snapshots are still written (SAVE, BGSAVE, shutdown, and the save
	// points: after 3600 s with 1 change, 300 s with 100, 60 s with 10,000,
	// Redis's defaults) and loaded at start-up. Writes after the last
	// snapshot are lost in a crash, as with Redis.
	NoAppendLog bool
	// AppendFsync is "always", "everysec" (default) or "no".
	AppendFsync string
	// RequirePass, when set, makes clients AUTH before other commands: it
	// is the default user's password (Redis's requirepass).
	RequirePass string
	// ACLFile is the file ACL users are loaded from at start and by ACL
	// LOAD, and written to by ACL SAVE (Redis's aclfile).
	ACLFile string
	// Users are a config file's user directives (not with ACLFile).
	Users []UserRule
	// ACLLogMaxLen bounds the ACL log (nil: 128, Redis's acllog-max-len).
	ACLLogMaxLen *int64
	// SavePoints are Redis's save points, (seconds, changes) pairs: with
	// appendonly no, a snapshot is written once that many changes are that
	// old (nil: Redis's defaults, 3600 1 300 100 60 10000; empty: none).
	SavePoints *[][2]int64
	// RenameCommands are a config file's rename-command directives: a
	// command's name (lower case) to the name clients must use instead,
	// or "" for none (the command is off), as Redis's.
	RenameCommands map[string]string
	// UnixSocket, when set, is a Unix socket path served beside the TCP
	// listeners (Redis's unixsocket); UnixSocketPerm its permissions
	// (0: as the umask leaves them; Redis's unixsocketperm, octal).
	UnixSocket     string
	UnixSocketPerm os.FileMode
	// ACLPubsubDefault is the channels a new ACL user starts with, and
	// "reset" gives: "resetchannels" (none; "" means it too, Redis 7's
	// default) or "allchannels" (Redis's acl-pubsub-default).
	ACLPubsubDefault string
	// TLSAddr, when set, serves TLS there (Redis's tls-port), beside the
	// plain-text listener on Addr; with Addr empty, TLS only (Redis's
	// port 0). TLSExtraAddrs are more TLS addresses (bind's other
	// addresses, "-" before one: it may be missing).
	TLSAddr       string
	TLSExtraAddrs []string
	// TLSCert and TLSKey are the server's certificate (chain) and key,
	// PEM (Redis's tls-cert-file and tls-key-file). As in Redis they are
	// read only when there is a TLS listener or tls-replication is yes:
	// they do not make Addr serve TLS.
	TLSCert, TLSKey string
	// TLSParams are Redis's other tls-* settings by name (TLSSettingNames:
	// tls-auth-clients, yes by default, with tls-ca-cert-file or
	// tls-ca-cert-dir; tls-protocols, tls-ciphers, tls-replication, ...).
	// A bad name or value makes New fail; files are read by Listen.
	TLSParams map[string]string
	// MaxMemory caps the bytes of filters and keys (0: 90% of the memory the
	// process may use — its cgroup's limit in a container, else the
	// machine's — so that one huge BF.RESERVE is refused instead of getting
	// the process OOM-killed).
	MaxMemory uint64
	// MetricsAddr, when set, serves Prometheus /metrics and /healthz.
	MetricsAddr string
	// MetricsKeys is how many keys get per-filter series on /metrics
	// (fill ratio, estimated false-positive rate, items, size, labelled
	// by key name): at most MaxMetricsKeys, 0 (the default) none. The
	// keys are the first in SCAN order (by a fixed hash of the name), so
	// the same keys are chosen on every scrape and every start. It is
	// bounded and off by default because every key is a set of series in
	// every Prometheus server that scrapes (cardinality), a pass over the
	// filter at each scrape, and a key name, which may hold personal data,
	// copied into the monitoring system.
	MetricsKeys int
	// SlowlogLogSlowerThan is the slow log's threshold in microseconds
	// (nil: 10000; negative: off; 0: every command); SlowlogMaxLen its
	// length (nil: 128).
	SlowlogLogSlowerThan, SlowlogMaxLen *int64
	// ClientOutputBufferLimit is Redis's client-output-buffer-limit:
	// "class hard soft seconds" groups (classes normal, replica or slave,
	// pubsub; sizes with units). Classes not named keep Redis's defaults:
	// none for normal clients, "pubsub 32mb 8mb 60" (a subscriber whose
	// unsent messages pass 32 MiB, or 8 MiB for 60 s, is disconnected).
	ClientOutputBufferLimit string
	// ConfigFile is the file the settings were read from, if any: CONFIG
	// REWRITE writes the settings changed by CONFIG SET back to it.
	ConfigFile string
	// MetricsPassword, when set, makes /metrics require HTTP basic auth
	// with this password (any user name). /healthz stays open for probes.
	MetricsPassword string
	// MaxArgs limits the arguments of one command (default 1,048,576).
	MaxArgs int
	// MaxBulk limits one argument's size in bytes (default 512 MiB, Redis's
	// proto-max-bulk-len).
	MaxBulk int
	// MaxQuery limits one request's total size (default 1 GiB, Redis's
	// client-query-buffer-limit).
	MaxQuery int
	// MaxClients limits open connections (default 10,000); more are
	// answered "ERR max number of clients reached" and closed.
	MaxClients int
	// Timeout closes a connection idle for this long (0: never, as Redis's
	// timeout 0).
	Timeout time.Duration
	// WriteTimeout disconnects a client whose replies make no progress for
	// this long (default 60 s): a client that does not read.
	WriteTimeout time.Duration
	// HandshakeTimeout bounds a TLS handshake (default 10 s).
	HandshakeTimeout time.Duration
	// EventLoops is the number of epoll loops serving plain TCP clients on
	// Linux (default: half the CPUs, at least one).
	EventLoops int
	// goroutinePerConn serves every client with a goroutine instead of
	// the event loops (tests run both paths).
	goroutinePerConn bool
	// AutoSaveLogBytes makes the server write a snapshot (and so restart the
	// log) in the background once the append-only log is larger than this
	// and larger than the last snapshot (default 64 MiB; negative: never).
	AutoSaveLogBytes int64
	// Logger receives structured logs (default: slog.Default()).
	Logger *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time

	// ReplicaOf is "host port": the server starts as that master's
	// replica (Redis's replicaof directive and --replicaof).
	ReplicaOf string
	// MasterAuth and MasterUser authenticate this replica to its master.
	MasterAuth, MasterUser string
	// ReplicaReadOnly ("yes", the default, or "no") refuses clients'
	// writes on a replica with READONLY.
	ReplicaReadOnly string
	// ReplicaServeStaleData ("yes", the default, or "no"): with no, a
	// replica whose link is down answers MASTERDOWN.
	ReplicaServeStaleData string
	// ReplicaIgnoreUnsupported ("no", the default, or "yes"): with yes, a
	// Redis master's keys this server cannot hold (hashes, lists, …) are
	// skipped by a full sync instead of stopping it.
	ReplicaIgnoreUnsupported string
	// ReplBacklogSize is the replication backlog (default 1 MiB).
	ReplBacklogSize int64
	// MinReplicasToWrite and MinReplicasMaxLag (seconds, default 10):
	// writes are refused with NOREPLICAS unless that many replicas
	// acknowledged within the lag (0: no check).
	MinReplicasToWrite int
	MinReplicasMaxLag  *int
	// ReplicaPriority is reported to Sentinel (default 100; 0: never promoted).
	ReplicaPriority *int
	// ReplicaAnnounced ("yes", the default, or "no"), ReplicaAnnounceIP
	// and ReplicaAnnouncePort: what this replica tells its master and
	// Sentinel about itself.
	ReplicaAnnounced    string
	ReplicaAnnounceIP   string
	ReplicaAnnouncePort int
	// ReplTimeout is repl-timeout (default 60 s).
	ReplTimeout time.Duration
	// ReplPingReplicaPeriod is how often, in seconds, a master pings its
	// replicas (repl-ping-replica-period; default 10).
	ReplPingReplicaPeriod int
	// replicaOutLimit replaces client-output-buffer-limit replica
	// (default 256 MiB hard, 64 MiB for 60 s soft).
	replicaOutLimit *backlog.Limits

	// dataDir replaces the data directory (fault-injection tests).
	dataDir aof.Dir
	// maxRecord bounds one append-only log record's payload (default
	// aof.MaxRecord; tests make it small instead of allocating gigabytes).
	maxRecord int64
	// memSystem is where the default maxmemory is read (tests give a fake
	// cgroup file tree).
	memSystem memlimit.System
	// retryMin is the first pause before retrying a failed rewrite after
	// the log failed (default 1 s; it doubles up to a minute).
	retryMin time.Duration
	// metricsIdle closes the metrics listener's idle keep-alive
	// connections (default metricsIdleTimeout; tests make it short).
	metricsIdle time.Duration
	// replRetryMin is the first pause before a replica tries again a
	// master that is not bloom serve (default 1 s; it doubles up to a
	// minute).
	replRetryMin time.Duration
}

func (c *Config) defaults() {
	if c.Addr == "" && c.TLSAddr == "" && c.UnixSocket == "" {
		c.Addr = DefaultAddr
	}
	if c.Dir == "" && !c.NoPersistence {
		c.Dir = "bloomkit-data"
	}
	if c.AppendFsync == "" {
		c.AppendFsync = "everysec"
	}
	if c.MaxArgs <= 0 {
		c.MaxArgs = 1 << 20
	}
	if c.MaxBulk <= 0 {
		c.MaxBulk = 512 << 20
	}
	if c.MaxQuery <= 0 {
		c.MaxQuery = 1 << 30
	}
	c.MaxQuery = max(c.MaxQuery, min(c.MaxBulk+(64<<10), 1<<40))
	if c.MaxClients == 0 {
		c.MaxClients = 10000
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 60 * time.Second
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.TCPKeepAlive == 0 {
		c.TCPKeepAlive = 300 * time.Second
	}
	if c.AutoSaveLogBytes == 0 {
		c.AutoSaveLogBytes = 64 << 20
	}
	if c.maxRecord <= 0 || c.maxRecord > aof.MaxRecord {
		c.maxRecord = aof.MaxRecord
	}
	if c.retryMin <= 0 {
		c.retryMin = time.Second
	}
	if c.replRetryMin <= 0 {
		c.replRetryMin = time.Second
	}
}
