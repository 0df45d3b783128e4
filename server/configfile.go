package server

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/bloomkit/bloomkit/internal/confval"
	"github.com/bloomkit/bloomkit/server/internal/resp"
)

// ReadConfigFile applies a Redis-style config file to cfg: one directive a
// line, "name value...", '#' comments, values with spaces in double quotes,
// "include path" to read another file in place. The directives of Redis's
// own redis.conf either work with the same meaning (the table in
// docs/operations.md) or, when they have no meaning here, are accepted and
// listed in cfg.IgnoredDirectives with the reason, which the server logs
// as one warning. A misspelt directive or a bad value is an error naming
// the file and line. cfg.ConfigFile is set to path, so that CONFIG
// REWRITE writes changed settings back to it.
func ReadConfigFile(path string, cfg *Config) error {
	r := configReader{cfg: cfg, ignored: map[string]string{}}
	if cfg.Addr != "" {
		var host string
		host, r.port = splitHostPort(cfg.Addr)
		r.hosts = []string{host}
	}
	if err := r.file(path, 0); err != nil {
		return err
	}
	if len(r.hosts) == 0 {
		r.hosts = []string{defaultHost}
	}
	port := r.port
	if port == "" {
		port = defaultPort
	}
	// As in Redis: port is plain text, tls-port TLS, on every bind
	// address; port 0 turns the plain-text listener off.
	addrs := func(port string) (first string, extra []string) {
		for i, h := range r.hosts {
			opt := ""
			if strings.HasPrefix(h, "-") {
				opt, h = "-", h[1:]
			}
			if i == 0 {
				first = net.JoinHostPort(h, port)
			} else {
				extra = append(extra, opt+net.JoinHostPort(h, port))
			}
		}
		return first, extra
	}
	tlsOn := r.tlsPort != "" && r.tlsPort != "0"
	if port == "0" && !tlsOn {
		return fmt.Errorf("server: config file %s: port 0 and no tls-port: the server would not listen anywhere", path)
	}
	cfg.Addr, cfg.ExtraAddrs = "", nil
	if port != "0" {
		cfg.Addr, cfg.ExtraAddrs = addrs(port)
	}
	cfg.TLSAddr, cfg.TLSExtraAddrs = "", nil
	if tlsOn {
		cfg.TLSAddr, cfg.TLSExtraAddrs = addrs(r.tlsPort)
	}
	cfg.IgnoredDirectives = cfg.IgnoredDirectives[:0]
	for name, why := range r.ignored {
		cfg.IgnoredDirectives = append(cfg.IgnoredDirectives, name+" ("+why+")")
	}
	sort.Strings(cfg.IgnoredDirectives)
	cfg.ConfigFile = path
	return nil
}

// maxIncludeDepth bounds include chains (a file including itself).
const maxIncludeDepth = 10

type configReader struct {
	cfg     *Config
	hosts   []string // bind's addresses; "-" before one: it may be missing
	port    string
	tlsPort string
	line    int               // the line being read, for user directives' messages
	ignored map[string]string // directive → why it has no effect
	// saveSeen is set at the first save line, which replaces the default
	// save points (later ones add to them).
	saveSeen bool
}

// ignoredDirectives are Redis directives with no meaning for bloomkit,
// accepted so that a redis.conf starts, each with the reason.
var ignoredDirectives = map[string]string{}

func ignore(why string, names ...string) {
	for _, n := range names {
		ignoredDirectives[n] = why
	}
}

