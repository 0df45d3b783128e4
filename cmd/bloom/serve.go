package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"strings"
	"time"

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
BLOOMKIT_APPENDFSYNC, BLOOMKIT_REQUIREPASS, BLOOMKIT_TLS_CERT, BLOOMKIT_TLS_KEY,
BLOOMKIT_MAXMEMORY, BLOOMKIT_METRICS_ADDR, BLOOMKIT_METRICS_PASSWORD, BLOOMKIT_PPROF_ADDR, BLOOMKIT_MAXCLIENTS,
BLOOMKIT_TIMEOUT, BLOOMKIT_CLIENT_WRITE_TIMEOUT, BLOOMKIT_PROTO_MAX_BULK_LEN,
BLOOMKIT_CLIENT_QUERY_BUFFER_LIMIT, BLOOMKIT_EVENT_LOOPS, BLOOMKIT_CONFIG, BLOOMKIT_LOG_LEVEL, BLOOMKIT_LOG_FORMAT.
Flags win over the environment, which wins over --config FILE.
docs/operations.md is the manual.`,
	examples: `bloom serve
redis-cli -p 6479 BF.ADD urls https://a.example
bloom serve --addr 0.0.0.0:6479 --requirepass s3cret --tls-cert c.pem --tls-key k.pem
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
		if v, err := time.ParseDuration(env(name, "")); err == nil {
			return v
		}
		return def
	}
	fs := newFlags("serve")
	config := fs.String("config", env("BLOOMKIT_CONFIG", ""), "read settings from this Redis-style config file (CONFIG REWRITE writes to it); flags win over it")
	addr := fs.String("addr", env("BLOOMKIT_ADDR", server.DefaultAddr), "listen address")
	dir := fs.String("dir", env("BLOOMKIT_DIR", "bloomkit-data"), "data directory (snapshot and append-only log)")
	appendonly := fs.String("appendonly", env("BLOOMKIT_APPENDONLY", "yes"), "yes: log every write (durable as --appendfsync says); no: snapshots only (SAVE, BGSAVE, save points, shutdown), as Redis's appendonly no")
	fsync := fs.String("appendfsync", env("BLOOMKIT_APPENDFSYNC", "everysec"), "fsync the log: always, everysec or no")
	pass := fs.String("requirepass", env("BLOOMKIT_REQUIREPASS", ""), "password clients must AUTH with")
	cert := fs.String("tls-cert", env("BLOOMKIT_TLS_CERT", ""), "TLS certificate (PEM); with --tls-key enables TLS")
	key := fs.String("tls-key", env("BLOOMKIT_TLS_KEY", ""), "TLS private key (PEM)")
	maxmem := fs.String("maxmemory", env("BLOOMKIT_MAXMEMORY", "0"), "memory limit for filters, e.g. 4GiB, 512mb (0: 90% of RAM)")
	metrics := fs.String("metrics-addr", env("BLOOMKIT_METRICS_ADDR", ""), "serve Prometheus /metrics and /healthz here")
	pprofAddr := fs.String("pprof-addr", env("BLOOMKIT_PPROF_ADDR", ""), "serve Go's /debug/pprof profiles here (no auth: bind it to loopback)")
	metricsPass := fs.String("metrics-password", env("BLOOMKIT_METRICS_PASSWORD", ""), "require HTTP basic auth with this password for /metrics")
	maxclients := fs.Int("maxclients", envInt("BLOOMKIT_MAXCLIENTS", 10000), "maximum open client connections")
	timeout := fs.Duration("timeout", envDuration("BLOOMKIT_TIMEOUT", 0), "close clients idle this long, e.g. 300s (0: never)")
	loops := fs.Int("event-loops", envInt("BLOOMKIT_EVENT_LOOPS", 0), "epoll loops serving plain TCP clients (0: half the CPUs)")
	writeTimeout := fs.Duration("client-write-timeout", envDuration("BLOOMKIT_CLIENT_WRITE_TIMEOUT", 60*time.Second), "disconnect a client whose replies make no progress this long")
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
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return usageErr(stderr, "serve", "--log-level: %v", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	var logger *slog.Logger
	switch *format {
	case "text":
		logger = slog.New(slog.NewTextHandler(stderr, opts))
	case "json":
		logger = slog.New(slog.NewJSONHandler(stderr, opts))
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
	if (*cert == "") != (*key == "") {
		return usageErr(stderr, "serve", "--tls-cert and --tls-key go together")
	}
	cfg := server.Config{
		Addr: *addr, Dir: *dir, AppendFsync: *fsync, RequirePass: *pass,
		TLSCert: *cert, TLSKey: *key, MaxMemory: limit, MetricsAddr: *metrics, Logger: logger,
		MetricsPassword: *metricsPass, MaxClients: *maxclients, Timeout: *timeout,
		WriteTimeout: *writeTimeout, MaxBulk: int(bulk), MaxQuery: int(query), EventLoops: *loops,
		NoAppendLog: noAppendLog,
	}
	if *config != "" {
		// The file's settings, unless a flag or environment variable says
		// otherwise.
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		for name, envName := range map[string]string{"addr": "BLOOMKIT_ADDR", "dir": "BLOOMKIT_DIR",
			"appendfsync": "BLOOMKIT_APPENDFSYNC", "requirepass": "BLOOMKIT_REQUIREPASS", "maxmemory": "BLOOMKIT_MAXMEMORY",
			"maxclients": "BLOOMKIT_MAXCLIENTS", "timeout": "BLOOMKIT_TIMEOUT",
			"proto-max-bulk-len": "BLOOMKIT_PROTO_MAX_BULK_LEN", "client-query-buffer-limit": "BLOOMKIT_CLIENT_QUERY_BUFFER_LIMIT",
			"appendonly": "BLOOMKIT_APPENDONLY"} {
			if _, ok := os.LookupEnv(envName); ok {
				given[name] = true
			}
		}
		fc := server.Config{}
		if err := server.ReadConfigFile(*config, &fc); err != nil {
			return failf(stderr, "serve", "%v", err)
		}
		cfg.ConfigFile = fc.ConfigFile
		cfg.SlowlogLogSlowerThan, cfg.SlowlogMaxLen = fc.SlowlogLogSlowerThan, fc.SlowlogMaxLen
		cfg.NoPersistence = fc.NoPersistence
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
			cfg.Addr = fc.Addr
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
		if !given["timeout"] && fc.Timeout != 0 {
			cfg.Timeout = fc.Timeout
		}
	}
	srv, err := server.New(cfg)
	if err != nil {
		return failf(stderr, "serve", "%v", err)
	}
	if err := srv.Listen(); err != nil {
		srv.Close()
		return failf(stderr, "serve", "%v", err)
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
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	select {
	case s := <-sig:
		logger.Info("signal received; saving and shutting down", "signal", s.String())
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

// parseMemory reads sizes like Redis's maxmemory: plain bytes, or with a
// unit k/kb/m/mb/g/gb (powers of 1024, as Redis) or KiB/MiB/GiB.
func parseMemory(s string) (uint64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	units := []struct {
		suffix string
		mult   uint64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
		{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1}}
	mult := uint64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || v < 0 {
		return 0, errors.New("not a size: " + strconv.Quote(s))
	}
	if v*float64(mult) >= 1<<63 {
		return 0, fmt.Errorf("size too large: %s", s)
	}
	return uint64(v * float64(mult)), nil
}
