package server

// CONFIG GET/SET/REWRITE/RESETSTAT: the settings that can change while the
// server runs, and the read-only ones clients read.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkit/bloomkit/internal/confval"
	"github.com/bloomkit/bloomkit/server/internal/aof"
	"github.com/bloomkit/bloomkit/server/internal/glob"
)

// setting is one CONFIG parameter. set is nil for a read-only one. A tls
// setting's set only records the value: once every pair of a CONFIG SET is
// recorded, the TLS configuration is built from all of them (applyTLS).
// secret marks a password: its value never shows in the slow log or the
// server's log (redactValue). alias names the parameter this one is
// another name of (slave-read-only: replica-read-only).
type setting struct {
	name   string
	get    func(s *Server) string
	set    func(s *Server, v string) error
	tls    bool
	secret bool
	alias  string
	// def is the value CONFIG GET shows when nothing set it (for maxmemory
	// 0: 90% of the memory the process may use; dir relative to where the
	// server starts).
	def string
	// file applies a config file's value to a Config (the reader, and
	// bloom serve's flags through ApplyDirective), with the same parser
	// and range as set; nil: the reader has a case of its own.
	file func(c *Config, v string) error
}

func init() {
	for _, name := range TLSSettingNames() {
		settingList = append(settingList, setting{name: name, tls: true, secret: strings.HasSuffix(name, "-pass"), def: tlsDefaults[name],
			get: func(s *Server) string { return s.tlsSetting(name) },
			set: func(s *Server, v string) error { return s.setTLSSetting(name, v) }})
	}
	settingList = append(settingList, setting{name: "tls-port", def: "0", get: func(s *Server) string { return s.tlsPort() },
		set: func(s *Server, v string) error { return s.setListenPort(v, true) }})
}

// parseSavePoints reads save's value as Redis does: "" for none, else
// pairs of seconds (at least 1) and changes (at least 0), separated by
// spaces.
func parseSavePoints(v string) ([][2]int64, error) {
	f := strings.Fields(v)
	if len(f)%2 != 0 {
		return nil, errConfigValue("Invalid save parameters")
	}
	points := make([][2]int64, 0, len(f)/2)
	for i := 0; i < len(f); i += 2 {
		secs, err1 := strconv.ParseInt(f[i], 10, 64)
		changes, err2 := strconv.ParseInt(f[i+1], 10, 64)
		if err1 != nil || err2 != nil || secs < 1 || changes < 0 {
			return nil, errConfigValue("Invalid save parameters")
		}
		points = append(points, [2]int64{secs, changes})
	}
	return points, nil
}

// formatSavePoints is save's value as CONFIG GET shows it.
func formatSavePoints(points [][2]int64) string {
	f := make([]string, 0, 2*len(points))
	for _, p := range points {
		f = append(f, itoa(p[0]), itoa(p[1]))
	}
	return strings.Join(f, " ")
}

// errConfigValue is a CONFIG SET value error; its text follows Redis's
// "CONFIG SET failed (possibly related to argument 'x') - " prefix.
type errConfigValue string

func (e errConfigValue) Error() string { return string(e) }