func init() {
	ignore("one database", "databases")
	ignore("no logo or process title", "always-show-logo", "set-proc-title", "proc-title-template", "syslog-enabled", "syslog-ident", "syslog-facility", "crash-log-enabled", "crash-memcheck-enabled")
	ignore("the kernel's backlog is used", "tcp-backlog")
	ignore("writes are always refused (MISCONF) while the log cannot be written", "stop-writes-on-bgsave-error")
	ignore("snapshots are always checksummed and uncompressed", "rdbcompression", "rdbchecksum", "rdb-del-sync-files", "sanitize-dump-payload")
	ignore("bloomkit names its own files in dir", "dbfilename", "appendfilename", "appenddirname")
	ignore("snapshots are written when the log grows (auto-aof-rewrite-min-size) and at shutdown", "auto-aof-rewrite-percentage")
	ignore("a full sync always writes the snapshot to a file first and the replica loads it from its own", "repl-diskless-sync",
		"repl-diskless-sync-delay", "repl-diskless-sync-max-replicas", "repl-diskless-load", "slave-lazy-flush", "replica-lazy-flush")
	ignore("replication links always disable Nagle's algorithm", "repl-disable-tcp-nodelay")
	ignore("the backlog is kept while the server runs", "repl-backlog-ttl")
	ignore("a replica applies its master's writes whatever its own maxmemory", "replica-ignore-maxmemory", "slave-ignore-maxmemory")
	ignore("a command from the master that fails on a replica is logged and skipped", "propagation-error-behavior")
	ignore("memory is freed as it is released", "lazyfree-lazy-eviction", "lazyfree-lazy-expire", "lazyfree-lazy-server-del",
		"lazyfree-lazy-user-del", "lazyfree-lazy-user-flush", "activedefrag", "active-defrag-ignore-bytes",
		"active-defrag-threshold-lower", "active-defrag-threshold-upper", "active-defrag-cycle-min", "active-defrag-cycle-max",
		"active-defrag-max-scan-fields", "jemalloc-bg-thread", "activerehashing")
	ignore("set by the service manager", "oom-score-adj", "oom-score-adj-values", "disable-thp", "server_cpulist", "bio_cpulist",
		"aof_rewrite_cpulist", "bgsave_cpulist", "ignore-warnings")
	ignore("the log is fsynced by appendfsync alone", "no-appendfsync-on-rewrite", "aof-rewrite-incremental-fsync", "rdb-save-incremental-fsync")
	ignore("a torn last log record is always cut off with a warning", "aof-load-truncated")
	ignore("the log format is bloomkit's own", "aof-use-rdb-preamble", "aof-timestamp-enabled")
	ignore("no keyspace notifications", "notify-keyspace-events")
	ignore("no hashes, lists, sets, sorted sets, HyperLogLogs or streams", "hash-max-listpack-entries", "hash-max-listpack-value",
		"hash-max-ziplist-entries", "hash-max-ziplist-value", "list-max-listpack-size", "list-max-ziplist-size",
		"list-compress-depth", "set-max-intset-entries", "set-max-listpack-entries", "set-max-listpack-value",
		"zset-max-listpack-entries", "zset-max-listpack-value", "zset-max-ziplist-entries", "zset-max-ziplist-value",
		"hll-sparse-max-bytes", "stream-node-max-bytes", "stream-node-max-entries")
	ignore("replies are bounded by client-write-timeout", "maxmemory-clients")
	ignore("the server's timers have fixed rates", "hz", "dynamic-hz")
	ignore("filters are never evicted (noeviction)", "maxmemory-samples", "maxmemory-eviction-tenacity", "lfu-log-factor", "lfu-decay-time")
	ignore("no Lua scripts, modules or functions", "lua-time-limit", "busy-reply-threshold", "loadmodule", "enable-module-command",
		"enable-protected-configs")
	ignore("no cluster mode", "cluster-enabled", "cluster-config-file", "cluster-node-timeout", "cluster-port",
		"cluster-allow-pubsubshard-when-down", "cluster-allow-reads-when-down", "cluster-allow-replica-migration",
		"cluster-announce-bus-port", "cluster-announce-hostname", "cluster-announce-human-nodename",
		"cluster-announce-ip", "cluster-announce-port", "cluster-announce-tls-port", "cluster-link-sendbuf-limit",
		"cluster-migration-barrier", "cluster-ping-interval", "cluster-preferred-endpoint-type",
		"cluster-replica-no-failover", "cluster-replica-validity-factor", "cluster-require-full-coverage",
		"cluster-slave-no-failover", "cluster-slave-validity-factor")
	// Newer Redis versions' settings, so that their redis.conf starts the
	// server (with a warning naming each) instead of stopping it.
	ignore("clients are served by --event-loops (half the CPUs by default)", "io-threads", "io-threads-do-reads")
	ignore("set by the service manager", "server-cpulist", "bio-cpulist", "aof-rewrite-cpulist", "bgsave-cpulist")
	ignore("expiry has a fixed effort", "active-expire-effort")
	ignore("superseded log files are removed at once", "aof-disable-auto-gc")
	ignore("the system picks the replication link's source address", "bind-source-addr")
	ignore("connections are accepted as they come (maxclients bounds them)", "max-new-connections-per-cycle", "max-new-tls-connections-per-cycle")
	ignore("no SORT and no scripts: nothing compares strings by locale", "locale-collate")
	ignore("no crash report is written, so none shows keys or values", "hide-user-data-from-log")
	ignore("no client-side caching (CLIENT TRACKING)", "tracking-table-max-keys")
	ignore("SIGTERM and SIGINT save and exit, without waiting for replicas", "shutdown-on-sigint", "shutdown-on-sigterm", "shutdown-timeout")
	ignore("a replica whose log fails goes on applying its master's stream but acknowledges nothing (WAIT does not count it) until its log is whole again", "replica-ignore-disk-write-errors")
	ignore("clients start with RESP2 and choose RESP3 with HELLO 3", "client-default-resp")
	ignore("no socket marks", "socket-mark-id")
	ignore("Redis's own debugging and test settings", "key-load-delay", "rdb-key-save-delay", "loading-process-events-interval-bytes",
		"req-res-logfile", "use-exit-on-panic", "watchdog-period")
}

