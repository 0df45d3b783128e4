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
//	                               client elsewhere and for TLS), limits
//	client.go                      the one request loop both call: run a
//	                               buffer's requests, held replies, flushing
//	internal/resp/reader.go        the one request reader, with every limit
//	prefetch.go                    a pipeline's filter bytes read ahead
//	server.go                      the Server, its life (New, Serve, Close),
//	                               and dispatch (Server.Do): what a client's
//	                               command passes before it runs
//	apply.go                       the one apply path: every source of a
//	                               command (client, EXEC, log replay, a
//	                               master's stream) runs it through apply
//	commands.go                    the command table, its flags, its key
//	                               positions and the access each key needs
//	cmd_*.go                       the handlers (EXEC: cmd_transaction.go)
//	internal/keyspace/keyspace.go  entries, expiry, memory accounting
//	internal/keyspace/snapshot.go  a running snapshot's images (copy-on-write)
//	internal/aof/log.go            the log record, group commit, appendfsync
//	reply.go                       the reply, encoded by internal/resp/reply.go;
//	                               it leaves once the log holds what it depends
//	                               on (endBatch, aof.Log.Commit)
//
// Beside them: config.go (Config, what a Server starts with) and
// cmd_config.go (the one table of parameters: config file, CONFIG
// GET/SET/REWRITE, redaction, docs); session.go (a connection's state);
// background.go (expiry, fsync, save points); persist.go, the glue of
// durability: start-up loads the newest snapshot and replays the logs
// through apply, and a rewrite fixes its point in time; loading.go, the
// load while clients are served (-LOADING, INFO's progress); internal/aof owns
// the files and the policy; replication.go, repl_master.go,
// repl_replica.go. docs/server-internals.md traces one BF.ADD and one
// BGSAVE through them and lists the locks and their order.
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

// Server is a bloomkit server. Its methods are safe for concurrent use.
//
// Locks: which lock guards what, the order they are taken in, and the
// rule that none is held across file or network I/O are written down in
// one place, docs/server-internals.md ("Locks"); keep it current.
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
	// rewriteMu serializes CONFIG REWRITE's reading and writing of the
	// config file (cfgMu is not held across that I/O).
	rewriteMu sync.Mutex
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
	unixLns   []net.Listener // the unixsocket (at most one)
	bindHosts []string       // the hosts both listen on ("-" before one: optional)
	serving   bool           // Serve started the accept loops
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
	// tlsMu serialises the changes of the TLS configuration (CONFIG SET
	// of tls-* or tls-port, ReloadTLS); it is taken before every other
	// lock and is held while the files are read, which no other lock is.
	// tlsReady is the configuration such a CONFIG SET built before
	// taking the keyspace lock (under cfgMu).
	tlsMu    sync.Mutex
	tlsReady *tlsBuild
	// names is rename-command (nil: none).
	names *commandNames
	// expireCycleNanos is the time active expiry ran (INFO
	// expire_cycle_cpu_milliseconds).
	expireCycleNanos atomic.Int64
	// mon are the clients in MONITOR mode (monitor.go).
	mon monitors
	// loading is the state of a load in progress (loading.go).
	loading loadState
	// failover is a FAILOVER in progress (failover.go).
	failover failoverState
	// watching is which sessions WATCH which keys (watch.go; guarded by
	// the keyspace lock).
	watching watchState
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
	s.loading.done = make(chan struct{})
	s.loading.err = make(chan error, 1)
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
	if s.names, err = newCommandNames(cfg.RenameCommands); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if err := s.initUsers(&cfg); err != nil {
		return nil, err
	}
	if err := s.initTLS(&cfg); err != nil {
		return nil, err
	}
	s.metrics.register(s)
	s.persist.lastSave.Store(time.Now().Unix())
	s.persist.lastOK.Store(true)
	switch {
	case cfg.NoPersistence:
	case cfg.LoadWhileServing:
		if err := s.openDataDir(); err != nil {
			s.dirLock.Unlock()
			return nil, err
		}
		s.beginLoading(loadingData, 0) // Serve loads
		return s, nil
	default:
		if err := s.load(); err != nil {
			s.dirLock.Unlock()
			return nil, err
		}
	}
	close(s.loading.done)
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
	loading := s.loadingNow()
	s.bgWG.Add(1)
	s.lifeMu.Unlock()
	if loading {
		// Clients are accepted while the data loads; the background
		// work and replication start once it is loaded.
		s.loading.start.Store(time.Now().Unix())
		go s.loadInBackground()
	} else {
		go s.background()
	}
	go func() {
		select {
		case <-s.shutdownReq:
			s.Close()
		case <-s.stop:
		}
	}()
	s.log.Info("serving", "addr", strings.Join(s.ListenAddrs(), " "), "tls", s.TLSAddr(), "dir", s.cfg.Dir, "appendfsync", s.appendFsync(),
		"auth", s.authRequired(), "maxmemory", s.set.limit.Load(), "metrics", s.MetricsAddr(), "loading", loading)
	s.lifeMu.Lock()
	if s.closed.Load() {
		s.lifeMu.Unlock()
		return nil
	}
	if err := s.startLoops(); err != nil {
		s.log.Warn("event loops unavailable; serving each client with a goroutine", "err", err)
	}
	s.lifeMu.Unlock()
	if !loading {
		s.startReplication()
	}
	// One accept loop per listener (CONFIG SET port or tls-port replaces
	// them); the first that fails ends serving.
	s.startAccepting()
	var err error
	select {
	case <-s.stop:
	case err = <-s.acceptErr:
	case err = <-s.loading.err:
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
	loading := s.loadingNow()
	s.closeListeners()
	var err error
	if !s.cfg.NoPersistence && !loading {
		if err = s.saveInForeground(); err != nil {
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
	// pos is set only by a command that read s.aof under the keyspace
	// lock: s.aof is read here only then.
	if pos == 0 || s.aof == nil {
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
		if cmd, ok = lookupCommand(args[0]); s.names != nil {
			cmd, ok = s.names.resolve(args[0], cmd, ok)
		}
		if ok && len(args[0]) <= 32 {
			c.lastName, c.lastLookup = append(c.lastName[:0], args[0]...), cmd
		}
	}
	if s.names != nil && ok && !strings.EqualFold(string(args[0]), cmd.name) {
		// Logged, replicated and queued by its own name.
		args[0] = []byte(cmd.name)
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
	if cmd.hasSubcommands {
		c.curSub.Store(aclCommand(cmd, args))
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
	if cmd.name == "debug" {
		// Redis's protected command: refused unless enable-debug-command
		// allows this client.
		if msg := s.debugAllowed(c); msg != "" {
			if c.multi != nil {
				c.multiErr = true
			}
			r.Error(msg)
			s.reject(cmd, start, r)
			return
		}
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
	if s.loading.phase.Load() != notLoading {
		if msg := s.loadingRefusal(c, cmd, args); msg != "" {
			if c.multi != nil {
				if cmd.name == "exec" {
					s.endMulti(c)
				} else {
					c.multiErr = true
				}
			}
			r.Error(msg)
			s.reject(cmd, start, r)
			return
		}
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
	if s.failover.state.Load() != noFailover && s.holdWrite(c, cmd, args) {
		return // FAILOVER pauses writes: it runs when they resume
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
	if s.mon.n.Load() > 0 {
		s.feedMonitors(c, cmd, args, monoTime(start))
	}
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
			s.db.ReadLookups(false)
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

// newRunID is 40 random hex digits, as Redis's run_id.
func newRunID() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
