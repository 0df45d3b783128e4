package server

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Version is the server version reported by HELLO and INFO
// (redis_version is what clients parse; bloomkit_version is ours).
const (
	RedisVersion    = "7.2.4"
	BloomkitVersion = "0.1.0"
)

func cmdPing(s *Server, c *Session, args [][]byte, r *Reply) {
	switch len(args) {
	case 1:
		r.Simple("PONG")
	case 2:
		r.Bulk(args[1])
	default:
		r.Error(wrongArity("ping"))
	}
}

func cmdEcho(s *Server, c *Session, args [][]byte, r *Reply) { r.Bulk(args[1]) }

func cmdQuit(s *Server, c *Session, args [][]byte, r *Reply) {
	c.quit = true
	r.OK()
}

func cmdSelect(s *Server, c *Session, args [][]byte, r *Reply) {
	n, ok := parseInt(args[1])
	if !ok || n < -2147483648 || n > 2147483647 {
		r.Error("ERR value is not an integer or out of range")
		return
	}
	if n != 0 {
		r.Error("ERR DB index is out of range")
		return
	}
	r.OK()
}

const (
	errWrongPass = "WRONGPASS invalid username-password pair or user is disabled."
	errNoAuth    = "NOAUTH Authentication required."
)

func (s *Server) checkPass(user, pass string) bool {
	return user == "default" && s.cfg.RequirePass != "" && constantTimeEq(pass, s.cfg.RequirePass)
}

func constantTimeEq(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	var v byte
	for i := 0; i < len(a); i++ {
		v |= a[i] ^ b[i]
	}
	return v == 0
}

func cmdAuth(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) > 3 {
		r.Error("ERR syntax error")
		return
	}
	user, pass := "default", string(args[1])
	if len(args) == 3 {
		user, pass = string(args[1]), string(args[2])
	}
	if s.cfg.RequirePass == "" && len(args) == 2 {
		r.Error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		return
	}
	if s.cfg.RequirePass == "" && user == "default" {
		c.authed = true
		r.OK()
		return
	}
	if !s.checkPass(user, pass) {
		s.metrics.authFailures.Inc()
		r.Error(errWrongPass)
		return
	}
	c.authed = true
	r.OK()
}

