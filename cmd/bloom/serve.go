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
	synopsis: "serve [config-file] [--addr host:port] [--port n] [--dir path] [--appendfsync always|everysec|no] [flags]\nserve --version",
	about: `Runs bloomkit's server: the Redis protocol (RESP2, RESP3 after HELLO 3) with
RedisBloom's BF.* and CF.* commands, so go-redis, redis-py and redis-cli code
written for RedisBloom works unchanged. Writes go to an append-only log in --dir
and to snapshots (SAVE, BGSAVE, and on SIGTERM/SIGINT); start-up loads them.

Every flag can also be set by an environment variable: BLOOMKIT_ and the
flag's name in capitals, '-' as '_' (BLOOMKIT_ADDR, BLOOMKIT_TLS_AUTH_CLIENTS).
Flags win over the environment, which wins over --config FILE; a setting
neither gives keeps the file's value. As with redis-server, the config file
may be the first argument instead (bloom serve /etc/redis/redis.conf --port
6380), --port sets the plain-text port on the address the file or --addr
binds, and --version prints the version.
docs/operations.md is the manual.`,
	examples: `bloom serve
redis-cli -p 6479 BF.ADD urls https://a.example
bloom serve --addr '' --tls-addr 0.0.0.0:6480 --tls-cert c.pem --tls-key k.pem --tls-ca-cert ca.pem
bloom serve --appendfsync always --maxmemory 4GiB --metrics-addr 127.0.0.1:9479
bloom serve --config /etc/bloomkit.conf`,
}

// serveFlag is one flag of bloom serve with its environment variable.
// A flag that names a config-file directive is applied by the config-file
// reader (server.ApplyDirective), so that it means what the directive
// means; the others set their Config field with apply, or (apply nil) are
// the process's own (log format, profiling address).
type serveFlag struct {
	name, env, def, usage string
	directive             string
	apply                 func(c *server.Config, v string) error
}