var settingList = []setting{
	{name: "acl-pubsub-default", def: "resetchannels", get: getPubsubDefault, set: setPubsubDefault, file: func(c *Config, v string) error {
		v, err := pubsubDefault(v)
		c.ACLPubsubDefault = v
		return err
	}},
	{name: "aclfile", def: "", get: func(s *Server) string { return s.cfg.ACLFile }, file: func(c *Config, v string) error { c.ACLFile = v; return nil }},
	{name: "acllog-max-len", def: "128", get: func(s *Server) string { return itoa(s.set.aclLogMaxLen.Load()) }, set: setACLLogMaxLen,
		file: intFile(0, 1<<31-1, func(c *Config, n int64) { c.ACLLogMaxLen = &n })},
	{name: "appendfsync", def: "everysec", get: func(s *Server) string { return s.appendFsync() }, set: setAppendFsync, file: func(c *Config, v string) error {
		p, ok := aof.ParsePolicy(v)
		if !ok {
			return errConfigValue("argument(s) must be one of the following: always, everysec, no")
		}
		c.AppendFsync = p.String()
		return nil
	}},
	{name: "appendonly", def: "yes", get: func(s *Server) string {
		if s.cfg.NoPersistence || s.cfg.NoAppendLog {
			return "no"
		}
		return "yes"
	}, file: func(c *Config, v string) error {
		b, err := configBool(v)
		// Redis's meaning: no log; snapshots are still written.
		c.NoPersistence, c.NoAppendLog = false, !b
		return err
	}},
	{name: "bind", def: "127.0.0.1", get: func(s *Server) string { h, _ := splitHostPort(s.Addr()); return h }},
	{name: "client-query-buffer-limit", def: "1073741824", get: func(s *Server) string { return strconv.Itoa(s.cfg.MaxQuery) },
		file: sizeFile(1024, 1<<40, func(c *Config, n uint64) { c.MaxQuery = int(n) })},
	{name: "client-output-buffer-limit", def: "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", get: func(s *Server) string { return formatOutputLimits(s.outputLimits()) }, set: func(s *Server, v string) error {
		l, err := parseOutputLimits(v, s.outputLimits())
		if err != nil {
			return errConfigValue(err.Error())
		}
		s.set.outLimits.Store(&l)
		s.setReplicaOutLimit(l)
		return nil
	}},
	{name: "databases", def: "1", get: func(s *Server) string { return "1" }},
	{name: "dir", def: "bloomkit-data", get: func(s *Server) string {
		if s.cfg.Dir == "" {
			return ""
		}
		if abs, err := filepath.Abs(s.cfg.Dir); err == nil {
			return abs
		}
		return s.cfg.Dir
	}, file: func(c *Config, v string) error { c.Dir = v; return nil }},
	// io-threads: Redis's count of threads doing network I/O, which
	// dashboards (redis_exporter's redis_config_io_threads) read; here the
	// event loops serving plain TCP clients, at least 1. Set by
	// --event-loops, not by the directive (a redis.conf's is ignored with
	// a warning), and read-only as in Redis.
	{name: "io-threads", def: "1", get: func(s *Server) string {
		s.lifeMu.Lock()
		n := len(s.loops)
		s.lifeMu.Unlock()
		return itoa(int64(max(n, 1)))
	}},
	{name: "maxclients", def: "10000", get: func(s *Server) string { return itoa(s.maxClients()) }, set: func(s *Server, v string) error {
		n, err := configInt(v, 1, 1<<31-1)
		if err == nil {
			s.set.maxClients.Store(n)
		}
		return err
	}, file: intFile(1, 1<<31-1, func(c *Config, n int64) { c.MaxClients = int(n) })},
	{name: "maxmemory", def: "0", get: func(s *Server) string { return strconv.FormatUint(s.set.limit.Load(), 10) }, set: setMaxMemory,
		file: sizeFile(0, 1<<62, func(c *Config, n uint64) { c.MaxMemory = n })},
	{name: "maxmemory-policy", def: "noeviction", get: func(s *Server) string { return "noeviction" }},
	{name: "port", def: "6479", get: func(s *Server) string { return s.plainPort() }, set: func(s *Server, v string) error { return s.setListenPort(v, false) }},
	{name: "protected-mode", def: "yes", get: func(s *Server) string { return confval.FormatBool(s.set.protected.Load()) }, set: func(s *Server, v string) error {
		b, err := configBool(v)
		if err == nil {
			s.set.protected.Store(b)
		}
		return err
	}, file: func(c *Config, v string) error {
		b, err := configBool(v)
		if err == nil {
			c.ProtectedMode = confval.FormatBool(b)
		}
		return err
	}},
	{name: "proto-max-bulk-len", def: "536870912", get: func(s *Server) string { return strconv.Itoa(s.cfg.MaxBulk) },
		file: sizeFile(1024, 1<<40, func(c *Config, n uint64) { c.MaxBulk = int(n) })},
	{name: "requirepass", def: "", secret: true, get: func(s *Server) string { return s.requirePass() }, set: func(s *Server, v string) error {
		// The default user's password (nopass when empty), as Redis.
		// Clients already authenticated stay so; new ones need v.
		s.set.requirePass.Store(&v)
		s.users.SetDefaultPassword(v)
		return nil
	}, file: func(c *Config, v string) error { c.RequirePass = v; return nil }},
	{name: "unixsocket", def: "", get: func(s *Server) string { return s.cfg.UnixSocket }, file: func(c *Config, v string) error { c.UnixSocket = v; return nil }},
	{name: "unixsocketperm", def: "0", get: func(s *Server) string { return strconv.FormatUint(uint64(s.cfg.UnixSocketPerm), 8) },
		file: func(c *Config, v string) error {
			n, err := strconv.ParseUint(v, 8, 32)
			if err != nil || n > 0o777 {
				return errConfigValue("argument must be an octal number from 0 to 777")
			}
			c.UnixSocketPerm = os.FileMode(n)
			return nil
		}},
	{name: "save", def: formatSavePoints(defaultSavePoints), get: func(s *Server) string { return formatSavePoints(*s.set.savePoints.Load()) },
		set: func(s *Server, v string) error {
			p, err := parseSavePoints(v)
			if err == nil {
				s.set.savePoints.Store(&p)
			}
			return err
		},
		file: func(c *Config, v string) error {
			p, err := parseSavePoints(v)
			c.SavePoints = &p
			return err
		}},
	// Read-only: the file's settings the process, not the server, uses
	// (bloom serve builds the logger and writes the pid file from them),
	// and those fixed at start.
	{name: "loglevel", def: "notice", get: func(s *Server) string {
		if s.cfg.LogLevel == "" {
			return "notice"
		}
		return s.cfg.LogLevel
	}, file: func(c *Config, v string) error {
		l := strings.ToLower(v)
		if _, ok := redisLogLevels[l]; !ok {
			return errConfigValue("argument(s) must be one of the following: debug, verbose, notice, warning, nothing")
		}
		c.LogLevel = l
		return nil
	}},
	{name: "logfile", def: "", get: func(s *Server) string { return s.cfg.LogFile }, file: func(c *Config, v string) error { c.LogFile = v; return nil }},
	{name: "pidfile", def: "", get: func(s *Server) string { return s.cfg.PidFile }, file: func(c *Config, v string) error { c.PidFile = v; return nil }},
	{name: "supervised", def: "no", get: func(s *Server) string {
		if s.cfg.Supervised == "" {
			return "no"
		}
		return s.cfg.Supervised
	}},
	{name: "daemonize", def: "no", get: func(s *Server) string { return "no" }},
	{name: "enable-debug-command", def: "no", get: func(s *Server) string {
		if s.cfg.EnableDebugCommand == "" {
			return "no"
		}
		return s.cfg.EnableDebugCommand
	}, file: func(c *Config, v string) error {
		switch v = strings.ToLower(v); v {
		case "yes", "no", "local":
			c.EnableDebugCommand = v
			return nil
		}
		return errConfigValue("argument(s) must be one of the following: no, yes, local")
	}},
	{name: "tcp-keepalive", def: "300", get: func(s *Server) string { return itoa(max(int64(s.cfg.TCPKeepAlive/time.Second), 0)) }, file: func(c *Config, v string) error {
		d, err := parseSeconds(v, 0)
		if d == 0 {
			d = -1 // Redis's 0: off
		}
		c.TCPKeepAlive = d
		return err
	}},
	{name: "auto-aof-rewrite-min-size", def: "67108864", get: func(s *Server) string { return itoa(max(s.cfg.AutoSaveLogBytes, 0)) },
		file: sizeFile(1, 1<<62, func(c *Config, n uint64) { c.AutoSaveLogBytes = int64(n) })},
	{name: "replicaof", def: "", get: getReplicaOf},
	{name: "slaveof", def: "", get: getReplicaOf, alias: "replicaof"},
	{name: "slowlog-log-slower-than", def: "10000", get: func(s *Server) string { return itoa(s.set.slowerThan.Load()) }, set: func(s *Server, v string) error {
		n, err := configInt(v, -1, 1<<62)
		if err == nil {
			s.set.slowerThan.Store(n)
		}
		return err
	}, file: intFile(-1, 1<<62, func(c *Config, n int64) { c.SlowlogLogSlowerThan = &n })},
	{name: "slowlog-max-len", def: "128", get: func(s *Server) string { return itoa(s.set.slowMaxLen.Load()) }, set: func(s *Server, v string) error {
		n, err := configInt(v, 0, 1<<31-1)
		if err == nil {
			s.set.slowMaxLen.Store(n)
			s.slowlog.trim(int(n))
		}
		return err
	}, file: intFile(0, 1<<31-1, func(c *Config, n int64) { c.SlowlogMaxLen = &n })},
	{name: "timeout", def: "0", get: func(s *Server) string { return itoa(int64(s.idleTimeout() / time.Second)) }, set: func(s *Server, v string) error {
		d, err := parseSeconds(v, 0)
		if err == nil {
			s.set.timeout.Store(int64(d))
		}
		return err
	}, file: func(c *Config, v string) error {
		d, err := parseSeconds(v, 0)
		c.Timeout = d
		return err
	}},
}

