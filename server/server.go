// Package server is bloomkit's network server: it speaks the Redis protocol
// (RESP2, and RESP3 after HELLO 3) and answers RedisBloom's BF.* and CF.*
// commands exactly as RedisBloom does, plus the generic commands Redis
// clients and operators need. Filters live in a keyspace with expiry;
// writes go to an append-only log and to snapshots so that no acknowledged
// write is lost.
//
// A Server is created with New, started with Serve or ListenAndServe and
// stopped with Shutdown (which saves a snapshot) or Close.
//
// The files, in the order a request meets them:
//
//	loop_linux.go, conn.go         the connection: event loops (a goroutine per
//	                               client elsewhere and for TLS), limits, pipelining
//	internal/resp/reader.go        the one request reader, with every limit
//	prefetch.go                    a pipeline's filter bytes read ahead
//	server.go                      dispatch (Server.Do), locking, transactions
//	apply.go                       the one apply path: every source of a
//	                               command (client, EXEC, log replay, a
//	                               master's stream) runs it through apply
//	commands.go                    the command table, its flags, its key
//	                               positions and the access each key needs
//	cmd_*.go                       the handlers
//	internal/keyspace/keyspace.go  entries, expiry, memory accounting
//	internal/keyspace/snapshot.go  a running snapshot's images (copy-on-write)
//	internal/aof/log.go            the log record, group commit, appendfsync
//	reply.go                       the reply, encoded by internal/resp/reply.go;
//	                               it leaves once the log holds what it depends
//	                               on (endBatch, aof.Log.Commit)
//
// persist.go is the glue of durability: start-up loads the newest snapshot
// and replays the logs through apply, and a rewrite fixes its
// point in time; internal/aof owns the files and the policy.
// docs/server-internals.md traces one BF.ADD and one BGSAVE through them.
package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/internal/confval"
	"github.com/bloomkit/bloomkit/internal/memlimit"
	"github.com/bloomkit/bloomkit/server/internal/acl"
	"github.com/bloomkit/bloomkit/server/internal/aof"
	"github.com/bloomkit/bloomkit/server/internal/backlog"
	"github.com/bloomkit/bloomkit/server/internal/keyspace"
)

// DefaultAddr is where a Server listens unless Config.Addr (or a config
// file's bind and port) says otherwise, and where clients of the bloom
// command look for one.
const DefaultAddr = defaultHost + ":" + defaultPort

const (
	defaultHost = "127.0.0.1"
	defaultPort = "6479"
)

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
	// replRetryMin is the first pause before a replica tries again a
	// master that is not bloom serve (default 1 s; it doubles up to a
	// minute).
	replRetryMin time.Duration
}

