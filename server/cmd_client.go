package server

// CLIENT and its subcommands. Session fields other sessions read (Name,
// LibName, LibVer, resp3, multi, noEvict) change only under db.mu, which
// CLIENT LIST and INFO hold too.

import (
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/bloomkit/bloomkit/server/internal/acl"
	"github.com/bloomkit/bloomkit/server/internal/resp"
)

func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

func cmdClient(s *Server, c *Session, args [][]byte, r *Reply) {
	c.argvMem = 0 // CLIENT LIST's argv-mem: this command's arguments
	for _, a := range args {
		c.argvMem += int64(len(a))
	}
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
		if len(args) != 2 {
			r.Error(wrongArity("client|getname"))
			return
		}
		if c.Name == "" {
			r.Null()
		} else {
			r.BulkString(c.Name)
		}
	case "id":
		if len(args) != 2 {
			r.Error(wrongArity("client|id"))
			return
		}
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
		if len(args) != 2 {
			r.Error(wrongArity("client|info"))
			return
		}
		r.Verbatim(s.clientLine(c, c) + "\n")
	case "list":
		clientList(s, c, args, r)
	case "kill":
		clientKill(s, c, args, r)
	case "no-evict":
		if len(args) != 3 {
			r.Error(wrongArity("client|no-evict"))
			return
		}
		switch strings.ToLower(string(args[2])) {
		case "on":
			c.noEvict = true
		case "off":
			c.noEvict = false
		default:
			r.Error("ERR syntax error")
			return
		}
		r.OK()
	case "reply":
		if len(args) != 3 {
			r.Error(wrongArity("client|reply"))
			return
		}
		switch strings.ToLower(string(args[2])) {
		case "on":
			c.replyOff, c.skipReplies = false, 0
			r.OK()
		case "off":
			c.replyOff = true
		case "skip":
			if !c.replyOff {
				c.skipReplies = 2 // this reply and the next command's
			}
		default:
			r.Error("ERR syntax error")
		}
	case "help":
		helpReply(r, "CLIENT",
			"GETNAME",
			"    Return the name of the current connection.",
			"ID",
			"    Return the ID of the current connection.",
			"INFO",
			"    Return information about the current client connection.",
			"KILL <ip:port>",
			"    Kill connection made from <ip:port>.",
			"KILL <option> <value> [<option> <value> [...]]",
			"    Kill connections. Options are:",
			"    * ADDR (<ip:port>|<unixsocket>:0)",
			"      Kill connections made from the specified address",
			"    * LADDR (<ip:port>|<unixsocket>:0)",
			"      Kill connections made to specified local address",
			"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
			"      Kill connections by type.",
			"    * USER <username>",
			"      Kill connections authenticated by <username>.",
			"    * SKIPME (YES|NO)",
			"      Skip killing current connection (default: yes).",
			"    * ID <client-id>",
			"      Kill connections by client id.",
			"    * MAXAGE <maxage>",
			"      Kill connections older than the specified age.",
			"LIST [options ...]",
			"    Return information about client connections. Options:",
			"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
			"      Return clients of specified type.",
			"    * ID <client-id> [<client-id> ...]",
			"      Return clients of specified IDs only.",
			"NO-EVICT (ON|OFF)",
			"    Protect current client connection from eviction.",
			"REPLY (ON|OFF|SKIP)",
			"    Control the replies sent to the current connection.",
			"SETNAME <name>",
			"    Assign the name <name> to the current connection.",
			"SETINFO <option> <value>",
			"    Set client meta attr. Options are:",
			"    * LIB-NAME: the client lib name.",
			"    * LIB-VER: the client lib version.",
		)
	default:
		r.Error("ERR unknown subcommand '" + trimArg(args[1]) + "'. Try CLIENT HELP.")
	}
}

// CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id [id ...]]
func clientList(s *Server, c *Session, args [][]byte, r *Reply) {
	var ids map[int64]bool
	typ := ""
	for i := 2; i < len(args); i++ {
		switch strings.ToLower(string(args[i])) {
		case "type":
			if i+1 >= len(args) {
				r.Error("ERR syntax error")
				return
			}
			typ = strings.ToLower(string(args[i+1]))
			if !validClientType(typ) {
				r.Error("ERR Unknown client type '" + trimArg(args[i+1]) + "'")
				return
			}
			i++
		case "id":
			if i+1 >= len(args) {
				r.Error("ERR syntax error")
				return
			}
			ids = map[int64]bool{}
			for i++; i < len(args); i++ {
				id, ok := resp.ParseInt(args[i])
				if !ok || id <= 0 {
					r.Error("ERR Invalid client ID")
					return
				}
				ids[id] = true
			}
		default:
			r.Error("ERR syntax error")
			return
		}
	}
	if typ == "replica" {
		typ = "slave"
	}
	var b strings.Builder
	for _, sc := range s.sessionList() {
		if ids != nil && !ids[sc.ID] || typ != "" && sc.clientType() != typ {
			continue
		}
		b.WriteString(s.clientLine(c, sc))
		b.WriteByte('\n')
	}
	r.Verbatim(b.String())
}

func validClientType(t string) bool {
	switch t {
	case "normal", "master", "replica", "slave", "pubsub":
		return true
	}
	return false
}

// CLIENT KILL ip:port | CLIENT KILL <filter> <value> ... (ID, ADDR, LADDR,
// USER, TYPE, SKIPME, MAXAGE; all given must match).
func clientKill(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) == 3 {
		// The old form: one address, +OK or an error.
		addr := string(args[2])
		for _, sc := range s.sessionList() {
			if sc.Addr == addr && !sc.closing.Load() {
				if sc == c {
					c.closing.Store(true)
				} else {
					sc.disconnect()
				}
				r.OK()
				return
			}
		}
		r.Error("ERR No such client")
		return
	}
	if len(args)%2 != 0 {
		r.Error("ERR syntax error")
		return
	}
	var (
		id                int64
		addr, laddr, user string
		typ               string
		maxAge            int64
		skipMe            = true
	)
	for i := 2; i < len(args); i += 2 {
		v := args[i+1]
		switch strings.ToLower(string(args[i])) {
		case "id":
			n, ok := resp.ParseInt(v)
			if !ok || n <= 0 {
				r.Error("ERR client-id should be greater than 0")
				return
			}
			id = n
		case "addr":
			addr = string(v)
		case "laddr":
			laddr = string(v)
		case "user":
			user = string(v)
			if s.users.Get(user) == nil {
				r.Error("ERR No such user '" + trimArg(v) + "'")
				return
			}
		case "type":
			typ = strings.ToLower(string(v))
			if !validClientType(typ) {
				r.Error("ERR Unknown client type '" + trimArg(v) + "'")
				return
			}
			if typ == "replica" {
				typ = "slave"
			}
		case "skipme":
			switch strings.ToLower(string(v)) {
			case "yes":
				skipMe = true
			case "no":
				skipMe = false
			default:
				r.Error("ERR syntax error")
				return
			}
		case "maxage":
			n, ok := resp.ParseInt(v)
			if !ok || n < 0 {
				r.Error("ERR syntax error")
				return
			}
			maxAge = n
		default:
			r.Error("ERR syntax error")
			return
		}
	}
	killed := int64(0)
	if typ == "master" && id == 0 && addr == "" && laddr == "" && user == "" && maxAge == 0 && s.killMasterLink() {
		// The link to this replica's master: it reconnects and
		// continues where it was (PSYNC), as a Redis replica does.
		killed++
	}
	now := time.Now()
	for _, sc := range s.sessionList() {
		switch {
		case id != 0 && sc.ID != id,
			addr != "" && sc.Addr != addr,
			user != "" && sessionUser(sc) != user,
			laddr != "" && sc.LocalAddr != laddr,
			typ != "" && sc.clientType() != typ,
			maxAge != 0 && int64(now.Sub(sc.created).Seconds()) < maxAge,
			skipMe && sc == c,
			sc.closing.Load(): // killed already, not yet gone
			continue
		}
		if sc == c {
			// Itself: closed after this reply is sent, as in Redis.
			c.closing.Store(true)
		} else {
			sc.disconnect()
		}
		killed++
	}
	r.Int(killed)
}