// getReplicaOf is CONFIG GET replicaof: "host port" of the master this
// server follows, "" when it is a master. REWRITE writes the role itself.
func getReplicaOf(s *Server) string {
	if l := s.repl.following.Load(); l != nil {
		return l.host + " " + l.port
	}
	return ""
}

// ConfigParam describes one CONFIG parameter. Each is also a config file
// directive of the same name, so that CONFIG REWRITE's lines read back.
type ConfigParam struct {
	// Name is the parameter's name; an alias (slave-read-only) is listed
	// as a parameter of its own, as CONFIG GET lists it.
	Name string
	// Mutable parameters are changed by CONFIG SET while the server runs.
	Mutable bool
	// Secret parameters (passwords) are redacted in the slow log and the
	// server's log.
	Secret bool
	// AliasOf is the parameter this one is another name of ("" for none).
	AliasOf string
	// Default is the value it has when nothing sets it, as CONFIG GET
	// shows it (maxmemory 0 stands for 90% of the memory the process may
	// use, which CONFIG GET shows in bytes).
	Default string
}

// ConfigParams lists every CONFIG parameter, in name order.
func ConfigParams() []ConfigParam {
	out := make([]ConfigParam, 0, len(settingList))
	for _, st := range settingList {
		out = append(out, ConfigParam{Name: st.name, Mutable: st.set != nil, Secret: st.secret, AliasOf: st.alias, Default: st.def})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func lookupSetting(name string) *setting {
	for i := range settingList {
		if strings.EqualFold(settingList[i].name, name) {
			return &settingList[i]
		}
	}
	return nil
}

// intFile is the file function of an integer parameter from lo to hi,
// read as CONFIG SET reads it (configInt).
func intFile(lo, hi int64, apply func(c *Config, n int64)) func(c *Config, v string) error {
	return func(c *Config, v string) error {
		n, err := configInt(v, lo, hi)
		if err == nil {
			apply(c, n)
		}
		return err
	}
}

// sizeFile is the file function of a size parameter (bytes, or with a
// unit: 4gb) from lo to hi bytes.
func sizeFile(lo, hi uint64, apply func(c *Config, n uint64)) func(c *Config, v string) error {
	return func(c *Config, v string) error {
		n, err := confval.ParseSize(v)
		if err != nil || n < lo || n > hi {
			return errConfigValue(fmt.Sprintf("argument must be a memory value from %s to %s", confval.FormatSize(lo), confval.FormatSize(hi)))
		}
		apply(c, n)
		return nil
	}
}

// configBool reads a yes/no parameter.
func configBool(v string) (bool, error) {
	b, err := confval.ParseBool(v)
	if err != nil {
		return false, errConfigValue("argument must be 'yes' or 'no'")
	}
	return b, nil
}

// parseSeconds reads a duration parameter as the config file and CONFIG
// SET both do: seconds (300) or a duration with a unit (5m), from lo to
// 2147483647 seconds (Redis's range).
func parseSeconds(v string, lo int64) (time.Duration, error) {
	d, err := confval.ParseDuration(v, time.Second)
	if _, nerr := strconv.ParseInt(v, 10, 64); err != nil && nerr != nil {
		return 0, errConfigValue("argument couldn't be parsed into an integer")
	}
	if err != nil || d < time.Duration(lo)*time.Second || d > (1<<31-1)*time.Second {
		return 0, errConfigValue(fmt.Sprintf("argument must be between %d and 2147483647 inclusive", lo))
	}
	return d, nil
}

func configInt(v string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, errConfigValue("argument couldn't be parsed into an integer")
	}
	if n < lo || n > hi {
		return 0, errConfigValue(fmt.Sprintf("argument must be between %d and %d inclusive", lo, hi))
	}
	return n, nil
}

func setAppendFsync(s *Server, v string) error {
	p, ok := aof.ParsePolicy(v)
	if !ok {
		return errConfigValue("argument(s) must be one of the following: always, everysec, no")
	}
	s.set.fsync.Store(int32(p))
	if s.aof != nil {
		s.aof.SetPolicy(p)
	}
	return nil
}

func setMaxMemory(s *Server, v string) error {
	n, err := confval.ParseSize(v)
	if err != nil {
		return errConfigValue("argument must be a memory value")
	}
	limit := n
	if limit == 0 {
		limit, _ = defaultMemoryLimit(s.cfg.memSystem)
	}
	// The caller (configSet) holds the keyspace lock.
	s.set.maxMemory.Store(n)
	s.db.SetLimit(limit)
	s.set.limit.Store(limit)
	used := s.db.Used()
	if limit != 0 && used > limit {
		s.log.Warn("the new maxmemory is below the memory in use; writes that allocate are refused until keys are deleted", "maxmemory", limit, "used", used)
	}
	return nil
}

// CONFIG GET pattern [pattern ...] | SET name value [name value ...] |
// REWRITE | RESETSTAT | HELP
func cmdConfig(s *Server, c *Session, args [][]byte, r *Reply) {
	switch strings.ToLower(string(args[1])) {
	case "get":
		if len(args) < 3 {
			r.Error(wrongArity("config|get"))
			return
		}
		var out []*setting
		for i := range settingList {
			st := &settingList[i]
			for _, p := range args[2:] {
				if glob.Match(strings.ToLower(string(p)), st.name) {
					out = append(out, st)
					break
				}
			}
		}
		r.Map(len(out))
		for _, st := range out {
			r.BulkString(st.name)
			r.BulkString(st.get(s))
		}
	case "set":
		configSet(s, c, args, r)
	case "rewrite":
		if len(args) != 2 {
			r.Error(wrongArity("config|rewrite"))
			return
		}
		if s.configFile == "" {
			r.Error("ERR The server is running without a config file")
			return
		}
		if err := s.rewriteConfig(); err != nil {
			s.log.Error("CONFIG REWRITE failed", "file", s.configFile, "err", err)
			r.Error("ERR Rewriting config file: " + err.Error())
			return
		}
		r.OK()
	case "resetstat":
		if len(args) != 2 {
			r.Error(wrongArity("config|resetstat"))
			return
		}
		s.resetStats(c)
		r.OK()
	case "help":
		helpReply(r, "CONFIG",
			"GET <pattern>",
			"    Return parameters matching the glob-like <pattern> and their values.",
			"SET <directive> <value>",
			"    Set the configuration <directive> to <value>.",
			"RESETSTAT",
			"    Reset statistics reported by the INFO command.",
			"REWRITE",
			"    Rewrite the configuration file.",
		)
	default:
		r.Error("ERR unknown subcommand '" + trimArg(args[1]) + "'. Try CONFIG HELP.")
	}
}

// configSet applies all pairs or none, as Redis does.
func configSet(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) < 4 {
		r.Error(wrongArity("config|set"))
		return
	}
	if len(args)%2 != 0 {
		r.Error("ERR syntax error")
		return
	}
	var sets []*setting
	for i := 2; i < len(args); i += 2 {
		st := lookupSetting(string(args[i]))
		if st == nil {
			r.Error("ERR Unknown option or number of arguments for CONFIG SET - '" + trimArg(args[i]) + "'")
			return
		}
		if st.set == nil {
			r.Error("ERR CONFIG SET failed (possibly related to argument '" + trimArg(args[i]) + "') - can't set immutable config")
			return
		}
		for _, prev := range sets {
			if prev == st {
				r.Error("ERR CONFIG SET failed (possibly related to argument '" + trimArg(args[i]) + "') - duplicate parameter")
				return
			}
		}
		sets = append(sets, st)
	}
	// The values in the order of sets: port and tls-port last, as Redis
	// applies them after every value is set (a first tls-port uses the
	// tls-* files given with it).
	sort.SliceStable(sets, func(i, j int) bool { return !isPortSetting(sets[i]) && isPortSetting(sets[j]) })
	vals := make([]string, 0, len(sets))
	for _, want := range []bool{false, true} {
		for i := 2; i < len(args); i += 2 {
			if st := lookupSetting(string(args[i])); isPortSetting(st) == want {
				vals = append(vals, string(args[i+1]))
			}
		}
	}
	// The TLS files are read first, with no lock held but tlsMu (which
	// only other TLS changes take): a slow file (a pipe, a network file
	// system) must hold no other client up. A network client's reply
	// waits while the rest of its event loop's clients are served, as
	// WAIT's does. Inside EXEC the keyspace lock is already held: the
	// files are read under it, as the transaction is atomic.
	if !c.inExec && slices.ContainsFunc(sets, func(st *setting) bool { return st.tls || st.name == "tls-port" }) {
		set := func(r *Reply) {
			s.tlsMu.Lock()
			defer s.tlsMu.Unlock()
			s.applyConfigSet(c, sets, vals, s.prepareTLS(sets, vals), r)
		}
		if !c.canWait {
			set(r)
			return
		}
		done := make(chan struct{})
		c.wait = done
		go func() {
			var rw Reply
			rw.Reset(c.resp3)
			set(&rw)
			c.deferred = append([]byte(nil), rw.Bytes()...)
			close(done)
		}()
		return
	}
	s.applyConfigSet(c, sets, vals, nil, r)
}