func (c *Config) defaults() {
	if c.Addr == "" && c.TLSAddr == "" {
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

// Session is one client connection's state.
type Session struct {
	ID        int64
	Name      string
	LibName   string
	LibVer    string
	Addr      string
	LocalAddr string

	hmu     sync.Mutex              // conn and kill: set after the session is listed
	conn    net.Conn                // the goroutine path's connection
	kill    func()                  // the event loop's way to notice closing
	closing atomic.Bool             // CLIENT KILL: close after the current command
	lastCmd atomic.Int64            // unix ms of the last command (CLIENT LIST idle)
	curCmd  atomic.Pointer[command] // the last command (CLIENT LIST cmd)

	resp3  bool
	authed bool
	// user is the ACL user the connection runs as (nil: anything may run,
	// the log's replay); other sessions read it (CLIENT LIST, DELUSER).
	user    atomic.Pointer[acl.User]
	quit    bool
	created time.Time
	// noEvict is CLIENT NO-EVICT (reported; there is no client eviction).
	noEvict bool
	// replyOff is CLIENT REPLY OFF; skipReplies counts the replies still to
	// be dropped for CLIENT REPLY SKIP (its own and the next command's).
	replyOff    bool
	skipReplies int

	// set by handlers for the append-only log: skip it, log logArgs in
	// place of the command, log logBefore ahead of it in the same record
	skipLog   bool
	logArgs   [][]byte
	logBefore [][]byte
	// pendingSync is the log position this connection's replies wait for:
	// everything its commands could have observed. pendingWrite is set when
	// they include a write of its own.
	pendingSync  int64
	pendingWrite bool
	// batched counts the replies in out.
	batched int
	// clock is the monoNow reading the next command starts from (0: read
	// the clock): the end of the previous command of the same pipeline,
	// or the moment its bytes were read.
	clock int64
	// lastIdle is the monoNow of the last lastCmd update (second
	// resolution is enough). lastName and lastLookup are the previous
	// command's name as sent and what it resolved to: a pipeline usually
	// repeats one command.
	lastIdle   int64
	lastName   []byte
	lastLookup *command
	reply      Reply
	// multi holds the commands queued after MULTI (its first element is a
	// marker, so an empty transaction is non-nil); multiErr aborts EXEC.
	multi    []queued
	multiErr bool
	// txnLen mirrors len(multi) (0: not in MULTI) for CLIENT LIST,
	// which other sessions run.
	txnLen atomic.Int64
	// multiBytes is the memory the queue holds (counted in the server's
	// queuedBytes); multiLog the size of the log record its writes make.
	multiBytes, multiLog int64
	// inExec is set while EXEC runs this session's queue with the
	// keyspace lock held: an unlocked command queued there must not take
	// the lock again (see lockDB).
	inExec bool
	// canWait is set for network clients: a long BF.MERGE may then hold
	// their replies (wait, closed when it is done) instead of the lock.
	canWait bool
	wait    <-chan struct{}

	// sub is the pub/sub state (nil until the first subscription; see
	// pubsub.go); notify wakes the connection's owner to send what
	// PUBLISH queued for it (nil: no network connection).
	sub    *subscriber
	notify atomic.Pointer[func()]
	// nsub and npsub count its channels and patterns for other sessions
	// (CLIENT LIST sub= and psub=, CLIENT KILL TYPE pubsub).
	nsub, npsub atomic.Int64
	// replRole is what the connection is to replication: a replica's
	// link on its master (roleReplica: CLIENT LIST flag S, type replica)
	// or the master's link on a replica (roleMaster: flag M, type master).
	replRole atomic.Int32
	// deferred is a reply computed while the connection held its
	// replies (wait): WAIT's answer, appended when wait is closed.
	deferred []byte

	// Replication: a replica's handshake (REPLCONF), the SYNC or PSYNC
	// that hands the connection over (handoff), the stream offset after
	// this client's last write (WAIT), and whether this is the session
	// applying a master's stream.
	replPort   int
	replIP     string
	rdbOnly    bool
	handoff    *replHandoff
	woff       int64
	fromMaster bool
	// replListening is set by REPLCONF listening-port (a replica, not a
	// tool such as redis-cli --rdb); replBloomkit by REPLCONF
	// bloomkit-run-id (a replica that is bloom serve and loads its
	// payload).
	replListening, replBloomkit bool
}

// Replication roles of a connection (Session.replRole).
const (
	roleNone int32 = iota
	roleReplica
	roleMaster
)

// clientType is the connection's class for CLIENT KILL TYPE and CLIENT
// LIST TYPE, as Redis classifies it: master, slave (a replica), pubsub
// (subscribed to something), or normal.
func (c *Session) clientType() string {
	switch c.replRole.Load() {
	case roleMaster:
		return "master"
	case roleReplica:
		return "slave"
	}
	if c.nsub.Load()+c.npsub.Load() > 0 {
		return "pubsub"
	}
	return "normal"
}

// Server is a bloomkit server. Its methods are safe for concurrent use.
type Server struct {
	cfg     Config
	log     *slog.Logger
	db      *keyspace.DB
	dir     aof.Dir
	dirLock *DirLock // the data directory's lock, held until finish
	aof     *aof.Log
	persist persistState
	metrics *metrics
	// set holds the settings CONFIG SET changes; stats and slowlog feed
	// INFO and SLOWLOG.
	set     settings
	stats   *serverStats
	slowlog slowlog
	// configFile is the file CONFIG REWRITE writes ("" when the server was
	// not started with one).
	configFile string
	runID      string // INFO run_id: random, new each start
	// cfgMu serializes CONFIG SET and CONFIG REWRITE.
	cfgMu sync.Mutex
	// cfgSet holds the values CONFIG SET was given since the start, as
	// written (CONFIG REWRITE keeps the user's units); under cfgMu.
	cfgSet map[string]string
	// filterStats caches the per-filter metric series.
	filterStats filterStats
	// doubt is the keys whose last writes were not durable when the log failed.
	doubt doubtSet
	// queuedBytes is the memory of every client's MULTI queue: it counts
	// against maxmemory when more is queued, as Redis counts client
	// buffers in used_memory.
	queuedBytes atomic.Int64
	// users are the ACL users; acllog the refusals and failed logins.
	users  *acl.Users
	acllog acl.Log
	// aclCounts are INFO's acl_access_denied_* counters (by acl.Reason);
	// aclLogged is the second of the last ACL server-log line and
	// aclSuppressed the lines left out since (one a second at most).
	aclCounts     aclStats
	aclLogged     atomic.Int64
	aclSuppressed atomic.Int64
	// aclChanged is set once ACL SETUSER or DELUSER ran: CONFIG REWRITE
	// then writes the users to the config file (without an aclfile).
	aclChanged atomic.Bool
	// pubsub holds the channel and pattern subscriptions.
	pubsub pubsubHub
	// slowSubscribers counts subscribers disconnected past their output
	// limit (INFO client_output_buffer_limit_disconnections).
	slowSubscribers atomic.Int64
	// txn collects the writes of the MULTI/EXEC block being executed, to
	// be logged as one record (db.mu held).
	txn [][][]byte
	// repl is replication: roles, the stream and its backlog, replicas.
	repl replState

	started       time.Time
	nextID        atomic.Int64
	clients       atomic.Int64
	totalConns    atomic.Int64
	totalCmds     atomic.Int64
	rejectedConns atomic.Int64
	protoErrors   atomic.Int64
	slowClients   atomic.Int64
	// tlsRefused counts TLS handshakes that failed: a client certificate
	// refused or expired, a plain-text client on the TLS port, a protocol
	// or cipher mismatch, a handshake timeout.
	tlsRefused atomic.Int64
	// net counts the bytes of clients served by a goroutine (TLS, and
	// systems without the event loops); each loop counts its own.
	net, netBase netCounters // netBase: the totals at CONFIG RESETSTAT
	// rates samples what INFO's instantaneous_* fields average; peak
	// is used_memory_peak; snapStall the last snapshot's start pause.
	rates     rateMeter
	peakMem   atomic.Uint64
	snapStall snapStall
	// latency is the latency monitor (LATENCY); track the percentiles
	// INFO latencystats reports.
	latency latencyMonitor
	track   latencyTracking

	connWG sync.WaitGroup
	lifeMu sync.Mutex // closed, and adding to connWG
	loops  []*eventLoop

	smu      sync.Mutex
	sessions map[int64]*Session

	// lnMu guards the listeners: plain text on Addr and ExtraAddrs, TLS
	// on TLSAddr and TLSExtraAddrs; CONFIG SET port and tls-port replace
	// them while the server runs. addr and tlsAddr are the first of each
	// ("" for none, unset before Listen).
	lnMu      sync.Mutex
	plainLns  []net.Listener
	tlsLns    []net.Listener
	bindHosts []string // the hosts both listen on ("-" before one: optional)
	serving   bool     // Serve started the accept loops
	acceptWG  sync.WaitGroup
	acceptErr chan error // an accept loop's failure, which ends Serve
	addr      atomic.Value
	tlsAddr   atomic.Value
	// tlsParams are the tls-* settings in force (CONFIG SET changes them);
	// tlsConf what was last built from them (nil: TLS not in use).
	tlsParams atomic.Pointer[tlsParams]
	tlsConf   atomic.Pointer[tlsConfigs]
	httpSrv   *http.Server
	httpLn    net.Listener
	stop      chan struct{}
	stopOnce  sync.Once
	// shutdownReq is closed by the SHUTDOWN command.
	shutdownReq  chan struct{}
	shutdownOnce sync.Once
	finishOnce   sync.Once
	bgWG         sync.WaitGroup
	closed       atomic.Bool
	bgBeat       atomic.Int64 // monoNow at the background goroutine's last tick (/livez)
}

// New creates a server: it loads the snapshot and replays the append-only
// log from cfg.Dir. A corrupt snapshot or log is an error naming the file;
// a torn final log record is cut off with a warning.
func New(cfg Config) (*Server, error) {
	cfg.defaults()
	switch cfg.AppendFsync {
	case "always", "everysec", "no":
	default:
		return nil, fmt.Errorf("server: appendfsync must be always, everysec or no, not %q", cfg.AppendFsync)
	}
	switch strings.ToLower(cfg.ProtectedMode) {
	case "", "yes", "no":
	default:
		return nil, fmt.Errorf("server: protected-mode must be yes or no, not %q", cfg.ProtectedMode)
	}
	filter, err := newFilterConfig(cfg.FilterParams)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if err := checkLatencyConfig(&cfg); err != nil {
		return nil, err
	}
	if cfg.MetricsKeys < 0 || cfg.MetricsKeys > MaxMetricsKeys {
		return nil, fmt.Errorf("server: metrics-keys must be from 0 to %d, not %d", MaxMetricsKeys, cfg.MetricsKeys)
	}
	if len(cfg.IgnoredDirectives) > 0 {
		cfg.Logger.Warn("config file directives ignored: "+strings.Join(cfg.IgnoredDirectives, "; "), "file", cfg.ConfigFile)
	}
	limit := cfg.MaxMemory
	if limit == 0 {
		var source string
		limit, source = defaultMemoryLimit(cfg.memSystem)
		if limit != 0 {
			cfg.Logger.Info("maxmemory is 90% of the memory this process may use", "maxmemory", confval.FormatSize(limit), "bytes", limit, "from", source)
		} else {
			cfg.Logger.Warn("maxmemory is unlimited: neither the cgroup's limit nor /proc/meminfo could be read")
		}
	}
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger,
		db:       keyspace.New(limit, cfg.Now),
		metrics:  newMetrics(),
		stats:    newServerStats(),
		started:  time.Now(),
		sessions: map[int64]*Session{},
		stop:     make(chan struct{}),

		shutdownReq: make(chan struct{}),
		acceptErr:   make(chan error, 1),
	}
	if cfg.ClientOutputBufferLimit != "" {
		if _, err := parseOutputLimits(cfg.ClientOutputBufferLimit, defaultOutputLimits); err != nil {
			return nil, fmt.Errorf("server: client-output-buffer-limit: %w", err)
		}
	}
	s.set.init(&cfg, filter)
	s.set.limit.Store(limit)
	s.initReplication(&cfg)
	s.db.OnExpire = func(key string) { s.logCommand(nil, [][]byte{[]byte("DEL"), []byte(key)}) }
	s.initLatency(&cfg)
	s.slowlog.maxLen = int(s.set.slowMaxLen.Load())
	s.configFile = cfg.ConfigFile
	s.runID = newRunID()
	if err := s.initUsers(&cfg); err != nil {
		return nil, err
	}
	if err := s.initTLS(&cfg); err != nil {
		return nil, err
	}
	s.metrics.register(s)
	s.persist.lastSave.Store(time.Now().Unix())
	s.persist.lastOK.Store(true)
	if !cfg.NoPersistence {
		if err := s.load(); err != nil {
			s.dirLock.Unlock()
			return nil, err
		}
		s.db.Reindex() // the snapshot was loaded into the map directly
	}
	return s, nil
}

// defaultMemoryLimit is 90% of the memory the process may hold: the
// cgroup's limit in a container, else the machine's MemTotal (0 when
// neither can be read), and where that figure comes from.
func defaultMemoryLimit(sys memlimit.System) (uint64, string) {
	limit, source, ok := sys.Limit()
	if !ok {
		return 0, ""
	}
	return limit / 10 * 9, source
}

// MetricsAddr is the metrics listener's address, if any.
func (s *Server) MetricsAddr() string {
	if s.httpLn != nil {
		return s.httpLn.Addr().String()
	}
	return ""
}

// Serve serves clients until Close or Shutdown; Listen must have been called
// (ListenAndServe does both).
func (s *Server) Serve() error {
	if !s.listening() {
		return errors.New("server: Serve before Listen")
	}
	if s.httpSrv != nil {
		go func() {
			if err := s.httpSrv.Serve(s.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("metrics server", "err", err)
			}
		}()
	}
	// Under lifeMu and only if not closed: Close may run concurrently, and
	// its finish waits for bgWG, which must not grow from zero meanwhile.
	s.lifeMu.Lock()
	if s.closed.Load() {
		s.lifeMu.Unlock()
		return nil
	}
	s.bgWG.Add(1)
	s.lifeMu.Unlock()
	go s.background()
	go func() {
		select {
		case <-s.shutdownReq:
			s.Close()
		case <-s.stop:
		}
	}()
	s.log.Info("serving", "addr", strings.Join(s.ListenAddrs(), " "), "tls", s.TLSAddr(), "dir", s.cfg.Dir, "appendfsync", s.appendFsync(),
		"auth", s.authRequired(), "maxmemory", s.db.Limit(), "metrics", s.MetricsAddr())
	s.lifeMu.Lock()
	if s.closed.Load() {
		s.lifeMu.Unlock()
		return nil
	}
	if err := s.startLoops(); err != nil {
		s.log.Warn("event loops unavailable; serving each client with a goroutine", "err", err)
	}
	s.lifeMu.Unlock()
	s.startReplication()
	// One accept loop per listener (CONFIG SET port or tls-port replaces
	// them); the first that fails ends serving.
	s.startAccepting()
	var err error
	select {
	case <-s.stop:
	case err = <-s.acceptErr:
	}
	s.lnMu.Lock()
	for _, l := range s.allListeners() {
		l.Close()
	}
	s.lnMu.Unlock()
	s.acceptWG.Wait()
	return err
}

// ListenAndServe listens on cfg.Addr and serves.
func (s *Server) ListenAndServe() error {
	if err := s.Listen(); err != nil {
		return err
	}
	return s.Serve()
}

// Shutdown stops accepting clients, writes a snapshot and closes the log.
// If the snapshot fails the log still holds every write; the error is
// returned.
func (s *Server) Shutdown() error {
	s.closeListeners()
	var err error
	if !s.cfg.NoPersistence {
		if err = s.Save(); err != nil {
			s.log.Error("save on shutdown failed; the append-only log still holds every write", "err", err)
		}
	}
	s.finish()
	return err
}

// Close stops the server without a snapshot (the log is written and fsynced).
func (s *Server) Close() error {
	s.closeListeners()
	s.finish()
	return nil
}

func (s *Server) closeListeners() {
	// Under lifeMu, so that no goroutine is added to connWG once closed
	// is set (finish waits for connWG).
	s.lifeMu.Lock()
	s.closed.Store(true)
	s.lifeMu.Unlock()
	s.stopOnce.Do(func() { close(s.stop) })
	s.lnMu.Lock()
	for _, l := range s.allListeners() {
		l.Close()
	}
	s.lnMu.Unlock()
	for _, c := range s.sessionList() {
		c.disconnect()
	}
	s.stopReplication()
	for _, l := range s.loops {
		l.stop()
	}
	if s.httpSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		s.httpSrv.Shutdown(ctx)
		cancel()
	}
}

