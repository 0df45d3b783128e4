package server

// MONITOR: every command the server runs, as Redis 7 shows it, streamed to
// the clients that asked. A monitor is fed like a subscriber (pubsub.go):
// the line is queued for its owner to send, and a monitor that does not
// read is disconnected past the pub/sub output limit, so a slow monitor
// never holds up the command it watches.

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// monitors are the clients in MONITOR mode.
type monitors struct {
	n  atomic.Int64 // len(set), read on every command without the lock
	mu sync.Mutex
	m  map[*Session]struct{}
}

// MONITOR puts the connection in monitor mode: from now on it receives a
// line for every command the server runs (its own included), and nothing
// else it sends has an answer but QUIT and RESET, as in Redis.
func cmdMonitor(s *Server, c *Session, args [][]byte, r *Reply) {
	if c.monitoring.Load() {
		r.OK()
		return
	}
	c.subscriberState() // the queue the lines go through
	s.mon.mu.Lock()
	if s.mon.m == nil {
		s.mon.m = map[*Session]struct{}{}
	}
	s.mon.m[c] = struct{}{}
	s.mon.n.Store(int64(len(s.mon.m)))
	s.mon.mu.Unlock()
	c.monitoring.Store(true)
	r.OK()
}

// endMonitor takes c out of monitor mode (its connection ended, RESET).
func (s *Server) endMonitor(c *Session) {
	if !c.monitoring.Load() {
		return
	}
	s.mon.mu.Lock()
	delete(s.mon.m, c)
	s.mon.n.Store(int64(len(s.mon.m)))
	s.mon.mu.Unlock()
	c.monitoring.Store(false)
}

// feedMonitors sends one command that ran to every monitor, as Redis
// writes it: +<unix time with µs> [0 <client address>] "name" "arg"...,
// passwords redacted. Administrative commands are not shown (Redis's
// rule), nor are the master's stream and the log's replay.
func (s *Server) feedMonitors(c *Session, cmd *command, args [][]byte, at time.Time) {
	if cmd.admin || c.fromMaster {
		return
	}
	strs := make([]string, len(args))
	for i, a := range args {
		strs[i] = string(a)
	}
	redact(strs)
	line := make([]byte, 0, 64)
	line = append(line, '+')
	line = strconv.AppendFloat(line, float64(at.UnixMicro())/1e6, 'f', 6, 64)
	line = append(line, " [0 "...)
	addr := c.Addr
	if len(addr) > 2 && addr[0] == '/' {
		addr = "unix:" + addr[:len(addr)-2] // a Unix socket's path:0
	}
	line = append(line, addr...)
	line = append(line, ']')
	for _, a := range strs {
		line = append(line, ' ')
		line = appendRepr(line, a)
	}
	line = append(line, "\r\n"...)
	s.mon.mu.Lock()
	ms := make([]*Session, 0, len(s.mon.m))
	for m := range s.mon.m {
		ms = append(ms, m)
	}
	s.mon.mu.Unlock()
	for _, m := range ms {
		s.deliver(m, [2][]byte{line, line})
	}
}

// appendRepr quotes s as Redis's sdscatrepr does: in double quotes, with
// \\, \", \n, \r, \t, \a, \b escaped and other bytes outside printable
// ASCII as \xHH. MONITOR's lines and the config file's quoted values
// (configQuote) are written with it.
func appendRepr(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if ch < ' ' || ch > '~' {
				b = append(b, '\\', 'x', hex[ch>>4], hex[ch&15])
			} else {
				b = append(b, ch)
			}
		}
	}
	return append(b, '"')
}