// applyConfigSet sets the values (sorted as configSet sorts them) with
// the keyspace lock and cfgMu held, using the TLS configuration ready
// built for them, if any.
func (s *Server) applyConfigSet(c *Session, sets []*setting, vals []string, ready *tlsBuild, r *Reply) {
	// The keyspace lock before cfgMu, the order EXEC takes them in (a
	// queued CONFIG runs with the keyspace locked): maxmemory needs it.
	unlock := s.lockDB(c)
	defer unlock()
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	if ready != nil {
		s.tlsReady = ready
		defer func() { s.tlsReady = nil }()
	}
	old := make([]string, len(sets))
	for i, st := range sets {
		old[i] = st.get(s)
	}
	rollback := func(n int) {
		for j := n - 1; j >= 0; j-- {
			sets[j].set(s, old[j])
		}
	}
	for i, st := range sets {
		if err := st.set(s, vals[i]); err != nil {
			rollback(i)
			r.Error("ERR CONFIG SET failed (possibly related to argument '" + st.name + "') - " + err.Error())
			return
		}
	}
	// Then the TLS configuration, from all its settings at once (as
	// Redis's applyTlsCfg): if a file is bad, every value goes back and
	// the configuration in use stays.
	for _, st := range sets {
		if st.tls {
			if err := s.applyTLS(); err != nil {
				rollback(len(sets))
				r.Error("ERR CONFIG SET failed (possibly related to argument '" + st.name + "') - Unable to update TLS configuration: " + err.Error())
				return
			}
			break
		}
	}
	if s.cfgSet == nil {
		s.cfgSet = map[string]string{}
	}
	for i, st := range sets {
		s.cfgSet[st.name] = vals[i]
	}
	for i, st := range sets {
		s.log.Info("CONFIG SET", "name", st.name, "value", redactValue(st.name, vals[i]))
	}
	r.OK()
}