func (s *Server) finish() {
	s.finishOnce.Do(s.finish0)
}

func (s *Server) finish0() {
	s.connWG.Wait()
	s.bgWG.Wait()
	s.persist.saveMu.Lock() // let a running rewrite finish
	defer s.persist.saveMu.Unlock()
	if s.aof != nil {
		if err := s.aof.Close(); err != nil {
			s.log.Error("closing append-only log", "err", err)
		} else {
			s.saveReplMark()
		}
	}
	s.dirLock.Unlock() // last: nothing more is written to the directory
}

// background runs active expiry, the everysec fsync, automatic snapshots,
// the retries of a failed log, and memory recounts.
func (s *Server) background() {
	defer s.bgWG.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	ticks := 0
	var retryAt time.Time
	retryWait := s.cfg.retryMin
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.bgBeat.Store(monoNow())
		}
		ticks++
		s.sampleRates()
		s.expireCycle()
		// Memory recount: a pass at most every 10 s, in steps of about
		// a millisecond of lock per tick.
		s.db.Lock()
		if s.db.Recounting() || ticks%100 == 0 {
			s.db.RecountStep(time.Millisecond)
		}
		s.db.Unlock()
		if s.aof == nil {
			continue
		}
		if ticks%10 == 0 {
			// The policy's once-a-second work (everysec: fsync).
			if err := s.aof.Tick(); err != nil {
				s.log.Error("append-only log failed; refusing writes (MISCONF) until a snapshot succeeds", "err", err)
			}
		}
		if s.aof.Failure() != nil {
			// The log cannot be trusted again: a snapshot must replace it.
			if now := time.Now(); now.After(retryAt) && !s.persist.saving.Load() {
				retryAt = now.Add(retryWait)
				retryWait = min(2*retryWait, time.Minute)
				s.startRewrite("append-only log failed")
			}
			continue
		}
		retryWait = s.cfg.retryMin
		if s.cfg.NoAppendLog && ticks%10 == 0 && !s.persist.saving.Load() && s.savePointDue() {
			s.log.Info("save point reached; writing a snapshot")
			s.startRewrite("save point")
		}
		if s.cfg.AutoSaveLogBytes > 0 && !s.persist.saving.Load() {
			size := s.aofSize()
			if size > s.cfg.AutoSaveLogBytes && size > s.persist.lastSnapSize.Load() {
				s.log.Info("append-only log is large; writing a snapshot", "log_bytes", size)
				s.startRewrite("log size")
			}
		}
	}
}

