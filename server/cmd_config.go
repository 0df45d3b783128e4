package server

// CONFIG GET/SET/REWRITE/RESETSTAT: the settings that can change while the
// server runs, and the read-only ones clients read.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// setting is one CONFIG parameter. set is nil for a read-only one.
type setting struct {
	name string
	get  func(s *Server) string
	set  func(s *Server, v string) error
}

// errConfigValue is a CONFIG SET value error; its text follows Redis's
// "CONFIG SET failed (possibly related to argument 'x') - " prefix.
type errConfigValue string

func (e errConfigValue) Error() string { return string(e) }

var settingList = []setting{
	{name: "appendfsync", get: func(s *Server) string { return s.appendFsync() }, set: setAppendFsync},
	{name: "appendonly", get: func(s *Server) string {
		if s.cfg.NoPersistence {
			return "no"
		}
		return "yes"
	}},
	{name: "bind", get: func(s *Server) string { h, _ := splitHostPort(s.Addr()); return h }},
	{name: "client-query-buffer-limit", get: func(s *Server) string { return strconv.Itoa(s.cfg.MaxQuery) }},
	{name: "databases", get: func(s *Server) string { return "1" }},
	{name: "dir", get: func(s *Server) string {
		if s.cfg.Dir == "" {
			return ""
		}
		if abs, err := filepath.Abs(s.cfg.Dir); err == nil {
			return abs
		}
		return s.cfg.Dir
	}},
	{name: "maxclients", get: func(s *Server) string { return itoa(s.maxClients()) }, set: func(s *Server, v string) error {
		n, err := configInt(v, 1, 1<<31-1)
		if err == nil {
			s.set.maxClients.Store(n)
		}
		return err
	}},
	{name: "maxmemory", get: func(s *Server) string {
		s.db.mu.Lock()
		defer s.db.mu.Unlock()
		return strconv.FormatUint(s.db.limit, 10)
	}, set: setMaxMemory},
	{name: "maxmemory-policy", get: func(s *Server) string { return "noeviction" }},
	{name: "port", get: func(s *Server) string { _, p := splitHostPort(s.Addr()); return p }},
	{name: "proto-max-bulk-len", get: func(s *Server) string { return strconv.Itoa(s.cfg.MaxBulk) }},
	{name: "requirepass", get: func(s *Server) string { return s.requirePass() }, set: func(s *Server, v string) error {
		// Clients already authenticated stay so; new ones need v.
		s.set.requirePass.Store(&v)
		return nil
	}},
	{name: "save", get: func(s *Server) string { return "" }},
	{name: "slowlog-log-slower-than", get: func(s *Server) string { return itoa(s.set.slowerThan.Load()) }, set: func(s *Server, v string) error {
		n, err := configInt(v, -1, 1<<62)
		if err == nil {
			s.set.slowerThan.Store(n)
		}
		return err
	}},
	{name: "slowlog-max-len", get: func(s *Server) string { return itoa(s.set.slowMaxLen.Load()) }, set: func(s *Server, v string) error {
		n, err := configInt(v, 0, 1<<31-1)
		if err == nil {
			s.set.slowMaxLen.Store(n)
			s.slowlog.trim(int(n))
		}
		return err
	}},
	{name: "timeout", get: func(s *Server) string { return itoa(int64(s.idleTimeout() / time.Second)) }, set: func(s *Server, v string) error {
		n, err := configInt(v, 0, 1<<31-1)
		if err == nil {
			s.set.timeout.Store(int64(time.Duration(n) * time.Second))
		}
		return err
	}},
}

func lookupSetting(name string) *setting {
	for i := range settingList {
		if strings.EqualFold(settingList[i].name, name) {
			return &settingList[i]
		}
	}
	return nil
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
	want := int32(-1)
	for i, n := range fsyncNames {
		if strings.EqualFold(n, v) {
			want = int32(i)
		}
	}
	if want < 0 {
		return errConfigValue("argument(s) must be one of the following: always, everysec, no")
	}
	was := s.set.fsync.Swap(want)
	if s.aof != nil && was != want {
		s.aof.keepUnsynced.Store(want == fsyncAlways)
		if was == fsyncAlways {
			// Release the buffers kept for appendfsync always: fsync
			// them now (with "no" nothing else would).
			s.aof.flushTo(0, true)
		}
	}
	return nil
}