// clientLine is one CLIENT LIST / CLIENT INFO line, in Redis's field order
// (fields with no meaning here are reported as Redis reports an idle
// client's). me is the session asking (db.mu held).
func (s *Server) clientLine(me, c *Session) string {
	resp := "2"
	if c.resp3 {
		resp = "3"
	}
	// Flags in Redis's order: S replica, M master, P subscribed, x in
	// MULTI, e no-evict; N for none.
	flags := ""
	switch c.replRole.Load() {
	case roleReplica:
		flags += "S"
	case roleMaster:
		flags += "M"
	}
	nsub, npsub := c.nsub.Load(), c.npsub.Load()
	if nsub+npsub > 0 {
		flags += "P"
	}
	multi := "-1"
	if n := c.txnLen.Load(); n > 0 {
		flags += "x"
		multi = strconv.FormatInt(n-1, 10)
	}
	if c.noEvict {
		flags += "e"
	}
	if c.monitoring.Load() {
		flags += "O"
	}
	if flags == "" {
		flags = "N"
	}
	cmd := "NULL"
	if cc := c.curCmd.Load(); cc != nil {
		cmd = cc.name
		if sub := c.curSub.Load(); cc.hasSubcommands && sub != nil {
			cmd = sub.Name
		}
	}
	now := time.Now()
	age := int64(now.Sub(c.created).Seconds())
	idle := (now.UnixMilli() - c.lastCmd.Load()) / 1000
	var b strings.Builder
	b.Grow(256)
	b.WriteString("id=" + itoa(c.ID))
	b.WriteString(" addr=" + c.Addr)
	b.WriteString(" laddr=" + c.LocalAddr)
	b.WriteString(" fd=" + itoa(c.fd.Load()) + " name=" + c.Name)
	b.WriteString(" age=" + itoa(age) + " idle=" + itoa(max(idle, 0)))
	b.WriteString(" flags=" + flags + " db=0 sub=" + itoa(nsub) + " psub=" + itoa(npsub) + " ssub=0 multi=" + multi)
	// The buffers as the client's request loop last published them (at
	// its last read and write; sessionMem); argv-mem is the command
	// running, which is only the caller's own at this point.
	m := &c.mem
	var argv int64
	if c == me {
		argv = me.argvMem
	}
	// rbs and rbp are Redis's reply buffer (its size, and what it holds
	// here); omem the replies not yet written, which the output limits
	// count; tot-mem all of it with the request buffer and the session.
	qbuf, qfree, qsize := m.qbuf.Load(), m.qbufFree.Load(), m.rbs.Load()
	omem, outCap, multiMem := m.omem.Load(), m.outCap.Load(), m.multi.Load()
	tot := sessionOverhead + qsize + outCap + multiMem + argv
	b.WriteString(" qbuf=" + itoa(qbuf) + " qbuf-free=" + itoa(qfree) + " argv-mem=" + itoa(argv) + " multi-mem=" + itoa(multiMem))
	b.WriteString(" rbs=" + itoa(outCap) + " rbp=" + itoa(omem) + " obl=0 oll=0 omem=" + itoa(omem) + " tot-mem=" + itoa(tot))
	b.WriteString(" events=r cmd=" + cmd + " user=" + sessionUser(c) + " redir=-1 resp=" + resp)
	b.WriteString(" lib-name=" + c.LibName + " lib-ver=" + c.LibVer)
	return b.String()
}

// sessionOverhead is what a connection costs besides its buffers (CLIENT
// LIST tot-mem): its Session and request loop state.
const sessionOverhead = int64(unsafe.Sizeof(Session{}) + unsafe.Sizeof(client{}))

// sessionUser is the name of the user c runs as.
func sessionUser(c *Session) string {
	if u := c.user.Load(); u != nil {
		return u.Name()
	}
	return acl.DefaultUser
}
