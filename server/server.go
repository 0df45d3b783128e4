// Package server is bloomkit's network server: it speaks the Redis protocol
// (RESP2, and RESP3 after HELLO 3) through github.com/tidwall/redcon and
// answers RedisBloom's BF.* and CF.* commands exactly as RedisBloom does,
// plus the generic commands Redis clients need. Filters live in a keyspace
// with expiry; writes go to an append-only log and periodic snapshots so
// acknowledged writes survive crashes.
//
// A Server is created with New, started with Serve or ListenAndServe and
// stopped with Shutdown (which saves a snapshot) or Close.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"
)

// Config configures a Server. The zero value of each field means its default.
type Config struct {
	// Addr is the listen address (default 127.0.0.1:6479).
	Addr string
	// Dir holds the snapshot and the append-only log (default ./bloomkit-data).
	// Empty string with NoPersistence disables persistence.
	Dir string
	// NoPersistence keeps everything in memory only.
	NoPersistence bool
	// AppendFsync is "always", "everysec" (default) or "no".
	AppendFsync string
	// RequirePass, when set, makes clients AUTH before other commands.
	RequirePass string
	// TLSCert and TLSKey enable TLS on Addr when both are set.
	TLSCert, TLSKey string
	// MaxMemory caps the bytes of filters and keys (0: 90% of physical memory,
	// so one huge BF.RESERVE cannot get the process OOM-killed).
	MaxMemory uint64
	// MetricsAddr, when set, serves Prometheus /metrics and /healthz.
	MetricsAddr string
	// MaxArgs limits the arguments of one command (default 1,048,576).
	MaxArgs int
	// MaxBulk limits one argument's size in bytes (default 512 MiB).
	MaxBulk int
	// AutoSaveLogBytes makes the server write a snapshot (and so restart the
	// log) in the background once the append-only log is larger than this
	// and larger than the last snapshot (default 64 MiB; negative: never).
	AutoSaveLogBytes int64
	// Logger receives structured logs (default: slog.Default()).
	Logger *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

func (c *Config) defaults() {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:6479"
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
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.AutoSaveLogBytes == 0 {
		c.AutoSaveLogBytes = 64 << 20
	}
}

// Session is one client connection's state.
type Session struct {
	ID      int64
	Name    string
	LibName string
	LibVer  string
	Addr    string

	resp3   bool
	authed  bool
	quit    bool
	created time.Time

	// set by handlers for the append-only log
	skipLog bool
	logArgs [][]byte
	// pendingSync is the log position this connection's replies wait for
	// (appendfsync always).
	pendingSync int64
	reply       Reply
	out         []byte // replies of the current pipeline batch
	// multi holds the commands queued after MULTI (its first element is a
	// marker, so an empty transaction is non-nil); multiErr aborts EXEC.
	multi    []queued
	multiErr bool
}

// Server is a bloomkit server. Its methods are safe for concurrent use.
type Server struct {
	cfg     Config
	log     *slog.Logger
	db      *DB
	aof     *appendLog
	metrics *metrics

	started      time.Time
	nextID       atomic.Int64
	clients      atomic.Int64
	totalConns   atomic.Int64
	totalCmds    atomic.Int64
	lastSave     atomic.Int64
	dirtyAtSave  atomic.Uint64
	saving       atomic.Bool
	saveMu       sync.Mutex
	saveErr      atomic.Bool
	lastSnapSize atomic.Int64
	aofErr       atomic.Value // string, or nil when the log is writable
	gen          uint64       // persistence generation (under db.mu)

	smu      sync.Mutex
	sessions map[int64]*Session

	ln       net.Listener
	addr     atomic.Value // string
	rc       *redcon.Server
	httpSrv  *http.Server
	httpLn   net.Listener
	stop     chan struct{}
	stopOnce sync.Once
	bgWG     sync.WaitGroup
	closed   atomic.Bool
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
	limit := cfg.MaxMemory
	if limit == 0 {
		limit = defaultMemoryLimit()
	}
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger,
		db:       newDB(limit, cfg.Now),
		metrics:  newMetrics(),
		started:  time.Now(),
		sessions: map[int64]*Session{},
		stop:     make(chan struct{}),
	}
	s.metrics.register(s)
	s.lastSave.Store(time.Now().Unix())
	if !cfg.NoPersistence {
		if err := s.load(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// defaultMemoryLimit is 90% of physical memory (0 when unknown).
func defaultMemoryLimit() uint64 {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "MemTotal:") {
			var kb uint64
			if _, err := fmt.Sscanf(strings.TrimPrefix(line, "MemTotal:"), "%d", &kb); err == nil {
				return kb * 1024 / 10 * 9
			}
		}
	}
	return 0
}

// Addr is the address the server listens on (after Serve started).
func (s *Server) Addr() string {
	if a, ok := s.addr.Load().(string); ok {
		return a
	}
	return s.cfg.Addr
}

// MetricsAddr is the metrics listener's address, if any.
func (s *Server) MetricsAddr() string {
	if s.httpLn != nil {
		return s.httpLn.Addr().String()
	}
	return ""
}

// Listen opens the listeners (Redis protocol, metrics) without serving yet.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("server: listen %s: %w", s.cfg.Addr, err)
	}
	if s.cfg.TLSCert != "" || s.cfg.TLSKey != "" {
		cert, err := tls.LoadX509KeyPair(s.cfg.TLSCert, s.cfg.TLSKey)
		if err != nil {
			ln.Close()
			return fmt.Errorf("server: TLS certificate: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	s.ln = &limitListener{Listener: ln, maxArgs: s.cfg.MaxArgs, maxBulk: s.cfg.MaxBulk}
	s.addr.Store(ln.Addr().String())
	if s.cfg.MetricsAddr != "" {
		hl, err := net.Listen("tcp", s.cfg.MetricsAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("server: metrics listen %s: %w", s.cfg.MetricsAddr, err)
		}
		s.httpLn = hl
		s.httpSrv = &http.Server{Handler: s.metrics.handler(s), ReadHeaderTimeout: 10 * time.Second}
	}
	return nil
}

// Serve serves clients until Close or Shutdown; Listen must have been called
// (ListenAndServe does both).
func (s *Server) Serve() error {
	if s.ln == nil {
		return errors.New("server: Serve before Listen")
	}
	if s.httpSrv != nil {
		go func() {
			if err := s.httpSrv.Serve(s.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("metrics server", "err", err)
			}
		}()
	}
	s.bgWG.Add(1)
	go s.background()
	s.rc = redcon.NewServerNetwork("tcp", s.Addr(), s.handle, s.accept, s.closedConn)
	s.log.Info("serving", "addr", s.Addr(), "dir", s.cfg.Dir, "appendfsync", s.cfg.AppendFsync,
		"tls", s.cfg.TLSCert != "", "auth", s.cfg.RequirePass != "", "maxmemory", s.db.limit, "metrics", s.MetricsAddr())
	err := s.rc.Serve(s.ln)
	if s.closed.Load() {
		return nil
	}
	return err
}

// ListenAndServe listens on cfg.Addr and serves.
func (s *Server) ListenAndServe() error {
	if err := s.Listen(); err != nil {
		return err
	}
	return s.Serve()
}

// Shutdown stops accepting clients, saves a snapshot and closes the log.
func (s *Server) Shutdown() error {
	s.closeListeners()
	var err error
	if !s.cfg.NoPersistence {
		if err = s.Save(); err != nil {
			s.log.Error("save on shutdown failed", "err", err)
		}
	}
	s.finish()
	return err
}

// Close stops the server without saving a snapshot (the log is flushed).
func (s *Server) Close() error {
	s.closeListeners()
	s.finish()
	return nil
}

func (s *Server) closeListeners() {
	s.closed.Store(true)
	s.stopOnce.Do(func() { close(s.stop) })
	if s.rc != nil {
		s.rc.Close()
	} else if s.ln != nil {
		s.ln.Close()
	}
	if s.httpSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		s.httpSrv.Shutdown(ctx)
		cancel()
	}
}

func (s *Server) finish() {
	s.bgWG.Wait()
	s.saveMu.Lock() // let a running BGSAVE finish
	s.saveMu.Unlock()
	if s.aof != nil {
		if err := s.aof.close(); err != nil {
			s.log.Error("closing append-only log", "err", err)
		}
	}
}

// background runs active expiry, the everysec fsync and memory recounts.
func (s *Server) background() {
	defer s.bgWG.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	ticks := 0
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ticks++
		s.db.mu.Lock()
		for s.db.expireSome(20) == 20 {
		}
		if ticks%10 == 0 {
			s.db.recount()
		}
		s.db.mu.Unlock()
		if msg, _ := s.aofErr.Load().(string); msg != "" && s.aof != nil && ticks%5 == 0 {
			if err := s.aof.flush(s.cfg.AppendFsync != "no"); err == nil {
				s.aofErr.Store("")
				s.log.Info("append-only log writable again")
			}
		}
		if s.aof != nil && s.cfg.AutoSaveLogBytes > 0 && !s.saving.Load() {
			size := s.aofSize()
			if size > s.cfg.AutoSaveLogBytes && size > s.lastSnapSize.Load() && s.saving.CompareAndSwap(false, true) {
				s.log.Info("append-only log is large; writing a snapshot", "log_bytes", size)
				s.bgWG.Add(1)
				go func() {
					defer s.bgWG.Done()
					defer s.saving.Store(false)
					if err := s.save(); err != nil {
						s.log.Error("automatic snapshot failed", "err", err)
					}
				}()
			}
		}
		if s.aof != nil && s.cfg.AppendFsync == "everysec" && ticks%10 == 0 {
			if err := s.aof.flush(true); err != nil {
				s.log.Error("append-only log fsync", "err", err)
			}
		}
	}
}