// isPortSetting reports whether st moves a listener (port, tls-port).
func isPortSetting(st *setting) bool { return st.name == "port" || st.name == "tls-port" }

// redactValue is v as logs show CONFIG parameter name's value:
// "(redacted)" for a secret one (passwords), as Redis's slow log shows it.
func redactValue(name, v string) string {
	if isSecretParam(name) {
		return "(redacted)"
	}
	return v
}

// isSecretParam reports whether CONFIG parameter name is secret. It is set
// by init, not declared with its value: settingList's setters lead to the
// command path, which redacts the slow log with it (an initialization
// cycle otherwise).
var isSecretParam func(name string) bool

func init() {
	isSecretParam = func(name string) bool {
		st := lookupSetting(name)
		return st != nil && st.secret
	}
}

// rewriteConfig writes the live settings back to the config file, as
// Redis does: a line whose value still holds is kept as written (with the
// user's units: "maxmemory 2gb" stays so), a line whose setting changed
// is replaced (later duplicates are dropped), and only settings changed by
// CONFIG SET that the file lacks are appended; defaults are not. Other
// lines are kept. The file is replaced atomically (written beside it,
// fsynced, renamed).
//
// The file is read and written under rewriteMu alone: cfgMu, which CONFIG
// SET takes with the keyspace lock held, guards only the settings while
// the new contents are built, so a slow disk holds no client up.
func (s *Server) rewriteConfig() error {
	s.rewriteMu.Lock()
	defer s.rewriteMu.Unlock()
	old, err := os.ReadFile(s.configFile)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	s.cfgMu.Lock()
	locked := true
	unlock := func() {
		if locked {
			s.cfgMu.Unlock()
			locked = false
		}
	}
	defer unlock()
	// value is the line to write for a setting: the value CONFIG SET was
	// given when it still holds (the user's units), else the live one.
	live := func(st *setting) string {
		if st.name == "maxmemory" {
			return strconv.FormatUint(s.set.maxMemory.Load(), 10) // as configured; 0 stays 0
		}
		return st.get(s)
	}
	value := func(st *setting) string {
		cur := live(st)
		if raw, ok := s.cfgSet[st.name]; ok && sameSetting(st.name, raw, cur) {
			return raw
		}
		return cur
	}
	done := map[string]bool{}
	// replicaof is the role, not a setting: "replicaof host port" while
	// this server follows a master, no line at all when it is one (the
	// failover Sentinel makes survives a restart, as with Redis).
	replicaOf := ""
	if l := s.currentLink(); l != nil {
		replicaOf = "replicaof " + configQuote(l.host) + " " + l.port
	}
	var out bytes.Buffer
	// Users: without an aclfile, the user lines are replaced by every
	// user as ACL LIST describes it, where the first one stood (Redis
	// writes them once users were changed or the file had some); with an
	// aclfile they live there, and user lines here are dropped.
	users := s.cfg.ACLFile == "" && (s.aclChanged.Load() || len(s.cfg.Users) > 0)
	usersDone := false
	writeUsers := func() {
		if users && !usersDone {
			for _, l := range s.users.List() {
				// Each rule quoted as the config file reads it back as
				// one word (rules hold no white space: the ACL refuses it).
				words := strings.Split(l, " ")
				for i, w := range words {
					if rest, hash := strings.CutPrefix(w, "#"); !hash || configQuote(rest) != rest {
						words[i] = configQuote(w) // "#hash" stays bare: not at the line's start
					}
				}
				out.WriteString(strings.Join(words, " ") + "\n")
			}
		}
		usersDone = true
	}
	sc := bufio.NewScanner(bytes.NewReader(old))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		f, _ := splitConfigLine(strings.TrimSpace(line))
		if len(f) > 0 && strings.EqualFold(f[0], "user") {
			writeUsers()
			continue
		}
		if len(f) > 0 && (strings.EqualFold(f[0], "replicaof") || strings.EqualFold(f[0], "slaveof")) {
			if !done["replicaof"] && replicaOf != "" {
				if len(f) == 3 && "replicaof "+configQuote(f[1])+" "+f[2] == replicaOf {
					out.WriteString(line + "\n")
				} else {
					out.WriteString(replicaOf + "\n")
				}
			}
			done["replicaof"] = true
			continue
		}
		if len(f) > 0 && !strings.HasPrefix(f[0], "#") {
			if st := lookupSetting(f[0]); st != nil && st.set != nil {
				if _, changed := s.cfgSet[st.name]; isPortSetting(st) && !changed {
					// The ports CONFIG SET did not move stay as the file
					// says (--addr may have overridden them for this run).
					done[st.name] = true
					out.WriteString(line + "\n")
					continue
				}
				if !done[st.name] {
					done[st.name] = true
					if len(f) == 2 && sameSetting(st.name, f[1], live(st)) {
						out.WriteString(line + "\n")
					} else {
						out.WriteString(st.name + " " + configQuote(value(st)) + "\n")
					}
				}
				continue
			}
		}
		out.WriteString(line + "\n")
	}
	if err := sc.Err(); err != nil {
		return err
	}
	header := false
	if replicaOf != "" && !done["replicaof"] {
		out.WriteString("# Generated by CONFIG REWRITE\n" + replicaOf + "\n")
		header = true
	}
	for i := range settingList {
		st := &settingList[i]
		if _, changed := s.cfgSet[st.name]; st.set == nil || done[st.name] || !changed {
			continue
		}
		if !header {
			out.WriteString("# Generated by CONFIG REWRITE\n")
			header = true
		}
		out.WriteString(st.name + " " + configQuote(value(st)) + "\n")
	}
	if users && !usersDone {
		if !header {
			out.WriteString("# Generated by CONFIG REWRITE\n")
		}
		writeUsers()
	}
	unlock()
	tmp := s.configFile + ".rewrite-tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(out.Bytes()); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, s.configFile)
}