// serveFlags are bloom serve's flags. Each is applied only when given (on
// the command line or in the environment), over the Config the config
// file gave (or a zero Config, whose defaults are the flags' defaults), so
// that a setting the file holds can never be lost for want of a flag.
var serveFlags = []serveFlag{
	{name: "addr", env: "BLOOMKIT_ADDR", def: server.DefaultAddr, usage: "plain-text listen address ('' for none: TLS only)",
		apply: func(c *server.Config, v string) error { c.Addr, c.ExtraAddrs = v, nil; return nil }},
	{name: "port", env: "BLOOMKIT_PORT", usage: "plain-text port, on the hosts --addr or the config file's bind give (redis-server's --port; 0: TLS only)",
		apply: setPort},
	{name: "dir", env: "BLOOMKIT_DIR", def: "bloomkit-data", usage: "data directory (snapshot and append-only log)", directive: "dir"},
	{name: "appendonly", env: "BLOOMKIT_APPENDONLY", def: "yes", usage: "yes: log every write (durable as --appendfsync says); no: snapshots only (SAVE, BGSAVE, save points, shutdown), as Redis's appendonly no", directive: "appendonly"},
	{name: "appendfsync", env: "BLOOMKIT_APPENDFSYNC", def: "everysec", usage: "fsync the log: always, everysec or no", directive: "appendfsync"},
	{name: "requirepass", env: "BLOOMKIT_REQUIREPASS", usage: "password clients must AUTH with", directive: "requirepass"},
	{name: "replicaof", env: "BLOOMKIT_REPLICAOF", usage: `start as the replica of this master, "host port" (as Redis's --replicaof)`,
		apply: func(c *server.Config, v string) error {
			if strings.TrimSpace(v) == "" {
				c.ReplicaOf = ""
				return nil
			}
			return server.ApplyDirective(c, "replicaof", strings.Fields(v)...)
		}},
	{name: "masterauth", env: "BLOOMKIT_MASTERAUTH", usage: "password this replica gives its master", directive: "masterauth"},
	{name: "tls-addr", env: "BLOOMKIT_TLS_ADDR", usage: "serve TLS on this address too (Redis's tls-port), with --tls-cert and --tls-key",
		apply: func(c *server.Config, v string) error { c.TLSAddr, c.TLSExtraAddrs = v, nil; return nil }},
	{name: "tls-cert", env: "BLOOMKIT_TLS_CERT", usage: "TLS certificate chain (PEM), for --tls-addr", directive: "tls-cert-file"},
	{name: "tls-key", env: "BLOOMKIT_TLS_KEY", usage: "TLS private key (PEM)", directive: "tls-key-file"},
	{name: "tls-ca-cert", env: "BLOOMKIT_TLS_CA_CERT", usage: "CA certificates (PEM) that client certificates are verified against", directive: "tls-ca-cert-file"},
	{name: "tls-auth-clients", env: "BLOOMKIT_TLS_AUTH_CLIENTS", def: "yes", usage: "yes: TLS clients need a certificate signed by --tls-ca-cert; optional: verified if given; no: not asked for (as Redis)", directive: "tls-auth-clients"},
	{name: "maxmemory", env: "BLOOMKIT_MAXMEMORY", def: "0", usage: "memory limit for filters, e.g. 4GiB, 512mb (0: 90% of RAM)", directive: "maxmemory"},
	{name: "metrics-addr", env: "BLOOMKIT_METRICS_ADDR", usage: "serve Prometheus /metrics and /healthz here",
		apply: func(c *server.Config, v string) error { c.MetricsAddr = v; return nil }},
	{name: "pprof-addr", env: "BLOOMKIT_PPROF_ADDR", usage: "serve Go's /debug/pprof profiles here (no auth: bind it to loopback)"},
	{name: "metrics-keys", env: "BLOOMKIT_METRICS_KEYS", def: "0", usage: fmt.Sprintf("export per-filter series (labelled by key name) on /metrics for at most this many keys, the first in SCAN order (0: none; at most %d)", server.MaxMetricsKeys),
		apply: func(c *server.Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > server.MaxMetricsKeys {
				return fmt.Errorf("want a number from 0 to %d, not %q", server.MaxMetricsKeys, v)
			}
			c.MetricsKeys = n
			return nil
		}},
	{name: "metrics-password", env: "BLOOMKIT_METRICS_PASSWORD", usage: "require HTTP basic auth with this password for /metrics",
		apply: func(c *server.Config, v string) error { c.MetricsPassword = v; return nil }},
	{name: "maxclients", env: "BLOOMKIT_MAXCLIENTS", def: "10000", usage: "maximum open client connections", directive: "maxclients"},
	{name: "timeout", env: "BLOOMKIT_TIMEOUT", def: "0", usage: "close clients idle this long, e.g. 300 or 5m (0: never)", directive: "timeout"},
	{name: "protected-mode", env: "BLOOMKIT_PROTECTED_MODE", def: "yes", usage: "yes: without a password, refuse clients not on the loopback interface (as Redis)", directive: "protected-mode"},
	{name: "supervised", env: "BLOOMKIT_SUPERVISED", def: "no", usage: "no, auto or systemd: tell systemd (Type=notify) when ready and stopping, and feed its watchdog", directive: "supervised"},
	{name: "pidfile", env: "BLOOMKIT_PIDFILE", usage: "write the process id to this file while serving", directive: "pidfile"},
	{name: "logfile", env: "BLOOMKIT_LOGFILE", usage: "append the log to this file instead of standard error", directive: "logfile"},
	{name: "event-loops", env: "BLOOMKIT_EVENT_LOOPS", def: "0", usage: "epoll loops serving plain TCP clients (0: half the CPUs)",
		apply: func(c *server.Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("want a number, 0 or more, not %q", v)
			}
			c.EventLoops = n
			return nil
		}},
	{name: "client-write-timeout", env: "BLOOMKIT_CLIENT_WRITE_TIMEOUT", def: "60s", usage: "disconnect a client whose replies make no progress this long",
		apply: func(c *server.Config, v string) error {
			d, err := confval.ParseDuration(v, time.Second)
			if err != nil || d <= 0 {
				return fmt.Errorf("want seconds or a duration more than 0, not %q", v)
			}
			c.WriteTimeout = d
			return nil
		}},
	{name: "proto-max-bulk-len", env: "BLOOMKIT_PROTO_MAX_BULK_LEN", def: "512mb", usage: "largest argument of a request", directive: "proto-max-bulk-len"},
	{name: "client-query-buffer-limit", env: "BLOOMKIT_CLIENT_QUERY_BUFFER_LIMIT", def: "1gb", usage: "largest request", directive: "client-query-buffer-limit"},
	{name: "log-level", env: "BLOOMKIT_LOG_LEVEL", def: "info", usage: "log level: debug, info, warn, error (or Redis's verbose, notice, warning, nothing)", directive: "loglevel"},
	{name: "log-format", env: "BLOOMKIT_LOG_FORMAT", def: "text", usage: "log format: text or json"},
}

