package server

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/resp"
)

// Connections.
//
// Each client is served by one goroutine (serveConn): it parses every
// complete request in its read buffer, executes them in order, encoding
// their replies one after another into one output buffer, and when the
// buffer holds no complete request (the pipeline is drained) it waits for
// the log to be as durable as the replies need (endBatch) and writes all
// of them with one write. Output is also written as soon as it passes
// flushAt, so a client that pipelines large replies (BF.SCANDUMP) holds at
// most flushAt plus one reply; while it does not read, its goroutine
// blocks in that write and reads nothing more from it, and after
// WriteTimeout without progress it is disconnected.
const flushAt = 64 << 10

// acceptLoop accepts clients until the listener closes. Errors such as
// "too many open files" are retried after a pause that doubles up to a
// second, instead of spinning.
func (s *Server) acceptLoop(ln net.Listener) error {
	var pause time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closed.Load() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporaryAccept(err) {
				pause = min(max(2*pause, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "err", err, "pause", pause)
				select {
				case <-time.After(pause):
				case <-s.stop:
					return nil
				}
				continue
			}
			return err
		}
		pause = 0
		s.lifeMu.Lock()
		if s.closed.Load() {
			s.lifeMu.Unlock()
			nc.Close()
			return nil
		}
		s.connWG.Add(1)
		s.lifeMu.Unlock()
		go func() {
			defer s.connWG.Done()
			s.serveConn(nc)
		}()
	}
}

// isTemporaryAccept reports errors after which accepting can succeed later
// (out of file descriptors, a connection reset before it was accepted).
func isTemporaryAccept(err error) bool {
	var se *os.SyscallError
	if errors.As(err, &se) {
		switch se.Err.Error() {
		case "too many open files", "too many open files in system", "connection reset by peer",
			"connection aborted", "software caused connection abort", "cannot allocate memory", "no buffer space available":
			return true
		}
	}
	return strings.Contains(err.Error(), "too many open files")
}

// serveConn starts serving a new client: an event loop adopts plain TCP
// clients (Linux); the others are served by this goroutine until they
// quit, fail or are disconnected.
func (s *Server) serveConn(nc net.Conn) {
	// maxclients is checked before a TLS handshake, and a connection in
	// its handshake counts as a client (as Redis does): silent TLS
	// connections cannot hold more descriptors than the limit.
	tc, isTLS := nc.(*tls.Conn)
	if n := s.clients.Add(1); n > s.maxClients() {
		s.clients.Add(-1)
		s.rejectedConns.Add(1)
		if !isTLS {
			// A TLS client cannot read a reply before its handshake.
			nc.SetWriteDeadline(time.Now().Add(time.Second))
			io.WriteString(nc, "-ERR max number of clients reached\r\n")
		}
		nc.Close()
		return
	}
	if isTLS {
		// A client that connects and never completes the handshake must
		// not hold a goroutine and a descriptor forever.
		tc.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
		if err := tc.Handshake(); err != nil {
			s.log.Debug("TLS handshake failed", "addr", nc.RemoteAddr(), "err", err)
			s.tlsRefused.Add(1)
			s.clients.Add(-1)
			nc.Close()
			return
		}
		tc.SetDeadline(time.Time{})
	}
	if s.protectedRefuses(nc.RemoteAddr()) {
		s.clients.Add(-1)
		s.log.Debug("protected mode: refused a client not on the loopback interface", "addr", nc.RemoteAddr())
		nc.SetWriteDeadline(time.Now().Add(time.Second))
		io.WriteString(nc, deniedProtected)
		nc.Close()
		return
	}
	s.totalConns.Add(1)
	c := &Session{ID: s.nextID.Add(1), Addr: nc.RemoteAddr().String(), LocalAddr: nc.LocalAddr().String(), created: time.Now()}
	s.startSession(c)
	c.canWait = true
	c.lastCmd.Store(c.created.UnixMilli())
	lc := s.adoptable(nc, c)
	var woken atomic.Bool
	if lc == nil {
		c.setConn(nc)
		// PUBLISH wakes this goroutine out of its read (pubsub.go).
		wake := func() {
			woken.Store(true)
			nc.SetReadDeadline(time.Now())
		}
		c.notify.Store(&wake)
	}
	s.smu.Lock() // after c.conn and c.kill are set: disconnect reads them
	s.sessions[c.ID] = c
	s.smu.Unlock()
	if lc != nil {
		lc.hand()
		return
	}
	defer nc.Close()
	defer s.endSession(c)

	p := resp.NewReader(countingReader{nc, &s.net.in}, s.readLimits(c))
	for {
		args, err := p.Next()
		if err != nil {
			var pe *resp.ProtocolError
			if errors.As(err, &pe) {
				s.protoErrors.Add(1)
				s.log.Debug("protocol error; closing the connection", "addr", c.Addr, "err", err)
				c.reply.w.Next()
				c.reply.Error("ERR " + pe.Error())
				c.batched++
				s.flush(c)
			}
			return
		}
		if args == nil {
			// The pipeline is drained: answer it, then wait for more.
			if c.sub != nil {
				c.reply.w.Next()
				c.takePushes()
			}
			if len(c.reply.w.Pending()) > 0 && !s.flush(c) {
				return
			}
			if c.closing.Load() {
				return
			}
			if t := s.idleTimeout(); t > 0 {
				nc.SetReadDeadline(time.Now().Add(t))
			} else if c.sub != nil {
				nc.SetReadDeadline(time.Time{}) // after a wake-up
			}
			if c.pushPending() {
				continue // queued before the deadline was set: send it now
			}
			err := p.Fill()
			if err != nil && woken.Swap(false) {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					continue // PUBLISH woke it: send the messages
				}
			}
			if err != nil {
				if errors.Is(err, resp.ErrQueryLimit) {
					c.reply.w.Next()
					c.reply.Error("ERR Protocol error: request larger than the query buffer limit")
					c.batched++
					s.flush(c)
				}
				return
			}
			c.clock = monoNow() // not the end of the command before the wait
			continue
		}
		if len(args) == 0 {
			continue
		}
		wasAuthed := c.authed
		if c.sub != nil {
			// Messages published before this command go out before its reply.
			c.reply.w.Next()
			c.takePushes()
		}
		c.reply.w.Next()
		s.Do(c, args, &c.reply)
		c.batched++
		if c.wait != nil {
			<-c.wait // a BF.MERGE finishing in the background, or WAIT
			c.wait = nil
			if c.deferred != nil {
				c.reply.w.Raw(c.deferred)
				c.deferred = nil
			}
		}
		if c.handoff != nil {
			// SYNC or PSYNC: the replies before it go out, then the
			// connection serves a replica until it is gone.
			if !s.flush(c) {
				return
			}
			nc.SetDeadline(time.Time{})
			s.serveReplica(c, nc, append([]byte(nil), p.Unread()...))
			return
		}
		if c.authed != wasAuthed {
			p.SetLimits(s.readLimits(c))
		}
		if c.quit || c.closing.Load() {
			// QUIT: its reply goes out, nothing after it runs.
			s.flush(c)
			return
		}
		if len(c.reply.w.Pending()) >= flushAt && !s.flush(c) {
			return
		}
	}
}