func (s *Server) accept(conn redcon.Conn) bool {
	c := &Session{ID: s.nextID.Add(1), Addr: conn.RemoteAddr(), created: time.Now()}
	c.authed = s.cfg.RequirePass == ""
	conn.SetContext(c)
	s.clients.Add(1)
	s.totalConns.Add(1)
	s.smu.Lock()
	s.sessions[c.ID] = c
	s.smu.Unlock()
	return true
}

func (s *Server) closedConn(conn redcon.Conn, err error) {
	s.clients.Add(-1)
	if c, ok := conn.Context().(*Session); ok {
		s.smu.Lock()
		delete(s.sessions, c.ID)
		s.smu.Unlock()
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		s.log.Debug("connection closed", "addr", conn.RemoteAddr(), "err", err)
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

func (s *Server) handle(conn redcon.Conn, cmd redcon.Command) {
	c, _ := conn.Context().(*Session)
	if c == nil {
		conn.Close()
		return
	}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic in command; closing connection", "panic", p, "stack", string(debug.Stack()))
			conn.WriteError("ERR internal error")
			conn.Close()
		}
	}()
	s.Do(c, cmd.Args, &c.reply)
	c.out = append(c.out, c.reply.Bytes()...)
	if len(conn.PeekPipeline()) == 0 || c.quit {
		if !s.endBatch(c) {
			// The log could not be written: acknowledge nothing.
			c.out = c.out[:0]
			conn.Close()
			return
		}
		conn.WriteRaw(c.out)
		if cap(c.out) > 1<<20 {
			c.out = nil
		} else {
			c.out = c.out[:0]
		}
	}
	if c.quit {
		conn.Close()
	}
}