// sameSetting reports whether a config value a (as a user wrote it) means
// the live value b of setting name: sizes by bytes, durations by seconds,
// booleans and words in any case.
func sameSetting(name, a, b string) bool {
	switch name {
	case "maxmemory", "proto-max-bulk-len", "client-query-buffer-limit":
		return confval.SameSize(a, b)
	case "timeout":
		x, err1 := confval.ParseDuration(a, time.Second)
		y, err2 := confval.ParseDuration(b, time.Second)
		return err1 == nil && err2 == nil && x == y
	case "protected-mode", "appendonly":
		x, err1 := confval.ParseBool(a)
		y, err2 := confval.ParseBool(b)
		return err1 == nil && err2 == nil && x == y
	}
	return a == b || strings.EqualFold(a, b) && name != "requirepass"
}

// resetStats is CONFIG RESETSTAT: the counters INFO stats, commandstats and
// errorstats report start again from zero (the slow log stays).
func (s *Server) resetStats(c *Session) {
	unlock := s.lockDB(c) // held already inside EXEC
	s.stats.reset()
	s.db.ResetExpired()
	s.peakMem.Store(s.db.Used()) // used_memory_peak starts again from now
	unlock()
	s.totalCmds.Store(0)
	s.totalConns.Store(0)
	s.rejectedConns.Store(0)
	s.protoErrors.Store(0)
	s.slowClients.Store(0)
	s.slowSubscribers.Store(0)
	s.resetInfoExtra()
}