func setMaxMemory(s *Server, v string) error {
	n, ok := parseMemoryValue(v)
	if !ok {
		return errConfigValue("argument must be a memory value")
	}
	limit := n
	if limit == 0 {
		limit, _ = defaultMemoryLimit(s.cfg.memSystem)
	}
	s.set.maxMemory.Store(n)
	s.db.mu.Lock()
	s.db.limit = limit
	used := s.db.used
	s.db.mu.Unlock()
	if limit != 0 && used > limit {
		s.log.Warn("the new maxmemory is below the memory in use; writes that allocate are refused until keys are deleted", "maxmemory", limit, "used", used)
	}
	return nil
}

// parseMemoryValue reads a size as Redis's memtoull does: bytes, or with
// k/m/g (powers of 1000) or kb/mb/gb (powers of 1024), any case.
func parseMemoryValue(v string) (uint64, bool) {
	t := strings.ToLower(v)
	mul := uint64(1)
	for _, u := range []struct {
		suffix string
		mul    uint64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mul = strings.TrimSuffix(t, u.suffix), u.mul
			break
		}
	}
	n, err := strconv.ParseUint(t, 10, 64)
	if err != nil || (n != 0 && n > ^uint64(0)/mul) {
		return 0, false
	}
	return n * mul, true
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
				if globMatch(strings.ToLower(string(p)), st.name) {
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
		configSet(s, args, r)
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
		s.resetStats()
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
func configSet(s *Server, args [][]byte, r *Reply) {
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
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	old := make([]string, len(sets))
	for i, st := range sets {
		old[i] = st.get(s)
	}
	for i, st := range sets {
		if err := st.set(s, string(args[3+2*i])); err != nil {
			for j := i - 1; j >= 0; j-- {
				sets[j].set(s, old[j])
			}
			r.Error("ERR CONFIG SET failed (possibly related to argument '" + st.name + "') - " + err.Error())
			return
		}
	}
	for i, st := range sets {
		s.log.Info("CONFIG SET", "name", st.name, "value", redactValue(st.name, string(args[3+2*i])))
	}
	r.OK()
}

func redactValue(name, v string) string {
	if name == "requirepass" {
		return "(redacted)"
	}
	return v
}

// rewriteConfig writes the live settings back to the config file: a line
// "name value" per setting CONFIG SET can change, replacing the file's line
// for it (later duplicates are dropped) or appended; other lines are kept.
// The file is replaced atomically (written beside it, fsynced, renamed).
func (s *Server) rewriteConfig() error {
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	old, err := os.ReadFile(s.configFile)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	done := map[string]bool{}
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(old))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) > 0 && !strings.HasPrefix(f[0], "#") {
			if st := lookupSetting(f[0]); st != nil && st.set != nil {
				if !done[st.name] {
					done[st.name] = true
					out.WriteString(st.name + " " + configQuote(st.get(s)) + "\n")
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
	for _, st := range settingList {
		if st.set == nil || done[st.name] {
			continue
		}
		if !header {
			out.WriteString("# Generated by CONFIG REWRITE\n")
			header = true
		}
		out.WriteString(st.name + " " + configQuote(st.get(s)) + "\n")
	}
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

// configQuote quotes a value for the config file when it is empty or has
// spaces or quotes (Redis's config syntax).
func configQuote(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\"'\\#") {
		return v
	}
	return strconv.Quote(v)
}

// resetStats is CONFIG RESETSTAT: the counters INFO stats, commandstats and
// errorstats report start again from zero (the slow log stays).
func (s *Server) resetStats() {
	s.db.mu.Lock()
	s.stats.reset()
	s.db.mu.Unlock()
	s.totalCmds.Store(0)
	s.totalConns.Store(0)
	s.rejectedConns.Store(0)
	s.protoErrors.Store(0)
	s.slowClients.Store(0)
	s.db.mu.Lock()
	s.db.expired = 0
	s.db.mu.Unlock()
}