func runServe(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := func(name, def string) string {
		if v, ok := os.LookupEnv(name); ok {
			return v
		}
		return def
	}
	fs := newFlags("serve")
	config := fs.String("config", env("BLOOMKIT_CONFIG", ""), "read settings from this Redis-style config file (CONFIG REWRITE writes to it); flags win over it")
	// --help shows the defaults, never the environment's values (which
	// may be passwords).
	vals := make(map[string]*string, len(serveFlags))
	for _, f := range serveFlags {
		vals[f.name] = fs.String(f.name, f.def, f.usage)
	}
	showVersion := fs.Bool("version", false, "print the version and exit (as redis-server --version)")
	pos, code, ok := parseFlags(fs, serveHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	if *showVersion {
		fmt.Fprintf(stdout, "bloom serve %s (Redis protocol as redis_version %s, RedisBloom's commands as module bf %d)\n", version(), server.RedisVersion, server.RedisBloomVersion)
		return exitOK
	}
	if len(pos) > 0 && *config == "" {
		// redis-server's form: the config file first, flags after it.
		*config, pos = pos[0], pos[1:]
	}
	if len(pos) > 0 {
		return usageErr(stderr, "serve", "unexpected argument %q", pos[0])
	}
	// The config file's Config is the start; the flags and environment
	// variables given are applied over it (flags win over the
	// environment, which wins over the file).
	var cfg server.Config
	if *config != "" {
		if err := server.ReadConfigFile(*config, &cfg); err != nil {
			return failf(stderr, "serve", "%v", err)
		}
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, f := range serveFlags {
		if v, ok := os.LookupEnv(f.env); ok && !given[f.name] {
			*vals[f.name] = v
			given[f.name] = true
		}
	}
	for _, f := range serveFlags {
		if !given[f.name] {
			continue
		}
		var err error
		switch v := *vals[f.name]; {
		case f.directive != "":
			err = server.ApplyDirective(&cfg, f.directive, v)
		case f.apply != nil:
			err = f.apply(&cfg, v)
		}
		if err != nil {
			// The error names the value unless it is a password.
			return usageErr(stderr, "serve", "--%s: %v", f.name, err)
		}
	}
	if *config == "" && !given["addr"] && !given["port"] {
		cfg.Addr = server.DefaultAddr
	}
	level := "info"
	if cfg.LogLevel != "" {
		level, _ = server.LogLevelName(cfg.LogLevel)
	}
	supervised := cfg.Supervised
	if supervised == "" {
		supervised = "no"
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return usageErr(stderr, "serve", "--log-level: %v", err)
	}
	logOut := stderr
	if cfg.LogFile != "" {
		f, err := os.OpenFile(cfg.LogFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
		if err != nil {
			return failf(stderr, "serve", "logfile: %v", err)
		}
		defer f.Close()
		logOut = f
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch *vals["log-format"] {
	case "text":
		cfg.Logger = slog.New(slog.NewTextHandler(logOut, opts))
	case "json":
		cfg.Logger = slog.New(slog.NewJSONHandler(logOut, opts))
	default:
		return usageErr(stderr, "serve", "--log-format must be text or json")
	}
	logger := cfg.Logger
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return usageErr(stderr, "serve", "--tls-cert and --tls-key go together")
	}
	if cfg.TLSCert != "" && cfg.TLSAddr == "" && *config == "" {
		// Earlier versions served TLS on --addr itself: say so rather
		// than serve plain text where TLS was meant.
		return usageErr(stderr, "serve", "--tls-cert and --tls-key serve TLS on --tls-addr, beside the plain-text --addr (--addr '' for TLS only): give --tls-addr")
	}
	if cfg.Addr == "" && cfg.TLSAddr == "" && cfg.UnixSocket == "" {
		return usageErr(stderr, "serve", "--addr '' and no --tls-addr: the server would not listen anywhere")
	}
	pidFile, pprofAddr := cfg.PidFile, *vals["pprof-addr"]
	// As redis-server: listen first, answer LOADING while the data loads.
	cfg.LoadWhileServing = true
	srv, err := server.New(cfg)
	if err != nil {
		return failf(stderr, "serve", "%v", err)
	}
	if err := srv.Listen(); err != nil {
		srv.Close()
		return failf(stderr, "serve", "%v", err)
	}
	if pidFile != "" {
		if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			srv.Close()
			return failf(stderr, "serve", "pidfile: %v", err)
		}
		defer os.Remove(pidFile)
	}
	if pprofAddr != "" {
		ln, err := net.Listen("tcp", pprofAddr)
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
	notify, stopWatchdog := superviseSystemd(supervised, srv, logger)
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

// setPort is --port: the plain-text listeners' port, on the hosts they
// have (the config file's bind, --addr, or 127.0.0.1); 0 turns plain text
// off, as Redis's port 0.
func setPort(c *server.Config, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("want a port from 0 to 65535, not %q", v)
	}
	if n == 0 {
		c.Addr, c.ExtraAddrs = "", nil
		return nil
	}
	onPort := func(addr string) string {
		opt, rest := "", addr
		if strings.HasPrefix(addr, "-") {
			opt, rest = "-", addr[1:]
		}
		host, _, err := net.SplitHostPort(rest)
		if err != nil {
			return addr
		}
		return opt + net.JoinHostPort(host, v)
	}
	if c.Addr == "" {
		c.Addr = server.DefaultAddr
	}
	c.Addr = onPort(c.Addr)
	for i, a := range c.ExtraAddrs {
		c.ExtraAddrs[i] = onPort(a)
	}
	return nil
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

// superviseSystemd tells systemd (supervised systemd, or auto under
// systemd) that the server is loading its data, then that it is ready
// once the data is loaded (READY=1, as redis-server sends it after
// loading), and feeds the watchdog at half of WATCHDOG_USEC while the
// server is alive (/livez's test), loading included. stop ends both.
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
	ready := srv.Loaded()
	select {
	case <-ready:
	default:
		n.Send("STATUS=loading the data set; serving LOADING until it is in memory")
	}
	every, on, err := sdnotify.WatchdogInterval()
	if err != nil {
		logger.Warn("systemd watchdog off", "err", err)
	}
	quit := make(chan struct{})
	var once sync.Once
	go func() {
		var tick <-chan time.Time
		if on {
			t := time.NewTicker(every)
			defer t.Stop()
			tick = t.C
		}
		for {
			select {
			case <-quit:
				return
			case <-ready:
				ready = nil
				if err := n.Send("READY=1\nSTATUS=serving on " + strings.Join(srv.ListenAddrs(), " ") + "\nMAINPID=" + strconv.Itoa(os.Getpid())); err != nil {
					logger.Warn("cannot notify systemd", "err", err)
				}
			case <-tick:
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