// endBatch runs before a connection's replies are sent: the log records of
// the writes they acknowledge are written to the file (and, with
// appendfsync always, fsynced) first. It reports false if that failed.
func (s *Server) endBatch(c *Session) bool {
	if s.aof == nil {
		return true
	}
	sync := s.cfg.AppendFsync == "always"
	if c.pendingSync > 0 {
		err := s.aof.flushTo(c.pendingSync, sync)
		c.pendingSync = 0
		if err != nil {
			s.aofErr.Store(err.Error())
			s.log.Error("append-only log write failed; replies withheld, writes refused until it works again", "err", err)
			return false
		}
		if msg, _ := s.aofErr.Load().(string); msg != "" {
			s.aofErr.Store("")
			s.log.Info("append-only log writable again")
		}
	}
	return true
}

// Do executes one command for session c and leaves the encoded reply in r.
// It is the whole command layer, independent of the network.
func (s *Server) Do(c *Session, args [][]byte, r *Reply) {
	r.Reset(c.resp3)
	if len(args) == 0 {
		return
	}
	start := time.Now()
	cmd, ok := lookupCommand(args[0])
	if !ok {
		if c.multi != nil {
			c.multiErr = true
		}
		r.Error(unknownCommand(args))
		s.metrics.observe(nil, start, true)
		return
	}
	s.totalCmds.Add(1)
	if !c.authed && !cmd.noauth {
		r.Error(errNoAuth)
		s.metrics.observe(cmd, start, true)
		return
	}
	if !cmd.checkOwn && !cmd.arityOK(len(args)) {
		if c.multi != nil {
			c.multiErr = true
		}
		r.Error(wrongArity(cmd.name))
		s.metrics.observe(cmd, start, true)
		return
	}
	if c.multi != nil {
		switch cmd.name {
		case "exec", "discard", "multi", "quit", "watch", "unwatch", "reset":
		default:
			if cmd.name == "save" || cmd.name == "bgsave" || cmd.name == "hello" || cmd.name == "auth" {
				c.multiErr = true
				r.Error("ERR Command not allowed inside a transaction")
				s.metrics.observe(cmd, start, true)
				return
			}
			q := make([][]byte, len(args))
			for i, a := range args {
				q[i] = append([]byte(nil), a...)
			}
			c.multi = append(c.multi, queued{cmd, q})
			r.Simple("QUEUED")
			return
		}
	}
	switch cmd.name {
	case "save", "bgsave", "multi", "discard", "watch", "unwatch":
		cmd.fn(s, c, args, r)
		s.metrics.observe(cmd, start, r.failed)
		return
	case "exec":
		s.exec(c, r)
		s.metrics.observe(cmd, start, r.failed)
		return
	}
	if cmd.write && s.aof != nil {
		if msg, _ := s.aofErr.Load().(string); msg != "" {
			r.Error("MISCONF Errors writing to the append-only log: " + msg)
			s.metrics.observe(cmd, start, true)
			return
		}
	}
	s.db.mu.Lock()
	s.run(c, cmd, args, r)
	s.db.mu.Unlock()
	s.metrics.observe(cmd, start, r.failed)
}