func (r *configReader) file(path string, depth int) error {
	if depth > maxIncludeDepth {
		return fmt.Errorf("server: config file %s: includes nested more than %d deep", path, maxIncludeDepth)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("server: config file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		args, err := splitConfigLine(line)
		if err != nil {
			return fmt.Errorf("server: %s:%d: %v", path, n, err)
		}
		if len(args) == 0 {
			continue
		}
		name := strings.ToLower(args[0])
		r.line = n
		if err := r.directive(name, args[1:], path, depth); err != nil {
			return fmt.Errorf("server: %s:%d: %v", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("server: config file %s: %w", path, err)
	}
	return nil
}

func (r *configReader) directive(name string, args []string, path string, depth int) error {
	cfg := r.cfg
	if name == "include" {
		if len(args) != 1 {
			return fmt.Errorf("include takes one file")
		}
		return r.file(args[0], depth+1)
	}
	if name == "loadmodule" && len(args) > 0 && isRedisBloomModule(args[0]) {
		// RedisBloom's commands are built in; its arguments still count.
		if cfg.FilterParams == nil {
			cfg.FilterParams = map[string]string{}
		}
		return redisBloomModuleArgs(args[1:], cfg.FilterParams)
	}
	if name == "client-output-buffer-limit" {
		// Several lines add up, one class each (as in redis.conf).
		v := strings.TrimSpace(cfg.ClientOutputBufferLimit + " " + strings.Join(args, " "))
		if _, err := parseOutputLimits(v, defaultOutputLimits); err != nil {
			return fmt.Errorf("client-output-buffer-limit: %v", err)
		}
		cfg.ClientOutputBufferLimit = v
		return nil
	}
	if why, ok := ignoredDirectives[name]; ok {
		r.ignored[name] = why
		return nil
	}
	if _, ok := lookupFilterParam(name); ok {
		if len(args) != 1 {
			return fmt.Errorf("%s takes one value", name)
		}
		if cfg.FilterParams == nil {
			cfg.FilterParams = map[string]string{}
		}
		cfg.FilterParams[name] = args[0]
		_, err := newFilterConfig(cfg.FilterParams)
		return err
	}
	switch name {
	case "bind":
		if len(args) == 0 {
			return fmt.Errorf("bind: want one or more addresses")
		}
		r.hosts = nil
		for _, h := range args {
			if ip := net.ParseIP(strings.TrimPrefix(h, "-")); ip == nil && strings.TrimPrefix(h, "-") != "localhost" && strings.TrimPrefix(h, "-") != "*" {
				return fmt.Errorf("bind: %q is not an IP address", h)
			}
			if strings.TrimPrefix(h, "-") == "*" {
				h = strings.Replace(h, "*", "0.0.0.0", 1)
			}
			r.hosts = append(r.hosts, h)
		}
		return nil
	case "latency-tracking-info-percentiles":
		// Several values, as Redis writes them: 50 99 99.9 (or quoted).
		ps, err := parsePercentiles(strings.Join(args, " "))
		if err != nil {
			return fmt.Errorf("%s: want numbers from 0 to 100, not %q", name, strings.Join(args, " "))
		}
		cfg.LatencyPercentiles = append([]float64{}, ps...)
		return nil
	}
	if name == "replicaof" || name == "slaveof" {
		if len(args) != 2 {
			return fmt.Errorf("%s: want host and port", name)
		}
		if _, _, err := parseReplicaOf(args[0] + " " + args[1]); err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		r.cfg.ReplicaOf = args[0] + " " + args[1]
		return nil
	}
	if name == "rename-command" {
		// rename-command NAME NEWNAME (or "" to turn it off): checked
		// against the command table when the server starts.
		if len(args) != 2 {
			return fmt.Errorf("rename-command: want a command and its new name (\"\" to turn it off)")
		}
		if cfg.RenameCommands == nil {
			cfg.RenameCommands = map[string]string{}
		}
		cfg.RenameCommands[strings.ToLower(args[0])] = strings.ToLower(args[1])
		return nil
	}
	if name == "user" {
		// user <name> <rules...>: checked when the server starts.
		if len(args) < 1 {
			return fmt.Errorf("user: want a name and rules")
		}
		cfg.Users = append(cfg.Users, UserRule{Name: args[0], Rules: args[1:], Where: fmt.Sprintf("%s:%d", path, r.line)})
		return nil
	}
	if name == "save" {
		// Redis's way: the file's first save line replaces the default
		// points, the next ones add theirs; save "" clears them. A line
		// may give its pairs as words or as one quoted string.
		p, err := parseSavePoints(strings.Join(args, " "))
		if err != nil {
			return fmt.Errorf("save %q: %v", strings.Join(args, " "), err)
		}
		if !r.saveSeen || len(p) == 0 {
			r.saveSeen = true
			cfg.SavePoints = &p
			return nil
		}
		all := append(*cfg.SavePoints, p...)
		cfg.SavePoints = &all
		return nil
	}
	if len(args) != 1 {
		if name == "oom-score-adj-values" {
			return nil
		}
		if !knownDirective(name) {
			return fmt.Errorf("unknown directive %q", name)
		}
		return fmt.Errorf("%s: want one value, not %d", name, len(args))
	}
	v := args[0]
	if st := lookupSetting(name); st != nil && st.file != nil {
		// The table's entry reads it, with CONFIG SET's parser and range.
		if err := st.file(cfg, v); err != nil {
			return fmt.Errorf("%s %q: %v", name, redactValue(name, v), err)
		}
		return nil
	}
	bad := func(what string) error { return fmt.Errorf("%s: %s, not %q", name, what, v) }
	num := func(lo, hi int64) (int64, error) {
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil || x < lo || x > hi {
			return 0, bad(fmt.Sprintf("want an integer from %d to %d", lo, hi))
		}
		return x, nil
	}
	boolean := func() (bool, error) {
		b, err := confval.ParseBool(v)
		if err != nil {
			return false, bad("want yes or no")
		}
		return b, nil
	}
	switch name {
	case "port":
		if _, err := num(0, 65535); err != nil {
			return err
		}
		r.port = v
	case "tls-port":
		if _, err := num(0, 65535); err != nil {
			return err
		}
		r.tlsPort = v
	case "tls-cert-file":
		cfg.TLSCert = v
	case "tls-key-file":
		cfg.TLSKey = v
	case "maxmemory-policy":
		if strings.ToLower(v) != "noeviction" {
			r.ignored[name] = "filters are never evicted: the policy is noeviction"
		}
	case "daemonize":
		b, err := boolean()
		if err != nil {
			return err
		}
		if b {
			r.ignored[name] = "bloom serve stays in the foreground; run it under a service manager (supervised systemd)"
		}
	case "supervised":
		l := strings.ToLower(v)
		switch l {
		case "no", "auto", "systemd":
			cfg.Supervised = l
		case "upstart":
			r.ignored[name] = "only systemd supervision is supported"
		default:
			return bad("want no, auto or systemd")
		}
	default:
		if isTLSSetting(name) {
			nv, err := checkTLSSetting(name, v)
			if err != nil {
				return fmt.Errorf("%s: %v", name, err)
			}
			if cfg.TLSParams == nil {
				cfg.TLSParams = map[string]string{}
			}
			cfg.TLSParams[name] = nv
			switch {
			case name == "tls-cluster" && nv == "yes":
				r.ignored[name] = "no cluster mode"
			case name == "tls-dh-params-file" && nv != "":
				// Go's TLS has no finite-field Diffie-Hellman key exchange.
				r.ignored[name] = "Go's TLS offers no DHE cipher suites (ECDHE is used)"
			case name == "tls-session-cache-size":
				r.ignored[name] = "sessions are resumed with tickets, which need no server-side cache"
			}
			return nil
		}
		return fmt.Errorf("unknown directive %q", name)
	}
	return nil
}

// isRedisBloomModule reports whether a loadmodule path names RedisBloom
// (redisbloom.so, rebloom.so, as Redis's images and packages install it).
func isRedisBloomModule(path string) bool {
	base := strings.ToLower(filepath.Base(path))
	return strings.Contains(base, "redisbloom") || strings.Contains(base, "rebloom")
}

// knownDirective reports whether the reader gives directive name a
// meaning: every CONFIG parameter of the table (settingList) is one, and
// include and user (for errors: a known directive with the wrong number of
// values is not an unknown one).
func knownDirective(name string) bool {
	return name == "include" || name == "user" || name == "rename-command" || lookupSetting(name) != nil
}

// redisLogLevels maps Redis's log levels to the log's: verbose is debug,
// notice is info, "nothing" keeps errors only.
var redisLogLevels = map[string]string{"debug": "debug", "verbose": "debug", "notice": "info", "warning": "warn", "nothing": "error",
	"info": "info", "warn": "warn", "error": "error"}

// LogLevelName maps a loglevel directive's value (Redis's debug, verbose,
// notice, warning, nothing, or debug/info/warn/error) to a slog level name.
func LogLevelName(v string) (string, bool) {
	l, ok := redisLogLevels[strings.ToLower(v)]
	return l, ok
}

// splitConfigLine splits a config line into words as Redis's sdssplitargs
// does (the inline-request reader's resp.SplitArgs): blanks separate words;
// "..." takes the escapes \n \r \t \a \b \xNN and \<c> for c; '...'
// takes \' only. A bad line is an error, never a panic.
func splitConfigLine(line string) ([]string, error) {
	args, err := resp.SplitArgs([]byte(line), nil, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("unbalanced quotes, or a closing quote not followed by a space")
	}
	words := make([]string, len(args))
	for i, a := range args {
		words[i] = string(a)
	}
	return words, nil
}

// configQuote writes a value for a config file: bare when it is plain
// printable ASCII with nothing the reader treats specially, otherwise
// double-quoted as Redis's sdscatrepr does (\" \\ \n \r \t \a \b, other
// bytes outside printable ASCII as \xNN), which splitConfigLine reads back
// byte for byte.
func configQuote(v string) string {
	plain := v != ""
	for i := 0; i < len(v) && plain; i++ {
		c := v[i]
		plain = c > ' ' && c < 0x7f && c != '"' && c != '\'' && c != '\\' && c != '#'
	}
	if plain {
		return v
	}
	return string(appendRepr(nil, v))
}

// ApplyDirective applies one directive to cfg as a config file's line
// "name args..." would: the same names, aliases, checks and meaning. bloom
// serve applies its flags and environment variables with it, over the
// Config a config file gave, so that a flag and a directive cannot mean
// different things. bind, port, tls-port, include and user depend on the
// rest of a file and are refused here.
func ApplyDirective(cfg *Config, name string, args ...string) error {
	name = strings.ToLower(name)
	switch name {
	case "bind", "port", "tls-port", "include", "user":
		return fmt.Errorf("%s is a config file directive only", name)
	}
	r := configReader{cfg: cfg, ignored: map[string]string{}}
	if err := r.directive(name, args, "", 0); err != nil {
		return err
	}
	for n, why := range r.ignored {
		cfg.IgnoredDirectives = append(cfg.IgnoredDirectives, n+" ("+why+")")
	}
	return nil
}