func cmdHello(s *Server, c *Session, args [][]byte, r *Reply) {
	proto := int64(2)
	if c.resp3 {
		proto = 3
	}
	if len(args) >= 2 {
		v, ok := parseInt(args[1])
		if !ok {
			r.Error("ERR Protocol version is not an integer or out of range")
			return
		}
		if v < 2 || v > 3 {
			r.Error("NOPROTO unsupported protocol version")
			return
		}
		proto = v
	}
	var name []byte
	setName := false
	authed := c.authed
	for i := 2; i < len(args); i++ {
		opt := strings.ToUpper(string(args[i]))
		switch {
		case opt == "AUTH" && i+2 < len(args):
			if s.cfg.RequirePass == "" && string(args[i+1]) == "default" {
				authed = true
			} else if !s.checkPass(string(args[i+1]), string(args[i+2])) {
				s.metrics.authFailures.Inc()
				r.Error(errWrongPass)
				return
			} else {
				authed = true
			}
			i += 2
		case opt == "SETNAME" && i+1 < len(args):
			name = args[i+1]
			setName = true
			i++
		default:
			r.Error("ERR Syntax error in HELLO option '" + trimArg(args[i]) + "'")
			return
		}
	}
	if s.cfg.RequirePass != "" && !authed {
		r.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if setName {
		if !validClientName(name) {
			r.Error("ERR Client names cannot contain spaces, newlines or special characters.")
			return
		}
		c.Name = string(name)
	}
	c.authed = authed
	c.resp3 = proto == 3
	r.resp3 = c.resp3
	r.Map(7)
	r.BulkString("server")
	r.BulkString("redis")
	r.BulkString("version")
	r.BulkString(RedisVersion)
	r.BulkString("proto")
	r.Int(proto)
	r.BulkString("id")
	r.Int(c.ID)
	r.BulkString("mode")
	r.BulkString("standalone")
	r.BulkString("role")
	r.BulkString("master")
	r.BulkString("modules")
	r.Array(0)
}

func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

func cmdClient(s *Server, c *Session, args [][]byte, r *Reply) {
	sub := strings.ToLower(string(args[1]))
	switch sub {
	case "setname":
		if len(args) != 3 {
			r.Error(wrongArity("client|setname"))
			return
		}
		if !validClientName(args[2]) {
			r.Error("ERR Client names cannot contain spaces, newlines or special characters.")
			return
		}
		c.Name = string(args[2])
		r.OK()
	case "getname":
		if c.Name == "" {
			r.Null()
		} else {
			r.BulkString(c.Name)
		}
	case "id":
		r.Int(c.ID)
	case "setinfo":
		if len(args) != 4 {
			r.Error(wrongArity("client|setinfo"))
			return
		}
		attr := strings.ToLower(string(args[2]))
		if attr != "lib-name" && attr != "lib-ver" {
			r.Error("ERR Unrecognized option '" + trimArg(args[2]) + "'")
			return
		}
		if !validClientName(args[3]) {
			r.Error("ERR " + attr + " cannot contain spaces, newlines or special characters.")
			return
		}
		if attr == "lib-name" {
			c.LibName = string(args[3])
		} else {
			c.LibVer = string(args[3])
		}
		r.OK()
	case "info":
		r.Verbatim(s.clientLine(c) + "\n")
	case "list":
		var b strings.Builder
		for _, sc := range s.sessionList() {
			b.WriteString(s.clientLine(sc))
			b.WriteByte('\n')
		}
		r.Verbatim(b.String())
	default:
		r.Error("ERR unknown subcommand '" + trimArg(args[1]) + "'. Try CLIENT HELP.")
	}
}

func (s *Server) clientLine(c *Session) string {
	resp := 2
	if c.resp3 {
		resp = 3
	}
	return fmt.Sprintf("id=%d addr=%s name=%s age=%d db=0 resp=%d lib-name=%s lib-ver=%s",
		c.ID, c.Addr, c.Name, int(time.Since(c.created).Seconds()), resp, c.LibName, c.LibVer)
}

func cmdCommand(s *Server, c *Session, args [][]byte, r *Reply) {
	names := make([]string, 0, len(commandTable))
	for n := range commandTable {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(args) == 1 {
		r.Array(len(names))
		for _, n := range names {
			commandInfo(commandTable[n], r)
		}
		return
	}
	switch strings.ToLower(string(args[1])) {
	case "count":
		r.Int(int64(len(commandTable)))
	case "list":
		r.Array(len(names))
		for _, n := range names {
			r.BulkString(n)
		}
	case "info":
		if len(args) == 2 {
			r.Array(len(names))
			for _, n := range names {
				commandInfo(commandTable[n], r)
			}
			return
		}
		r.Array(len(args) - 2)
		for _, a := range args[2:] {
			if cmd, ok := commandTable[strings.ToLower(string(a))]; ok {
				commandInfo(cmd, r)
			} else {
				r.NullArray()
			}
		}
	case "docs":
		want := names
		if len(args) > 2 {
			want = nil
			for _, a := range args[2:] {
				if _, ok := commandTable[strings.ToLower(string(a))]; ok {
					want = append(want, strings.ToLower(string(a)))
				}
			}
		}
		r.Map(len(want))
		for _, n := range want {
			cmd := commandTable[n]
			r.BulkString(n)
			group := "generic"
			switch {
			case strings.HasPrefix(n, "bf."):
				group = "bf"
			case strings.HasPrefix(n, "cf."):
				group = "cf"
			}
			r.Map(3)
			r.BulkString("summary")
			r.BulkString(strings.ToUpper(cmd.name) + " (bloomkit)")
			r.BulkString("since")
			r.BulkString("1.0.0")
			r.BulkString("group")
			r.BulkString(group)
		}
	default:
		r.Error("ERR unknown subcommand '" + trimArg(args[1]) + "'. Try COMMAND HELP.")
	}
}

func commandInfo(c *command, r *Reply) {
	r.Array(10)
	r.BulkString(c.name)
	r.Int(int64(c.arity))
	r.Set(len(c.flags))
	for _, f := range c.flags {
		r.Simple(f)
	}
	r.Int(int64(c.first))
	r.Int(int64(c.last))
	r.Int(int64(c.step))
	r.Set(0)
	r.Set(0)
	r.Array(0)
	r.Array(0)
}

func cmdDel(s *Server, c *Session, args [][]byte, r *Reply) {
	n := int64(0)
	for _, k := range args[1:] {
		if e := s.db.get(string(k)); e != nil {
			s.db.drop(string(k), e)
			n++
		}
	}
	if n == 0 {
		c.skipLog = true
	}
	r.Int(n)
}

func cmdExists(s *Server, c *Session, args [][]byte, r *Reply) {
	n := int64(0)
	for _, k := range args[1:] {
		if s.db.get(string(k)) != nil {
			n++
		}
	}
	r.Int(n)
}

func cmdType(s *Server, c *Session, args [][]byte, r *Reply) {
	e := s.db.get(string(args[1]))
	if e == nil {
		r.Simple("none")
		return
	}
	r.Simple(e.kind.String())
}

func cmdKeys(s *Server, c *Session, args [][]byte, r *Reply) {
	pat := string(args[1])
	now := s.db.nowMs()
	var out []string
	for k, e := range s.db.keys {
		if e.expireAt != 0 && e.expireAt <= now {
			continue
		}
		if pat == "*" || globMatch(pat, k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	r.Array(len(out))
	for _, k := range out {
		r.BulkString(k)
	}
}

func cmdScan(s *Server, c *Session, args [][]byte, r *Reply) {
	cur, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		r.Error("ERR invalid cursor")
		return
	}
	count := int64(10)
	pat, typ := "", ""
	for i := 2; i < len(args); i++ {
		opt := strings.ToLower(string(args[i]))
		if i+1 >= len(args) {
			r.Error("ERR syntax error")
			return
		}
		switch opt {
		case "count":
			v, ok := parseInt(args[i+1])
			if !ok {
				r.Error("ERR value is not an integer or out of range")
				return
			}
			if v < 1 {
				r.Error("ERR syntax error")
				return
			}
			count = v
		case "match":
			pat = string(args[i+1])
		case "type":
			typ = strings.ToLower(string(args[i+1]))
		default:
			r.Error("ERR syntax error")
			return
		}
		i++
	}
	keys := s.db.scanOrder()
	i := sort.Search(len(keys), func(i int) bool { return keys[i].h >= cur })
	var out []string
	next := uint64(0)
	visited := int64(0)
	for ; i < len(keys); i++ {
		if visited >= count && keys[i].h != keys[i-1].h {
			next = keys[i].h
			break
		}
		visited++
		k := keys[i].k
		if pat != "" && !globMatch(pat, k) {
			continue
		}
		if typ != "" && strings.ToLower(s.db.keys[k].kind.String()) != typ {
			continue
		}
		out = append(out, k)
	}
	r.Array(2)
	r.BulkString(strconv.FormatUint(next, 10))
	r.Array(len(out))
	for _, k := range out {
		r.BulkString(k)
	}
}

func cmdRename(s *Server, c *Session, args [][]byte, r *Reply) {
	src, dst := string(args[1]), string(args[2])
	e := s.db.get(src)
	if e == nil {
		r.Error("ERR no such key")
		return
	}
	if src != dst {
		s.db.remove(src, e)
		s.db.used += e.dataBytes() // remove subtracted the filter; put adds only the key
		if old := s.db.get(dst); old != nil {
			s.db.drop(dst, old)
		}
		s.db.keys[dst] = e
		s.db.used += uint64(len(dst)) + keyOverhead
		s.db.dirty++
	}
	r.OK()
}

// EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT key time [NX|XX|GT|LT]
func cmdExpire(s *Server, c *Session, args [][]byte, r *Reply) {
	name := lowerName(args[0])
	v, ok := parseInt(args[2])
	if !ok {
		r.Error("ERR value is not an integer or out of range")
		return
	}
	var nx, xx, gt, lt bool
	for _, a := range args[3:] {
		switch strings.ToUpper(string(a)) {
		case "NX":
			nx = true
		case "XX":
			xx = true
		case "GT":
			gt = true
		case "LT":
			lt = true
		default:
			r.Error("ERR Unsupported option " + trimArg(a))
			return
		}
	}
	if nx && (xx || gt || lt) {
		r.Error("ERR NX and XX, GT or LT options at the same time are not compatible")
		return
	}
	if gt && lt {
		r.Error("ERR GT and LT options at the same time are not compatible")
		return
	}
	now := s.db.nowMs()
	var at int64
	const maxMs = 1 << 62
	switch name {
	case "expire":
		if v > maxMs/1000 || v < -maxMs/1000 {
			r.Error("ERR invalid expire time in '" + name + "' command")
			return
		}
		at = now + v*1000
	case "pexpire":
		if v > maxMs || v < -maxMs {
			r.Error("ERR invalid expire time in '" + name + "' command")
			return
		}
		at = now + v
	case "expireat":
		if v > maxMs/1000 || v < -maxMs/1000 {
			r.Error("ERR invalid expire time in '" + name + "' command")
			return
		}
		at = v * 1000
	default:
		at = v
	}
	key := string(args[1])
	e := s.db.get(key)
	if e == nil {
		c.skipLog = true
		r.Int(0)
		return
	}
	cur := e.expireAt
	if (nx && cur != 0) || (xx && cur == 0) ||
		(gt && (cur == 0 || at <= cur)) || (lt && cur != 0 && at >= cur) {
		c.skipLog = true
		r.Int(0)
		return
	}
	if at <= now && !s.db.loading {
		s.db.drop(key, e)
	} else {
		e.expireAt = at
		s.db.dirty++
	}
	c.logArgs = [][]byte{[]byte("PEXPIREAT"), args[1], []byte(strconv.FormatInt(at, 10))}
	r.Int(1)
}

func cmdTTL(s *Server, c *Session, args [][]byte, r *Reply) {
	e := s.db.get(string(args[1]))
	switch {
	case e == nil:
		r.Int(-2)
	case e.expireAt == 0:
		r.Int(-1)
	default:
		ms := e.expireAt - s.db.nowMs()
		if lowerName(args[0]) == "ttl" {
			r.Int((ms + 500) / 1000)
		} else {
			r.Int(ms)
		}
	}
}

func cmdPersist(s *Server, c *Session, args [][]byte, r *Reply) {
	e := s.db.get(string(args[1]))
	if e == nil || e.expireAt == 0 {
		c.skipLog = true
		r.Int(0)
		return
	}
	e.expireAt = 0
	s.db.dirty++
	r.Int(1)
}

func cmdDBSize(s *Server, c *Session, args [][]byte, r *Reply) {
	r.Int(int64(len(s.db.keys)))
}

func cmdFlush(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) > 2 {
		r.Error("ERR syntax error")
		return
	}
	if len(args) == 2 {
		m := strings.ToUpper(string(args[1]))
		if m != "ASYNC" && m != "SYNC" {
			r.Error("ERR syntax error")
			return
		}
	}
	s.db.flush()
	r.OK()
}

func cmdSave(s *Server, c *Session, args [][]byte, r *Reply) {
	if s.persist.saving.Load() {
		r.Error("ERR Background save already in progress")
		return
	}
	if err := s.Save(); err != nil {
		r.Error("ERR " + err.Error())
		return
	}
	r.OK()
}

// BGSAVE [SCHEDULE]
func cmdBGSave(s *Server, c *Session, args [][]byte, r *Reply) {
	schedule := false
	if len(args) == 2 && strings.EqualFold(string(args[1]), "SCHEDULE") {
		schedule = true
	} else if len(args) > 1 {
		r.Error("ERR syntax error")
		return
	}
	if !s.startRewrite("BGSAVE") {
		if schedule {
			s.persist.scheduled.Store(true)
			r.Simple("Background saving scheduled")
			return
		}
		r.Error("ERR Background save already in progress")
		return
	}
	r.Simple("Background saving started")
}

// BGREWRITEAOF: the log is rewritten by writing a snapshot and starting a
// new log after it, so this is BGSAVE by another name.
func cmdBGRewriteAOF(s *Server, c *Session, args [][]byte, r *Reply) {
	if s.aof == nil {
		// Redis rewrites even with appendonly off; without a data
		// directory there is nothing to rewrite.
		r.Simple("Background append only file rewriting started")
		return
	}
	if !s.startRewrite("BGREWRITEAOF") {
		r.Error("ERR Background append only file rewriting already in progress")
		return
	}
	r.Simple("Background append only file rewriting started")
}

func cmdLastSave(s *Server, c *Session, args [][]byte, r *Reply) {
	r.Int(s.persist.lastSave.Load())
}

// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]: stop the server. By default (and
// with SAVE) a snapshot is written first; if that fails the server keeps
// running and answers an error, unless FORCE. NOSAVE skips the snapshot;
// the log is fsynced either way, so nothing acknowledged is lost.
func cmdShutdown(s *Server, c *Session, args [][]byte, r *Reply) {
	save, nosave, force := false, false, false
	for _, a := range args[1:] {
		switch strings.ToUpper(string(a)) {
		case "SAVE":
			save = true
		case "NOSAVE":
			nosave = true
		case "NOW":
		case "FORCE":
			force = true
		case "ABORT":
			r.Error("ERR No shutdown in progress.")
			return
		default:
			r.Error("ERR syntax error")
			return
		}
	}
	if save && nosave {
		r.Error("ERR syntax error")
		return
	}
	if !nosave && !s.cfg.NoPersistence {
		if err := s.Save(); err != nil && !force {
			s.log.Error("SHUTDOWN: the snapshot failed; not shutting down", "err", err)
			r.Error("ERR Errors trying to SHUTDOWN. Check logs.")
			return
		}
	}
	if s.aof != nil {
		if err := s.aof.flushTo(0, true); err != nil && !force {
			s.log.Error("SHUTDOWN: the append-only log could not be fsynced; not shutting down", "err", err)
			r.Error("ERR Errors trying to SHUTDOWN. Check logs.")
			return
		}
	}
	s.log.Info("SHUTDOWN requested; stopping", "client", c.Addr)
	c.quit = true
	s.shutdownOnce.Do(func() { close(s.shutdownReq) })
}

// INFO [section ...]
func cmdInfo(s *Server, c *Session, args [][]byte, r *Reply) {
	want := map[string]bool{}
	for _, a := range args[1:] {
		want[strings.ToLower(string(a))] = true
	}
	all := len(want) == 0 || want["all"] || want["everything"] || want["default"]
	var b strings.Builder
	section := func(name string, lines ...string) {
		if !all && !want[strings.ToLower(name)] {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + name + "\r\n")
		for _, l := range lines {
			b.WriteString(l)
			b.WriteString("\r\n")
		}
	}
	uptime := int64(time.Since(s.started).Seconds())
	host, port := splitHostPort(s.Addr())
	_ = host
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	section("Server",
		"redis_version:"+RedisVersion,
		"bloomkit_version:"+BloomkitVersion,
		"redis_mode:standalone",
		"os:"+runtime.GOOS+" "+runtime.GOARCH,
		"arch_bits:64",
		"go_version:"+runtime.Version(),
		"process_id:"+strconv.Itoa(pid()),
		"tcp_port:"+port,
		"uptime_in_seconds:"+itoa(uptime),
		"uptime_in_days:"+itoa(uptime/86400),
		"executable:bloom serve",
	)
	section("Clients",
		"connected_clients:"+itoa(s.clients.Load()),
		"maxclients:10000",
	)
	limit := s.db.limit
	section("Memory",
		"used_memory:"+strconv.FormatUint(s.db.used, 10),
		"used_memory_human:"+human(s.db.used),
		"used_memory_rss:"+strconv.FormatUint(processRSS(ms.Sys), 10),
		"used_memory_go_heap:"+strconv.FormatUint(ms.HeapAlloc, 10),
		"maxmemory:"+strconv.FormatUint(s.cfg.MaxMemory, 10),
		"maxmemory_human:"+human(s.cfg.MaxMemory),
		"maxmemory_effective:"+strconv.FormatUint(limit, 10),
		"maxmemory_policy:noeviction",
	)
	section("Persistence", s.persistenceInfo()...)
	section("Stats",
		"total_connections_received:"+itoa(s.totalConns.Load()),
		"total_commands_processed:"+itoa(s.totalCmds.Load()),
		"expired_keys:"+strconv.FormatUint(s.db.expired, 10),
	)
	section("Replication", "role:master", "connected_slaves:0")
	var expires int
	for _, e := range s.db.keys {
		if e.expireAt != 0 {
			expires++
		}
	}
	if len(s.db.keys) > 0 {
		section("Keyspace", fmt.Sprintf("db0:keys=%d,expires=%d,avg_ttl=0", len(s.db.keys), expires))
	} else {
		section("Keyspace")
	}
	r.Verbatim(b.String())
}

func human(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// CONFIG GET pattern... answers the settings tools such as redis-benchmark
// read; CONFIG SET and others are refused (settings come from flags).
func cmdConfig(s *Server, c *Session, args [][]byte, r *Reply) {
	sub := strings.ToLower(string(args[1]))
	if sub == "resetstat" {
		r.OK()
		return
	}
	if sub != "get" {
		r.Error("ERR CONFIG " + strings.ToUpper(sub) + " is not supported by bloomkit; use command-line flags")
		return
	}
	if len(args) < 3 {
		r.Error(wrongArity("config|get"))
		return
	}
	appendonly := "yes"
	if s.cfg.NoPersistence {
		appendonly = "no"
	}
	vals := [][2]string{
		{"appendfsync", s.cfg.AppendFsync},
		{"appendonly", appendonly},
		{"bind", s.Addr()},
		{"databases", "1"},
		{"dir", s.cfg.Dir},
		{"maxmemory", strconv.FormatUint(s.db.limit, 10)},
		{"maxmemory-policy", "noeviction"},
		{"port", func() string { _, p := splitHostPort(s.Addr()); return p }()},
		{"save", ""},
	}
	var out [][2]string
	for _, v := range vals {
		for _, p := range args[2:] {
			if globMatch(strings.ToLower(string(p)), v[0]) {
				out = append(out, v)
				break
			}
		}
	}
	r.Map(len(out))
	for _, v := range out {
		r.BulkString(v[0])
		r.BulkString(v[1])
	}
}

func cmdMulti(s *Server, c *Session, args [][]byte, r *Reply) {
	if c.multi != nil {
		r.Error("ERR MULTI calls can not be nested")
		return
	}
	c.multi = []queued{{}}
	c.multiErr = false
	r.OK()
}

func cmdDiscard(s *Server, c *Session, args [][]byte, r *Reply) {
	if c.multi == nil {
		r.Error("ERR DISCARD without MULTI")
		return
	}
	c.multi, c.multiErr = nil, false
	r.OK()
}

// WATCH is refused: optimistic locking is not implemented.
func cmdWatch(s *Server, c *Session, args [][]byte, r *Reply) {
	if lowerName(args[0]) == "unwatch" {
		r.OK()
		return
	}
	if c.multi != nil {
		r.Error("ERR WATCH inside MULTI is not allowed")
		return
	}
	r.Error("ERR WATCH is not supported by bloomkit")
}

// processRSS is the resident set size from /proc/self/statm, or fallback.
func processRSS(fallback uint64) uint64 {
	raw, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return fallback
	}
	f := strings.Fields(string(raw))
	if len(f) < 2 {
		return fallback
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return fallback
	}
	return pages * uint64(os.Getpagesize())
}
