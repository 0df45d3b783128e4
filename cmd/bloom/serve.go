package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bloomkit/bloomkit/internal/confval"
	"github.com/bloomkit/bloomkit/internal/sdnotify"
	"github.com/bloomkit/bloomkit/server"
)

func init() {
	register(command{name: "serve", summary: "run the RedisBloom-compatible server (BF.*, CF.* over the Redis protocol)", run: runServe})
}

var serveHelp = help{
	name:     "serve",
	synopsis: "serve [--addr host:port] [--dir path] [--appendfsync always|everysec|no] [flags]",
	about: `Runs bloomkit's server: the Redis protocol (RESP2, RESP3 after HELLO 3) with
RedisBloom's BF.* and CF.* commands, so go-redis, redis-py and redis-cli code
written for RedisBloom works unchanged. Writes go to an append-only log in --dir
and to snapshots (SAVE, BGSAVE, and on SIGTERM/SIGINT); start-up loads them.

Every flag can also be set by an environment variable: BLOOMKIT_ADDR, BLOOMKIT_DIR,
BLOOMKIT_APPENDFSYNC, BLOOMKIT_REQUIREPASS, BLOOMKIT_TLS_ADDR, BLOOMKIT_TLS_CERT, BLOOMKIT_TLS_KEY,
BLOOMKIT_TLS_CA_CERT, BLOOMKIT_TLS_AUTH_CLIENTS,
BLOOMKIT_MAXMEMORY, BLOOMKIT_METRICS_ADDR, BLOOMKIT_METRICS_PASSWORD, BLOOMKIT_PPROF_ADDR, BLOOMKIT_MAXCLIENTS,
BLOOMKIT_TIMEOUT, BLOOMKIT_CLIENT_WRITE_TIMEOUT, BLOOMKIT_PROTO_MAX_BULK_LEN,
BLOOMKIT_CLIENT_QUERY_BUFFER_LIMIT, BLOOMKIT_EVENT_LOOPS, BLOOMKIT_CONFIG, BLOOMKIT_LOG_LEVEL, BLOOMKIT_LOG_FORMAT,
BLOOMKIT_PROTECTED_MODE, BLOOMKIT_LOGFILE, BLOOMKIT_PIDFILE, BLOOMKIT_SUPERVISED.
Flags win over the environment, which wins over --config FILE.
docs/operations.md is the manual.`,
	examples: `bloom serve
redis-cli -p 6479 BF.ADD urls https://a.example
bloom serve --addr '' --tls-addr 0.0.0.0:6480 --tls-cert c.pem --tls-key k.pem --tls-ca-cert ca.pem
bloom serve --appendfsync always --maxmemory 4GiB --metrics-addr 127.0.0.1:9479
bloom serve --config /etc/bloomkit.conf`,
}