// savePoints are Redis's default save points (seconds, changes): with the
// log off, a snapshot is written once that many changes are that old.
var savePoints = [][2]int64{{3600, 1}, {300, 100}, {60, 10000}}

// savePointDue reports whether a save point is reached.
func (s *Server) savePointDue() bool {
	s.db.Lock()
	changes := int64(s.db.Dirty() - s.persist.dirtyAtSave.Load())
	s.db.Unlock()
	age := time.Now().Unix() - s.persist.lastSave.Load()
	for _, p := range savePoints {
		if age >= p[0] && changes >= p[1] {
			return true
		}
	}
	return false
}

// expireCycle removes expired keys, sampling like Redis's active expiry,
// for at most 1 ms with the keyspace locked at a time and 25 ms a cycle.
func (s *Server) expireCycle() {
	began := time.Now()
	defer func() { s.latency.add("expire-cycle", time.Since(began)) }()
	deadline := began.Add(25 * time.Millisecond)
	for time.Now().Before(deadline) {
		s.db.Lock()
		stop := time.Now().Add(time.Millisecond)
		n := 0
		for time.Now().Before(stop) {
			got := s.db.ExpireSome(20)
			n += got
			if got < 20 {
				break
			}
		}
		more := n > 0 && time.Now().After(stop)
		s.db.Unlock()
		if !more {
			return
		}
	}
}