// outputLimits is client-output-buffer-limit in force, by class.
func (s *Server) outputLimits() [3]outputLimit {
	if l := s.set.outLimits.Load(); l != nil {
		return *l
	}
	return defaultOutputLimits
}

// parseOutputLimits reads "class hard soft seconds ..." over base, as
// Redis's client-output-buffer-limit (sizes may carry units; classes
// normal, replica or slave, pubsub).
func parseOutputLimits(v string, base [3]outputLimit) ([3]outputLimit, error) {
	f := strings.Fields(v)
	if len(f) == 0 || len(f)%4 != 0 {
		return base, fmt.Errorf("Wrong number of arguments in buffer limit configuration.")
	}
	out := base
	for i := 0; i < len(f); i += 4 {
		class := -1
		switch strings.ToLower(f[i]) {
		case "normal":
			class = classNormal
		case "replica", "slave":
			class = classReplica
		case "pubsub":
			class = classPubsub
		default:
			return base, fmt.Errorf("Invalid client class specified in buffer limit configuration.")
		}
		hard, err1 := confval.ParseSize(f[i+1])
		soft, err2 := confval.ParseSize(f[i+2])
		secs, err3 := strconv.ParseInt(f[i+3], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || secs < 0 || hard > 1<<62 || soft > 1<<62 || secs > 1<<31 {
			return base, fmt.Errorf("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
		}
		out[class] = outputLimit{hard: int64(hard), soft: int64(soft), softFor: time.Duration(secs) * time.Second}
	}
	return out, nil
}

// formatOutputLimits is CONFIG GET's form: bytes and seconds, every class.
func formatOutputLimits(l [3]outputLimit) string {
	var b strings.Builder
	for i, o := range l {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s %d %d %d", outputClassNames[i], o.hard, o.soft, int64(o.softFor/time.Second))
	}
	return b.String()
}
