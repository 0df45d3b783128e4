package server

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/resp"
)

// Connections.
//
// Each client accepted here is adopted by an event loop (plain TCP on
// Linux, loop_linux.go) or served by a goroutine of its own (serveConn: TLS,
// other systems, a connection the loops cannot take). Both run the same
// request loop (client.go); the goroutine blocks where a loop would wait
// for an event: in its read when its requests are drained, in its write
// when the client does not read its replies (for at most WriteTimeout
// without progress, then it is disconnected), and in a read while a
// reply is held (which sees the client go away).

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
	c := &Session{ID: s.nextID.Add(1), Addr: connAddr(nc.RemoteAddr(), nc.LocalAddr()), LocalAddr: connAddr(nc.LocalAddr(), nil), created: time.Now(), gone: make(chan struct{})}
	s.startSession(c)
	c.fd.Store(connFD(nc))
	c.canWait = true
	c.lastCmd.Store(c.created.UnixMilli())
	lc := s.adoptable(nc, c)
	var w *waker
	if lc == nil {
		c.setConn(nc)
		// PUBLISH wakes the goroutine out of its read (pubsub.go).
		w = &waker{nc: nc}
		wake := w.wake
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
	cl := client{s: s, sess: c, rd: resp.NewReader(countingReader{nc, &s.net.in}, s.readLimits(c))}
	s.serveGoroutine(&cl, nc, w)
}

// serveGoroutine runs a client's request loop on its own goroutine (see
// client.go), until the client quits, fails or is disconnected.
func (s *Server) serveGoroutine(c *client, nc net.Conn, w *waker) {
	sess := c.sess
	for {
		switch c.run() {
		case stepFull:
			if !s.flush(c, nc) {
				return
			}
			continue
		case stepClose:
			s.flush(c, nc)
			return
		case stepHandoff:
			// SYNC or PSYNC: the replies before it go out, then the
			// connection serves a replica until it is gone.
			if !s.flush(c, nc) {
				return
			}
			nc.SetDeadline(time.Time{})
			s.serveReplica(sess, nc, append([]byte(nil), c.rd.Unread()...))
			return
		case stepHeld:
			wait := sess.wait
			go func() {
				select {
				case <-wait:
					w.wake()
				case <-sess.gone:
				}
			}()
			// Read on, without an idle timeout, to see the client go
			// away; what it sends waits in the buffer.
			for !c.released() {
				if _, err := w.fill(c.rd, time.Time{}); err != nil {
					return
				}
			}
			continue
		}
		// The pipeline is drained: answer it, then wait for more.
		c.pushes()
		if !s.flush(c, nc) || sess.closing.Load() {
			return
		}
		var deadline time.Time
		if t := s.idleTimeout(); t > 0 {
			deadline = time.Now().Add(t)
		}
		woken, err := w.fill(c.rd, deadline)
		if woken {
			continue // PUBLISH woke it: send the messages
		}
		if err != nil {
			if c.readFailed(err) {
				s.flush(c, nc)
			}
			return
		}
	}
}

// waker lets other goroutines wake a goroutine-served client out of its
// read (PUBLISH queued messages for it, its held reply is done) by moving
// the read deadline to now. mu orders a wake-up against the owner setting
// its deadline, so none is lost and none is taken for an idle timeout.
type waker struct {
	nc       net.Conn
	mu       sync.Mutex
	woken    bool      // a wake-up not yet seen by the owner
	stale    bool      // the deadline was moved by a wake-up (owner only)
	deadline time.Time // the deadline the owner set last
}

// wake wakes the owner.
func (w *waker) wake() {
	w.mu.Lock()
	w.woken = true
	w.nc.SetReadDeadline(time.Now())
	w.mu.Unlock()
}

// fill reads more of the client's requests into rd, with the read
// deadline d (zero: none); woken means a wake-up came first.
func (w *waker) fill(rd *resp.Reader, d time.Time) (woken bool, err error) {
	w.mu.Lock()
	if w.woken {
		w.woken, w.stale = false, true
		w.mu.Unlock()
		return true, nil
	}
	if w.stale || !d.Equal(w.deadline) {
		w.nc.SetReadDeadline(d)
		w.deadline, w.stale = d, false
	}
	w.mu.Unlock()
	err = rd.Fill()
	if err != nil && isTimeout(err) {
		w.mu.Lock()
		woken = w.woken
		if woken {
			w.woken, w.stale = false, true
		}
		w.mu.Unlock()
		if woken {
			return true, nil
		}
	}
	return false, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// readLimits are the request limits for c: tiny until it authenticates.
func (s *Server) readLimits(c *Session) resp.Limits {
	if !c.authed {
		return resp.PreAuthLimits
	}
	return resp.Limits{MaxArgs: s.cfg.MaxArgs, MaxBulk: s.cfg.MaxBulk, MaxInline: 64 << 10, MaxQuery: s.cfg.MaxQuery}
}

// flush writes a goroutine-served client's output, after the log holds
// what it depends on; false means the connection is done for.
func (s *Server) flush(c *client, nc net.Conn) bool {
	out := c.output()
	if len(out) == 0 {
		return true
	}
	c.blocked()
	nc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	n, err := nc.Write(out)
	s.net.out.Add(int64(n))
	c.wrote(n)
	if err != nil {
		if isTimeout(err) {
			s.slowClients.Add(1)
			s.log.Info("disconnecting a client that does not read its replies", "addr", c.sess.Addr, "timeout", s.cfg.WriteTimeout)
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
	if c.watch.keys != nil {
		s.unwatchLocked(c)
	}
	s.endMonitor(c)
	s.endSubscriber(c)
	if c.gone != nil {
		close(c.gone) // a WAIT it was blocked in stops waiting
	}
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
		closeNow(conn)
	}
}

// connFD is a connection's descriptor, for CLIENT LIST (-1 when it has
// none to show).
func connFD(nc net.Conn) int64 {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := int64(-1)
	raw.Control(func(f uintptr) { fd = int64(f) })
	return fd
}

// connAddr is a connection's address as CLIENT LIST shows it: ip:port,
// or for a Unix socket the socket's path and ":0", as Redis writes it (a
// client's end of a Unix socket has no name: the server's is used).
func connAddr(a, server net.Addr) string {
	if ua, ok := a.(*net.UnixAddr); ok || a == nil {
		name := ""
		if ua != nil {
			name = ua.Name
		}
		if name == "" && server != nil {
			return connAddr(server, nil)
		}
		return name + ":0"
	}
	return a.String()
}

// closeNow closes a connection without writing to it. A TLS connection's
// Close writes a close alert, which can wait for a peer that reads
// nothing; closing happens under the keyspace lock (CLIENT KILL, ACL
// DELUSER, REPLICAOF dropping replicas), so the socket itself is closed:
// whoever reads the connection sees it at once.
func closeNow(nc net.Conn) {
	if tc, ok := nc.(*tls.Conn); ok {
		tc.NetConn().Close()
		return
	}
	nc.Close()
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