func runServe(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := func(name, def string) string {
		if v, ok := os.LookupEnv(name); ok {
			return v
		}
		return def
	}
	envInt := func(name string, def int) int {
		if v, err := strconv.Atoi(env(name, "")); err == nil {
			return v
		}
		return def
	}
	envDuration := func(name string, def time.Duration) time.Duration {
		if v, err := confval.ParseDuration(env(name, ""), time.Second); err == nil {
			return v
		}
		return def
	}
	fs := newFlags("serve")
	config := fs.String("config", env("BLOOMKIT_CONFIG", ""), "read settings from this Redis-style config file (CONFIG REWRITE writes to it); flags win over it")
	addr := fs.String("addr", env("BLOOMKIT_ADDR", server.DefaultAddr), "plain-text listen address ('' for none: TLS only)")
	dir := fs.String("dir", env("BLOOMKIT_DIR", "bloomkit-data"), "data directory (snapshot and append-only log)")
	appendonly := fs.String("appendonly", env("BLOOMKIT_APPENDONLY", "yes"), "yes: log every write (durable as --appendfsync says); no: snapshots only (SAVE, BGSAVE, save points, shutdown), as Redis's appendonly no")
	fsync := fs.String("appendfsync", env("BLOOMKIT_APPENDFSYNC", "everysec"), "fsync the log: always, everysec or no")
	pass := fs.String("requirepass", env("BLOOMKIT_REQUIREPASS", ""), "password clients must AUTH with")
	replicaOf := fs.String("replicaof", env("BLOOMKIT_REPLICAOF", ""), `start as the replica of this master, "host port" (as Redis's --replicaof)`)
	masterAuth := fs.String("masterauth", env("BLOOMKIT_MASTERAUTH", ""), "password this replica gives its master")
	tlsAddr := fs.String("tls-addr", env("BLOOMKIT_TLS_ADDR", ""), "serve TLS on this address too (Redis's tls-port), with --tls-cert and --tls-key")
	cert := fs.String("tls-cert", env("BLOOMKIT_TLS_CERT", ""), "TLS certificate chain (PEM), for --tls-addr")
	key := fs.String("tls-key", env("BLOOMKIT_TLS_KEY", ""), "TLS private key (PEM)")
	caCert := fs.String("tls-ca-cert", env("BLOOMKIT_TLS_CA_CERT", ""), "CA certificates (PEM) that client certificates are verified against")
	authClients := fs.String("tls-auth-clients", env("BLOOMKIT_TLS_AUTH_CLIENTS", "yes"), "yes: TLS clients need a certificate signed by --tls-ca-cert; optional: verified if given; no: not asked for (as Redis)")
	maxmem := fs.String("maxmemory", env("BLOOMKIT_MAXMEMORY", "0"), "memory limit for filters, e.g. 4GiB, 512mb (0: 90% of RAM)")
	metrics := fs.String("metrics-addr", env("BLOOMKIT_METRICS_ADDR", ""), "serve Prometheus /metrics and /healthz here")
	pprofAddr := fs.String("pprof-addr", env("BLOOMKIT_PPROF_ADDR", ""), "serve Go's /debug/pprof profiles here (no auth: bind it to loopback)")
	metricsKeys := fs.Int("metrics-keys", envInt("BLOOMKIT_METRICS_KEYS", 0), fmt.Sprintf("export per-filter series (labelled by key name) on /metrics for at most this many keys, the first in SCAN order (0: none; at most %d)", server.MaxMetricsKeys))
	metricsPass := fs.String("metrics-password", env("BLOOMKIT_METRICS_PASSWORD", ""), "require HTTP basic auth with this password for /metrics")
	maxclients := fs.Int("maxclients", envInt("BLOOMKIT_MAXCLIENTS", 10000), "maximum open client connections")
	timeout := new(time.Duration)
	*timeout = envDuration("BLOOMKIT_TIMEOUT", 0)
	fs.Var(secondsFlag{timeout}, "timeout", "close clients idle this long, e.g. 300 or 5m (0: never)")
	protected := new(string)
	*protected = env("BLOOMKIT_PROTECTED_MODE", "yes")
	fs.Var(yesNoFlag{protected}, "protected-mode", "yes: without a password, refuse clients not on the loopback interface (as Redis)")
	supervised := fs.String("supervised", env("BLOOMKIT_SUPERVISED", "no"), "no, auto or systemd: tell systemd (Type=notify) when ready and stopping, and feed its watchdog")
	pidFile := fs.String("pidfile", env("BLOOMKIT_PIDFILE", ""), "write the process id to this file while serving")
	logFile := fs.String("logfile", env("BLOOMKIT_LOGFILE", ""), "append the log to this file instead of standard error")
	loops := fs.Int("event-loops", envInt("BLOOMKIT_EVENT_LOOPS", 0), "epoll loops serving plain TCP clients (0: half the CPUs)")
	writeTimeout := new(time.Duration)
	*writeTimeout = envDuration("BLOOMKIT_CLIENT_WRITE_TIMEOUT", 60*time.Second)
	fs.Var(secondsFlag{writeTimeout}, "client-write-timeout", "disconnect a client whose replies make no progress this long")
	maxBulk := fs.String("proto-max-bulk-len", env("BLOOMKIT_PROTO_MAX_BULK_LEN", "512mb"), "largest argument of a request")
	maxQuery := fs.String("client-query-buffer-limit", env("BLOOMKIT_CLIENT_QUERY_BUFFER_LIMIT", "1gb"), "largest request")
	level := fs.String("log-level", env("BLOOMKIT_LOG_LEVEL", "info"), "log level: debug, info, warn, error")
	format := fs.String("log-format", env("BLOOMKIT_LOG_FORMAT", "text"), "log format: text or json")
	pos, code, ok := parseFlags(fs, serveHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageErr(stderr, "serve", "unexpected argument %q", pos[0])
	}
	limit, err := parseMemory(*maxmem)
	if err != nil {
		return usageErr(stderr, "serve", "--maxmemory: %v", err)
	}
	// The config file is read first: its loglevel and logfile choose the
	// logger, unless a flag or environment variable says otherwise.
	var fc server.Config
	if *config != "" {
		if err := server.ReadConfigFile(*config, &fc); err != nil {
			return failf(stderr, "serve", "%v", err)
		}
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, envName := range map[string]string{"addr": "BLOOMKIT_ADDR", "dir": "BLOOMKIT_DIR",
		"appendfsync": "BLOOMKIT_APPENDFSYNC", "requirepass": "BLOOMKIT_REQUIREPASS", "maxmemory": "BLOOMKIT_MAXMEMORY",
		"maxclients": "BLOOMKIT_MAXCLIENTS", "timeout": "BLOOMKIT_TIMEOUT",
		"proto-max-bulk-len": "BLOOMKIT_PROTO_MAX_BULK_LEN", "client-query-buffer-limit": "BLOOMKIT_CLIENT_QUERY_BUFFER_LIMIT",
		"log-level": "BLOOMKIT_LOG_LEVEL", "logfile": "BLOOMKIT_LOGFILE", "pidfile": "BLOOMKIT_PIDFILE",
		"protected-mode": "BLOOMKIT_PROTECTED_MODE", "supervised": "BLOOMKIT_SUPERVISED", "tls-cert": "BLOOMKIT_TLS_CERT", "tls-key": "BLOOMKIT_TLS_KEY",
		"tls-addr": "BLOOMKIT_TLS_ADDR", "tls-ca-cert": "BLOOMKIT_TLS_CA_CERT", "tls-auth-clients": "BLOOMKIT_TLS_AUTH_CLIENTS",
		"appendonly": "BLOOMKIT_APPENDONLY", "replicaof": "BLOOMKIT_REPLICAOF", "masterauth": "BLOOMKIT_MASTERAUTH"} {
		if _, ok := os.LookupEnv(envName); ok {
			given[name] = true
		}
	}
	fromFile := func(name, v string) bool { return *config != "" && !given[name] && v != "" }
	if fromFile("log-level", fc.LogLevel) {
		*level, _ = server.LogLevelName(fc.LogLevel)
	}
	if fromFile("logfile", fc.LogFile) {
		*logFile = fc.LogFile
	}
	if fromFile("supervised", fc.Supervised) {
		*supervised = fc.Supervised
	}
	if fromFile("pidfile", fc.PidFile) {
		*pidFile = fc.PidFile
	}
	if fromFile("protected-mode", fc.ProtectedMode) {
		*protected = fc.ProtectedMode
	}
	switch *supervised {
	case "no", "auto", "systemd":
	default:
		return usageErr(stderr, "serve", "--supervised must be no, auto or systemd, not %q", *supervised)
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return usageErr(stderr, "serve", "--log-level: %v", err)
	}
	logOut := stderr
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
		if err != nil {
			return failf(stderr, "serve", "logfile: %v", err)
		}
		defer f.Close()
		logOut = f
	}
	opts := &slog.HandlerOptions{Level: lv}
	var logger *slog.Logger
	switch *format {
	case "text":
		logger = slog.New(slog.NewTextHandler(logOut, opts))
	case "json":
		logger = slog.New(slog.NewJSONHandler(logOut, opts))
	default:
		return usageErr(stderr, "serve", "--log-format must be text or json")
	}
	if *maxclients < 1 {
		return usageErr(stderr, "serve", "--maxclients must be at least 1")
	}
	if *timeout < 0 {
		return usageErr(stderr, "serve", "--timeout must not be negative")
	}
	if *writeTimeout <= 0 {
		return usageErr(stderr, "serve", "--client-write-timeout must be more than 0")
	}
	bulk, err := parseMemory(*maxBulk)
	if err != nil || bulk < 1 || bulk > 1<<40 {
		return usageErr(stderr, "serve", "--proto-max-bulk-len: not a size between 1 byte and 1 TiB: %q", *maxBulk)
	}
	query, err := parseMemory(*maxQuery)
	if err != nil || query < 1 || query > 1<<40 {
		return usageErr(stderr, "serve", "--client-query-buffer-limit: not a size between 1 byte and 1 TiB: %q", *maxQuery)
	}
	var noAppendLog bool
	switch strings.ToLower(*appendonly) {
	case "yes":
	case "no":
		noAppendLog = true
	default:
		return usageErr(stderr, "serve", "--appendonly must be yes or no, not %q", *appendonly)
	}
	if *metricsKeys < 0 || *metricsKeys > server.MaxMetricsKeys {
		return usageErr(stderr, "serve", "--metrics-keys must be from 0 to %d, not %d", server.MaxMetricsKeys, *metricsKeys)
	}
	if (*cert == "") != (*key == "") {
		return usageErr(stderr, "serve", "--tls-cert and --tls-key go together")
	}
	tlsParams := map[string]string{}
	if given["tls-ca-cert"] {
		tlsParams["tls-ca-cert-file"] = *caCert
	}
	if given["tls-auth-clients"] {
		tlsParams["tls-auth-clients"] = *authClients
	}
	cfg := server.Config{
		Addr: *addr, Dir: *dir, AppendFsync: *fsync, RequirePass: *pass, TLSAddr: *tlsAddr, TLSParams: tlsParams,
		TLSCert: *cert, TLSKey: *key, MaxMemory: limit, MetricsAddr: *metrics, Logger: logger,
		MetricsPassword: *metricsPass, MaxClients: *maxclients, Timeout: *timeout,
		WriteTimeout: *writeTimeout, MaxBulk: int(bulk), MaxQuery: int(query), EventLoops: *loops,
		NoAppendLog: noAppendLog, ReplicaOf: *replicaOf, MasterAuth: *masterAuth, MetricsKeys: *metricsKeys,
	}
	if *config != "" {
		// The file's settings, unless a flag or environment variable says
		// otherwise.
		cfg.ConfigFile = fc.ConfigFile
		cfg.SlowlogLogSlowerThan, cfg.SlowlogMaxLen = fc.SlowlogLogSlowerThan, fc.SlowlogMaxLen
		cfg.LatencyMonitorThreshold = fc.LatencyMonitorThreshold
		cfg.LatencyTracking, cfg.LatencyPercentiles = fc.LatencyTracking, fc.LatencyPercentiles
		cfg.NoPersistence = fc.NoPersistence
		cfg.TCPKeepAlive, cfg.AutoSaveLogBytes = fc.TCPKeepAlive, fc.AutoSaveLogBytes
		cfg.IgnoredDirectives = fc.IgnoredDirectives
		cfg.ClientOutputBufferLimit = fc.ClientOutputBufferLimit
		if !given["appendonly"] {
			cfg.NoAppendLog = fc.NoAppendLog
		}
		if !given["proto-max-bulk-len"] && fc.MaxBulk != 0 {
			cfg.MaxBulk = fc.MaxBulk
		}
		if !given["client-query-buffer-limit"] && fc.MaxQuery != 0 {
			cfg.MaxQuery = fc.MaxQuery
		}
		if !given["addr"] {
			cfg.Addr, cfg.ExtraAddrs = fc.Addr, fc.ExtraAddrs
		}
		if !given["tls-addr"] {
			cfg.TLSAddr, cfg.TLSExtraAddrs = fc.TLSAddr, fc.TLSExtraAddrs
		}
		for name, v := range fc.TLSParams {
			if _, set := tlsParams[name]; !set {
				tlsParams[name] = v
			}
		}
		if !given["dir"] && fc.Dir != "" {
			cfg.Dir = fc.Dir
		}
		if !given["appendfsync"] && fc.AppendFsync != "" {
			cfg.AppendFsync = fc.AppendFsync
		}
		if !given["requirepass"] && fc.RequirePass != "" {
			cfg.RequirePass = fc.RequirePass
		}
		if !given["maxmemory"] && fc.MaxMemory != 0 {
			cfg.MaxMemory = fc.MaxMemory
		}
		if !given["maxclients"] && fc.MaxClients != 0 {
			cfg.MaxClients = fc.MaxClients
		}
		if !given["replicaof"] && fc.ReplicaOf != "" {
			cfg.ReplicaOf = fc.ReplicaOf
		}
		if !given["masterauth"] && fc.MasterAuth != "" {
			cfg.MasterAuth = fc.MasterAuth
		}
		server.CopyReplicationSettings(&cfg, &fc)
		if !given["timeout"] && fc.Timeout != 0 {
			cfg.Timeout = fc.Timeout
		}
		if !given["tls-cert"] && !given["tls-key"] && fc.TLSCert != "" {
			cfg.TLSCert, cfg.TLSKey = fc.TLSCert, fc.TLSKey
		}
	}
	cfg.ProtectedMode = *protected
	if cfg.TLSCert != "" && cfg.TLSAddr == "" && *config == "" {
		// Earlier versions served TLS on --addr itself: say so rather
		// than serve plain text where TLS was meant.
		return usageErr(stderr, "serve", "--tls-cert and --tls-key serve TLS on --tls-addr, beside the plain-text --addr (--addr '' for TLS only): give --tls-addr")
	}
	if cfg.Addr == "" && cfg.TLSAddr == "" {
		return usageErr(stderr, "serve", "--addr '' and no --tls-addr: the server would not listen anywhere")
	}
	srv, err := server.New(cfg)
	if err != nil {
		return failf(stderr, "serve", "%v", err)
	}
	if err := srv.Listen(); err != nil {
		srv.Close()
		return failf(stderr, "serve", "%v", err)
	}
	if *pidFile != "" {
		if err := os.WriteFile(*pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			srv.Close()
			return failf(stderr, "serve", "pidfile: %v", err)
		}
		defer os.Remove(*pidFile)
	}
	if *pprofAddr != "" {
		ln, err := net.Listen("tcp", *pprofAddr)
		if err != nil {
			srv.Close()
			return failf(stderr, "serve", "--pprof-addr: %v", err)
		}
		defer ln.Close()
		go http.Serve(ln, pprofMux())
		logger.Info("profiling on /debug/pprof/", "addr", ln.Addr().String())
	}
	// The process's signal handler (output.go) hands SIGTERM/SIGINT to us.
	sig := make(chan os.Signal, 1)
	setSignalHook(sig)
	defer setSignalHook(nil)
	// SIGHUP re-reads the TLS certificate, key and CA files (the same
	// paths; CONFIG SET tls-cert-file … changes them), so that a renewal
	// hook or "systemctl reload" needs no password. Redis ignores SIGHUP;
	// without TLS so does this.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	hupDone := make(chan struct{})
	defer close(hupDone)
	go func() {
		for {
			select {
			case <-hup:
				if err := srv.ReloadTLS(); err != nil {
					logger.Warn("SIGHUP: TLS not reloaded", "err", err)
				}
			case <-hupDone:
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	notify, stopWatchdog := superviseSystemd(*supervised, srv, logger)
	defer stopWatchdog()
	select {
	case s := <-sig:
		logger.Info("signal received; saving and shutting down", "signal", s.String())
		stopWatchdog()
		notify.Send("STOPPING=1")
		if err := srv.Shutdown(); err != nil {
			return failf(stderr, "serve", "shutdown: %v", err)
		}
		<-done
		logger.Info("bye")
		return exitOK
	case err := <-done:
		srv.Close()
		if err != nil {
			return failf(stderr, "serve", "%v", err)
		}
		return exitOK
	}
}

// pprofMux serves net/http/pprof's handlers (CPU, heap, allocation, goroutine
// profiles and traces) without touching http.DefaultServeMux.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// parseMemory reads a size as the config file and CONFIG SET do: bytes,
// or with a unit (512mb, 4gb, 4GiB; k/m/g are powers of 1000 as in Redis).
func parseMemory(s string) (uint64, error) { return confval.ParseSize(s) }

// secondsFlag is a duration flag read as the config file reads one: a
// plain number is seconds (Redis's timeout 300), else a Go duration (5m).
type secondsFlag struct{ d *time.Duration }

func (f secondsFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f secondsFlag) Set(v string) error {
	d, err := confval.ParseDuration(v, time.Second)
	if err == nil {
		*f.d = d
	}
	return err
}

// yesNoFlag is a yes/no flag that takes its value as the next word
// (--protected-mode no), as Redis's command line does.
type yesNoFlag struct{ v *string }

func (f yesNoFlag) String() string {
	if f.v == nil {
		return ""
	}
	return *f.v
}

func (f yesNoFlag) Set(v string) error {
	b, err := confval.ParseBool(v)
	if err == nil {
		*f.v = confval.FormatBool(b)
	}
	return err
}

// superviseSystemd tells systemd (supervised systemd, or auto under
// systemd) that the server is ready — the data is loaded and it listens —
// and feeds the watchdog at half of WATCHDOG_USEC while the server is
// alive (/livez's test). stop ends the watchdog.
func superviseSystemd(mode string, srv *server.Server, logger *slog.Logger) (n sdnotify.Notifier, stop func()) {
	stop = func() {}
	if mode == "no" {
		return n, stop
	}
	n, ok := sdnotify.FromEnv()
	if !ok {
		if mode == "systemd" {
			logger.Warn("supervised systemd but NOTIFY_SOCKET is not set: not started by systemd with Type=notify")
		}
		return n, stop
	}
	if err := n.Send("READY=1\nSTATUS=serving on " + strings.Join(srv.ListenAddrs(), " ") + "\nMAINPID=" + strconv.Itoa(os.Getpid())); err != nil {
		logger.Warn("cannot notify systemd", "err", err)
	}
	every, on, err := sdnotify.WatchdogInterval()
	if err != nil {
		logger.Warn("systemd watchdog off", "err", err)
	}
	if !on {
		return n, stop
	}
	quit := make(chan struct{})
	var once sync.Once
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				if err := srv.Alive(); err != nil {
					logger.Error("not feeding the systemd watchdog", "err", err)
					continue
				}
				n.Send("WATCHDOG=1")
			}
		}
	}()
	return n, func() { once.Do(func() { close(quit) }) }
}