// run executes a command with the keyspace locked and logs it if it wrote.
func (s *Server) run(c *Session, cmd *command, args [][]byte, r *Reply) {
	c.skipLog, c.logArgs = false, nil
	cmd.fn(s, c, args, r)
	if cmd.write && !r.failed && !c.skipLog && s.aof != nil {
		la := args
		if c.logArgs != nil {
			la = c.logArgs
		}
		c.pendingSync = s.aof.append(la)
	}
}

// queued is a command waiting for EXEC.
type queued struct {
	cmd  *command
	args [][]byte
}

// exec runs a MULTI block atomically: one array with each command's reply.
func (s *Server) exec(c *Session, r *Reply) {
	if c.multi == nil {
		r.Error("ERR EXEC without MULTI")
		return
	}
	q, failed := c.multi, c.multiErr
	c.multi, c.multiErr = nil, false
	if failed {
		r.Error("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	if s.aof != nil {
		for _, e := range q[1:] {
			if e.cmd.write {
				if msg, _ := s.aofErr.Load().(string); msg != "" {
					r.Error("MISCONF Errors writing to the append-only log: " + msg)
					return
				}
				break
			}
		}
	}
	r.Array(len(q) - 1) // q[0] is the MULTI marker
	var sub Reply
	s.db.mu.Lock()
	for _, e := range q[1:] {
		sub.Reset(c.resp3)
		s.run(c, e.cmd, e.args, &sub)
		r.buf = append(r.buf, sub.buf...)
	}
	s.db.mu.Unlock()
}

// limitListener wraps accepted connections with the request limits.
type limitListener struct {
	net.Listener
	maxArgs, maxBulk int
}

// Accept wraps each connection in a limitConn.
func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &limitConn{Conn: c, maxArgs: l.maxArgs, maxBulk: l.maxBulk}, nil
}

// limitConn checks the RESP request stream as it is read, before redcon
// buffers it: an argument count above maxArgs, a bulk length above maxBulk
// or an inline command longer than 64 KiB gets a protocol error and the
// connection is closed, so no single request can exhaust memory.
type limitConn struct {
	net.Conn
	maxArgs, maxBulk int

	state   int   // 0: at a line start, 1: in a header line, 2: in bulk data, 3: in inline line
	kind    byte  // '*' or '$' for header lines
	num     int64 // number being parsed
	neg     bool
	skip    int64 // bulk bytes (+CRLF) left to pass
	lineLen int
	failed  bool
}

// Read reads and checks the request stream.
func (c *limitConn) Read(p []byte) (int, error) {
	if c.failed {
		return 0, io.EOF
	}
	n, err := c.Conn.Read(p)
	if msg := c.scan(p[:n]); msg != "" {
		c.failed = true
		c.Conn.Write([]byte("-ERR Protocol error: " + msg + "\r\n"))
		c.Conn.Close()
		return 0, io.EOF
	}
	return n, err
}

func (c *limitConn) scan(p []byte) string {
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch c.state {
		case 0:
			switch b {
			case '*', '$':
				c.state, c.kind, c.num, c.neg = 1, b, 0, false
			case '\r', '\n':
			default:
				c.state, c.lineLen = 3, 1
			}
		case 1:
			switch {
			case b >= '0' && b <= '9':
				c.num = c.num*10 + int64(b-'0')
				if c.num > 1<<40 {
					c.num = 1 << 40
				}
			case b == '-':
				c.neg = true
			case b == '\n':
				c.state = 0
				if c.neg {
					break
				}
				if c.kind == '*' && c.num > int64(c.maxArgs) {
					return "invalid multibulk length"
				}
				if c.kind == '$' {
					if c.num > int64(c.maxBulk) {
						return "invalid bulk length"
					}
					c.skip = c.num + 2
					c.state = 2
				}
			}
		case 2:
			k := int64(len(p) - i)
			if k > c.skip {
				k = c.skip
			}
			c.skip -= k
			i += int(k) - 1
			if c.skip == 0 {
				c.state = 0
			}
		case 3:
			c.lineLen++
			if b == '\n' {
				c.state = 0
			} else if c.lineLen > 64<<10 {
				return "too big inline request"
			}
		}
	}
	return ""
}