// readLimits are the request limits for c: tiny until it authenticates.
func (s *Server) readLimits(c *Session) resp.Limits {
	if !c.authed {
		return resp.PreAuthLimits
	}
	return resp.Limits{MaxArgs: s.cfg.MaxArgs, MaxBulk: s.cfg.MaxBulk, MaxInline: 64 << 10, MaxQuery: s.cfg.MaxQuery}
}

// flush sends the replies encoded so far, after the log holds what they
// depend on; false means the connection is done for.
func (s *Server) flush(c *Session) bool {
	if err := s.endBatch(c); err != nil {
		// The log failed before the writes these replies acknowledge
		// were durable: their outcome is unknown, and nothing may say
		// they happened.
		c.reply.w.Drain()
		c.reply.w.Replace(appendInDoubt(c.reply.w.Pending(), c.batched, err))
	}
	c.batched = 0
	c.clock = 0 // the next command reads the clock itself, after this write
	if len(c.reply.w.Pending()) == 0 {
		return true
	}
	c.conn.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	c.setUnsent(len(c.reply.w.Pending()))
	n, err := c.conn.Write(c.reply.w.Pending())
	s.net.out.Add(int64(n))
	c.reply.w.Drain()
	c.setUnsent(0)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			s.slowClients.Add(1)
			s.log.Info("disconnecting a client that does not read its replies", "addr", c.Addr, "timeout", s.cfg.WriteTimeout)
		}
		return false
	}
	return true
}

// endSession forgets a client that is gone.
func (s *Server) endSession(c *Session) {
	s.smu.Lock()
	delete(s.sessions, c.ID)
	s.smu.Unlock()
	s.endMulti(c) // a queue left behind no longer counts
	s.endSubscriber(c)
	s.clients.Add(-1)
}

// disconnect closes a client's connection (CLIENT KILL, shutdown): at once
// when it waits for a request, after its current command otherwise.
// The session is listed (CLIENT KILL, shutdown can see it) before its
// connection is handed to a loop or kept by a goroutine, so conn and kill
// are set and read under hmu.
func (c *Session) disconnect() {
	c.closing.Store(true)
	c.hmu.Lock()
	kill, conn := c.kill, c.conn
	c.hmu.Unlock()
	if kill != nil {
		kill()
	} else if conn != nil {
		conn.Close()
	}
}

// setConn records the goroutine path's connection; a disconnect asked for
// before then takes effect now.
func (c *Session) setConn(nc net.Conn) {
	c.hmu.Lock()
	c.conn = nc
	c.hmu.Unlock()
	if c.closing.Load() {
		nc.Close()
	}
}

// setKill records the event loop's wake-up; a disconnect asked for before
// then takes effect now.
func (c *Session) setKill(kill func()) {
	c.hmu.Lock()
	c.kill = kill
	c.hmu.Unlock()
	if c.closing.Load() {
		kill()
	}
}

// appendInDoubt appends n error replies for commands whose log records were
// not durable when the log failed: nothing may say they happened.
func appendInDoubt(buf []byte, n int, err error) []byte {
	for i := 0; i < n; i++ {
		buf = append(buf, "-IOERR the append-only log failed ("...)
		buf = resp.AppendClean(buf, errText(err))
		buf = append(buf, "); the outcome of this command is unknown\r\n"...)
	}
	return buf
}
