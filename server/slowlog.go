package server

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/resp"
)

// Redis's slow log: commands whose execution took at least
// slowlog-log-slower-than microseconds (negative: none; 0: every command)
// are kept, newest first, up to slowlog-max-len entries. Arguments are
// trimmed as Redis trims them, so that a huge BF.LOADCHUNK cannot make the
// log large: at most slowlogMaxArgs arguments (the last slot then says how
// many more there were), each at most slowlogMaxArgLen bytes.
const (
	slowlogMaxArgs   = 32
	slowlogMaxArgLen = 128

	defaultSlowlogSlowerThan = 10000
	defaultSlowlogMaxLen     = 128
)

type slowEntry struct {
	id         int64
	at         int64 // unix seconds
	usec       int64
	args       []string
	addr, name string
}

// slowlog keeps entries oldest first; the newest maxLen are the log. Old
// ones are cut off in one copy once twice as many accumulated, so adding
// is O(1) amortized whatever slowlog-max-len is.
type slowlog struct {
	mu      sync.Mutex
	entries []slowEntry
	maxLen  int
	nextID  int64
}

// newest returns up to n entries, newest first (mu held).
func (l *slowlog) newest(n int) []slowEntry {
	live := l.entries[max(len(l.entries)-l.maxLen, 0):]
	n = min(n, len(live))
	out := make([]slowEntry, n)
	for i := range out {
		out[i] = live[len(live)-1-i]
	}
	return out
}

// add records a command (its session's name read under db.mu or by the
// session's own goroutine: the caller's).
func (l *slowlog) add(c *Session, args [][]byte, start time.Time, d time.Duration, maxLen int) {
	if maxLen <= 0 {
		return
	}
	e := slowEntry{at: start.Unix(), usec: d.Microseconds(), addr: c.Addr, name: c.Name}
	n := len(args)
	if n > slowlogMaxArgs {
		n = slowlogMaxArgs
	}
	e.args = make([]string, 0, n)
	for i := 0; i < n; i++ {
		if i == slowlogMaxArgs-1 && len(args) > slowlogMaxArgs {
			e.args = append(e.args, "... ("+strconv.Itoa(len(args)-slowlogMaxArgs+1)+" more arguments)")
			break
		}
		a := args[i]
		if len(a) > slowlogMaxArgLen {
			e.args = append(e.args, string(a[:slowlogMaxArgLen])+"... ("+strconv.Itoa(len(a)-slowlogMaxArgLen)+" more bytes)")
		} else {
			e.args = append(e.args, string(a))
		}
	}
	redact(e.args)
	l.mu.Lock()
	e.id = l.nextID
	l.nextID++
	l.maxLen = maxLen
	l.entries = append(l.entries, e)
	if len(l.entries) >= 2*maxLen {
		l.entries = append(l.entries[:0:0], l.entries[len(l.entries)-maxLen:]...)
	}
	l.mu.Unlock()
}

// redact hides passwords, as Redis does in its slow log: the arguments of
// AUTH, HELLO's AUTH pair, the value CONFIG SET gives every secret
// parameter (requirepass, masterauth, tls-key-file-pass, ...), and those of
// ACL SETUSER, DELUSER and GETUSER (rules hold passwords).
func redact(args []string) {
	if len(args) == 0 {
		return
	}
	switch strings.ToLower(args[0]) {
	case "auth":
		for i := 1; i < len(args); i++ {
			args[i] = "(redacted)"
		}
	case "hello":
		for i := 2; i < len(args); i++ {
			if strings.EqualFold(args[i], "AUTH") {
				for j := i + 1; j < len(args) && j <= i+2; j++ {
					args[j] = "(redacted)"
				}
			}
		}
	case "acl":
		if len(args) > 2 {
			switch strings.ToLower(args[1]) {
			case "setuser", "deluser", "getuser":
				for i := 2; i < len(args); i++ {
					args[i] = "(redacted)"
				}
			}
		}
	case "config":
		if len(args) > 2 && strings.EqualFold(args[1], "SET") {
			for i := 2; i+1 < len(args); i += 2 {
				args[i+1] = redactValue(args[i], args[i+1])
			}
		}
	}
}

// trim keeps at most maxLen entries (CONFIG SET slowlog-max-len).
func (l *slowlog) trim(maxLen int) {
	l.mu.Lock()
	l.maxLen = max(maxLen, 0)
	if len(l.entries) > l.maxLen {
		l.entries = append(l.entries[:0:0], l.entries[len(l.entries)-l.maxLen:]...)
	}
	l.mu.Unlock()
}

// SLOWLOG GET [count] | LEN | RESET | HELP
func cmdSlowlog(s *Server, c *Session, args [][]byte, r *Reply) {
	l := &s.slowlog
	switch strings.ToLower(string(args[1])) {
	case "get":
		if len(args) > 3 {
			r.Error(wrongArity("slowlog|get"))
			return
		}
		count := 10
		if len(args) == 3 {
			v, ok := resp.ParseInt(args[2])
			if !ok || v < -1 {
				r.Error("ERR count should be greater than or equal to -1")
				return
			}
			count = int(min(v, 1<<30))
			if v == -1 {
				count = 1 << 30
			}
		}
		l.mu.Lock()
		entries := l.newest(count)
		r.Array(len(entries))
		for _, e := range entries {
			r.Array(6)
			r.Int(e.id)
			r.Int(e.at)
			r.Int(e.usec)
			r.Array(len(e.args))
			for _, a := range e.args {
				r.BulkString(a)
			}
			r.BulkString(e.addr)
			r.BulkString(e.name)
		}
		l.mu.Unlock()
	case "len":
		if len(args) != 2 {
			r.Error(wrongArity("slowlog|len"))
			return
		}
		l.mu.Lock()
		r.Int(int64(min(len(l.entries), l.maxLen)))
		l.mu.Unlock()
	case "reset":
		if len(args) != 2 {
			r.Error(wrongArity("slowlog|reset"))
			return
		}
		l.mu.Lock()
		l.entries = nil
		l.mu.Unlock()
		r.OK()
	case "help":
		helpReply(r, "SLOWLOG",
			"GET [<count>]",
			"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
			"    Entries are made of:",
			"    id, timestamp, time in microseconds, arguments array, client IP and port,",
			"    client name",
			"LEN",
			"    Return the length of the slowlog.",
			"RESET",
			"    Reset the slowlog.",
		)
	default:
		r.Error("ERR unknown subcommand '" + trimArg(args[1]) + "'. Try SLOWLOG HELP.")
	}
}

// helpReply answers a HELP subcommand as Redis formats it.
func helpReply(r *Reply, cmd string, lines ...string) {
	r.Array(len(lines) + 3)
	r.Simple(cmd + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		r.Simple(l)
	}
	r.Simple("HELP")
	r.Simple("    Print this help.")
}