func (s *Server) sessionList() []*Session {
	s.smu.Lock()
	defer s.smu.Unlock()
	out := make([]*Session, 0, len(s.sessions))
	for _, c := range s.sessions {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// endBatch runs before a connection's replies are sent: everything they
// could have observed is written to the log first and, with appendfsync
// always, fsynced (a reader waits for the commit point of the writes it
// saw, as their writer does). It fails when the log failed first: then
// nothing in the batch may be told (commands that ran after the failure
// became visible do not wait, see run).
func (s *Server) endBatch(c *Session) error {
	pos, wrote := c.pendingSync, c.pendingWrite
	c.pendingSync, c.pendingWrite = 0, false
	if s.aof == nil || pos == 0 {
		return nil
	}
	err := s.aof.Commit(pos)
	if err == nil {
		return nil
	}
	if wrote {
		s.log.Error("append-only log failed; refusing writes (MISCONF) until a snapshot succeeds", "err", err)
	}
	return err
}

// Do executes one command for session c and leaves the encoded reply in r.
// It is the whole command layer, independent of the network.
func (s *Server) Do(c *Session, args [][]byte, r *Reply) {
	r.Reset(c.resp3)
	if len(args) == 0 {
		return
	}
	s.do(c, args, r)
	if c.replyOff || c.skipReplies > 0 {
		// CLIENT REPLY OFF/SKIP: the command ran, its reply is dropped.
		if c.skipReplies > 0 {
			c.skipReplies--
		}
		r.w.Discard()
	}
}

func (s *Server) do(c *Session, args [][]byte, r *Reply) {
	// One clock read per command: a command of a pipeline starts when the
	// one before it ended (the connection sets clock when it reads).
	start := c.clock
	if start == 0 {
		start = monoNow()
	}
	c.clock = 0
	if start-c.lastIdle >= int64(100*time.Millisecond) {
		c.lastIdle = start
		c.lastCmd.Store(monoTime(start).UnixMilli()) // CLIENT LIST idle has second resolution
	}
	cmd, ok := c.lastLookup, true
	if cmd == nil || !bytes.Equal(args[0], c.lastName) {
		if cmd, ok = lookupCommand(args[0]); ok && len(args[0]) <= 32 {
			c.lastName, c.lastLookup = append(c.lastName[:0], args[0]...), cmd
		}
	}
	if !ok {
		if c.multi != nil {
			c.multiErr = true
		}
		r.Error(unknownCommand(args))
		s.reject(nil, start, r)
		return
	}
	if c.curCmd.Load() != cmd {
		c.curCmd.Store(cmd)
	}
	s.totalCmds.Add(1)
	if !c.authed && !cmd.noauth {
		if s.authRequired() {
			r.Error(errNoAuth)
			s.reject(cmd, start, r)
			return
		}
		c.authed = true // CONFIG SET requirepass "" let everyone in
	}
	if msg := checkArgs(cmd, args); msg != "" {
		if c.multi != nil {
			c.multiErr = true
		}
		r.Error(msg)
		s.reject(cmd, start, r)
		return
	}
	// ACL: refused before it runs or is queued (a refused command in
	// MULTI makes EXEC abort, as in Redis).
	if !s.checkAccess(c, cmd, args, r) {
		if c.multi != nil {
			c.multiErr = true
		}
		s.reject(cmd, start, r)
		return
	}
	if !cmd.txnControl && !c.fromMaster {
		if msg := s.replicaRefuses(c, cmd); msg != "" {
			if c.multi != nil {
				c.multiErr = true
			}
			r.Error(msg)
			s.reject(cmd, start, r)
			return
		}
	}
	if msg := subscribedRefusal(c, cmd, args); msg != "" {
		r.Error(msg)
		s.reject(cmd, start, r)
		return
	}
	if c.multi != nil && !cmd.txnControl {
		if cmd.noMulti {
			c.multiErr = true
			r.Error("ERR Command not allowed inside a transaction")
			s.reject(cmd, start, r)
			return
		}
		if msg := s.queueRoom(c, cmd, args); msg != "" {
			c.multiErr = true
			r.Error(msg)
			s.reject(cmd, start, r)
			return
		}
		q := make([][]byte, len(args))
		for i, a := range args {
			q[i] = append([]byte(nil), a...)
		}
		c.multi = append(c.multi, queued{cmd, q})
		c.txnLen.Store(int64(len(c.multi)))
		r.Simple("QUEUED")
		return
	}
	var d time.Duration
	if cmd.unlocked {
		cmd.fn(s, c, args, r)
		c.clock = monoNow()
		d = time.Duration(c.clock - start)
		s.stats.executed(cmd, d, r)
	} else {
		if cmd.write {
			if msg := s.misconf(); msg != "" {
				r.Error(msg)
				s.reject(cmd, start, r)
				return
			}
			if msg := s.recordFits(logRecordSize(args)); msg != "" {
				r.Error(msg)
				s.reject(cmd, start, r)
				return
			}
		}
		d = s.locked(c, cmd, args, r, start)
	}
	s.executed(c, cmd, args, start, d, r)
}

// reject counts a command refused before it ran (cmd nil: unknown).
func (s *Server) reject(cmd *command, start int64, r *Reply) {
	s.stats.rejected(cmd, time.Duration(monoNow()-start), r)
}

// executed adds a command that ran and took d to the slow log (INFO
// commandstats and /metrics counted it already).
func (s *Server) executed(c *Session, cmd *command, args [][]byte, start int64, d time.Duration, r *Reply) {
	if cmd.fast {
		s.latency.add("fast-command", d)
	} else {
		s.latency.add("command", d)
	}
	if t := s.set.slowerThan.Load(); t >= 0 && d.Microseconds() >= t && !cmd.noSlowlog {
		s.slowlog.add(c, args, monoTime(start), d, int(s.set.slowMaxLen.Load()))
	}
}

// locked runs a command with the keyspace locked. The lock is released on
// every path: a panic in a read-only command is logged and answered as an
// error; in a write it crashes the process, since a half-applied write
// would leave memory different from the log (restart replays the log).
// It returns how long the command took, and counts it for INFO
// commandstats while it holds the lock.
func (s *Server) locked(c *Session, cmd *command, args [][]byte, r *Reply, start int64) (d time.Duration) {
	defer func() {
		if p := recover(); p != nil {
			s.db.CountReads(false)
			s.log.Error("panic in command", "cmd", cmd.name, "panic", p, "stack", string(debug.Stack()))
			if cmd.write {
				panic(fmt.Sprintf("bloomkit: panic in write command %s: %v", cmd.name, p))
			}
			r.Reset(c.resp3)
			r.Error("ERR internal error in '" + cmd.name + "' (logged)")
		}
	}()
	s.db.Lock()
	defer s.db.Unlock()
	s.apply(srcClient, c, cmd, args, r)
	c.clock = monoNow()
	d = time.Duration(c.clock - start)
	s.stats.executedLocked(cmd, d, r)
	return d
}

// monoBase anchors monoNow: time.Since of a time.Now value reads only the
// monotonic clock, one clock read where time.Now takes two (wall and
// monotonic) — a measurable share of a pipelined command's cost.
var monoBase = time.Now()

// monoNow is nanoseconds on the monotonic clock since monoBase.
func monoNow() int64 { return int64(time.Since(monoBase)) }

// monoTime is the wall-clock time of a monoNow reading.
func monoTime(ns int64) time.Time { return monoBase.Add(time.Duration(ns)) }

// beforeWrite readies the keys a command names (db.mu held): background
// merges of them finish, a memory recount and a running snapshot see
// them before they change.
func (s *Server) beforeWrite(cmd *command, args [][]byte) {
	if s.db.Merging() {
		// A merge in the background took effect when it was logged:
		// whoever names its keys sees it done (internal/keyspace/merge.go).
		forKeys(cmd, args, s.db.FinishMergesNamed)
	}
	if cmd.write && s.db.Recounting() {
		forKeys(cmd, args, s.db.Touch)
	}
	if cmd.write && s.db.Snapshotting() {
		forKeys(cmd, args, func(k []byte) {
			if e := s.db.Lookup(string(k)); e != nil {
				s.db.Preserve(e)
			}
		})
	}
}

// queued is a command waiting for EXEC.
type queued struct {
	cmd  *command
	args [][]byte
}

// exec runs a MULTI block atomically: one array with each command's reply.
// Its writes are logged as one record, so a crash replays all or none, and
// the clock stands still while it runs, so expiry cannot split it.
func cmdExec(s *Server, c *Session, args [][]byte, r *Reply) { s.exec(c, r) }

func (s *Server) exec(c *Session, r *Reply) {
	if c.multi == nil {
		r.Error("ERR EXEC without MULTI")
		return
	}
	q, failed := c.multi, c.multiErr
	s.endMulti(c)
	if failed {
		r.Error("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	for _, e := range q[1:] {
		if e.cmd.write {
			msg := s.misconf()
			if msg == "" {
				// Became a replica, or lost its replicas, since it was queued.
				msg = s.replicaRefuses(c, e.cmd)
			}
			if msg != "" {
				r.Error("EXECABORT Transaction discarded because of: " + msg)
				return
			}
			break
		}
	}
	r.Array(len(q) - 1) // q[0] is the MULTI marker
	var sub Reply
	s.db.Lock()
	defer s.db.Unlock()
	now := s.db.Now()
	clock := s.db.Now
	s.db.Now = func() time.Time { return now }
	s.beginTxn()
	defer func() {
		s.db.Now = clock
		if s.endTxn() {
			if s.aof != nil && !s.cfg.NoAppendLog {
				c.pendingWrite = true
			}
			c.woff = s.repl.offset()
		}
		if s.aof != nil {
			c.pendingSync = s.aof.Appended()
		}
	}()
	c.inExec = true
	defer func() { c.inExec = false }()
	for _, e := range q[1:] {
		sub.Reset(c.resp3)
		if !s.checkAccess(c, e.cmd, e.args, &sub) {
			// The user's rules changed since the command was queued:
			// Redis checks again when EXEC runs it.
			r.w.Raw(sub.w.Pending())
			continue
		}
		t := time.Now()
		s.apply(srcExec, c, e.cmd, e.args, &sub)
		s.stats.executedInTxn(e.cmd, time.Since(t), &sub)
		r.w.Raw(sub.w.Pending())
	}
}

// lockDB takes the keyspace lock for a command marked unlocked and returns
// its release. Inside EXEC the lock is already held for the whole queue (the
// transaction is atomic), so it neither takes nor releases it: taking it
// again would deadlock the server.
func (s *Server) lockDB(c *Session) (unlock func()) {
	if c != nil && c.inExec {
		return func() {}
	}
	s.db.Lock()
	return s.db.Unlock
}

// newRunID is 40 random hex digits, as Redis's run_id.
func newRunID() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
