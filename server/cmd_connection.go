package server

// Connection commands: PING, ECHO, QUIT, SELECT, AUTH, HELLO, RESET.

import (
	"strings"

	"github.com/bloomkit/bloomkit/internal/version"
	"github.com/bloomkit/bloomkit/server/internal/acl"
	"github.com/bloomkit/bloomkit/server/internal/resp"
)

// RedisVersion is the redis_version INFO and HELLO report. Clients and
// tools choose what to send by it (go-redis, redis-py, redis_exporter,
// Sentinel), and refuse or misuse a server whose version is not a Redis
// one, so the server reports the Redis release whose commands and replies
// it follows. bloomkit's own version is INFO's bloomkit_version, from
// package version (buildInfo).
const RedisVersion = "7.2.4"

// buildInfo is this binary's version, commit and toolchain.
var buildInfo = version.Get()

func cmdPing(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) <= 2 && !c.resp3 && c.subscribed() {
		// In subscribed mode a RESP2 client reads arrays only.
		r.Array(2)
		r.BulkString("pong")
		if len(args) == 2 {
			r.Bulk(args[1])
		} else {
			r.BulkString("")
		}
		return
	}
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
	n, ok := resp.ParseInt(args[1])
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

// AUTH password | AUTH user password: the connection becomes the user.
func cmdAuth(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) > 3 {
		r.Error("ERR syntax error")
		return
	}
	user, pass := []byte(acl.DefaultUser), args[1]
	if len(args) == 3 {
		user, pass = args[1], args[2]
	} else if s.users.Default().Rules().NoPass() {
		r.Error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		return
	}
	if !s.authenticate(c, user, pass, args[0]) {
		r.Error(errWrongPass)
		return
	}
	r.OK()
}

func cmdHello(s *Server, c *Session, args [][]byte, r *Reply) {
	proto := int64(2)
	if c.resp3 {
		proto = 3
	}
	if len(args) >= 2 {
		v, ok := resp.ParseInt(args[1])
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
			if !s.authenticate(c, args[i+1], args[i+2], args[0]) {
				r.Error(errWrongPass)
				return
			}
			authed = true
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
	if !authed && s.authRequired() {
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
	if c.sub != nil {
		c.sub.resp3.Store(c.resp3) // messages from now on
	}
	r.w.SetRESP3(c.resp3)
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
	if s.isReplica() {
		r.BulkString("replica")
	} else {
		r.BulkString("master")
	}
	r.BulkString("modules")
	r.Array(1)
	moduleReply(r)
}

// RESET returns the connection to its state after connecting: MULTI
// discarded, no subscriptions, replies on, RESP2, no name, and not
// authenticated when a password is required.
func cmdReset(s *Server, c *Session, args [][]byte, r *Reply) {
	s.endMonitor(c)
	s.unsubscribeAll(c)
	if c.sub != nil {
		c.sub.resp3.Store(false)
	}
	s.db.Lock() // other sessions' CLIENT LIST reads these fields
	s.endMulti(c)
	s.unwatch(c)
	c.replyOff, c.skipReplies = false, 0
	c.Name = ""
	c.noEvict = false
	c.resp3 = false
	s.startSession(c) // back to the default user
	s.db.Unlock()
	r.w.SetRESP3(false)
	r.Simple("RESET")
}
