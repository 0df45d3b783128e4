//go:build linux

package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/bloomkit/bloomkit/server/internal/resp"
	"golang.org/x/sys/unix"
)

// Event loops (Linux).
//
// Plain TCP clients are served by epoll loops (Config.EventLoops) instead of one
// goroutine each, the way Redis serves them: one epoll_wait returns the
// clients that sent something; each is read once and every complete
// request in its buffer runs; then, once per round, the log is written
// (and fsynced for appendfsync always) for all of them together, and each
// client's replies go out with one write. A goroutine per connection costs
// a second read per request (Go reads until EAGAIN before parking), a
// scheduler hand-off and a log write per connection; at pipeline depth 1
// that is about a third more CPU per request than Redis needs.
//
// A loop moves bytes; what a client's requests and replies do is the
// request loop every connection shares (client.go). A client whose
// replies cannot all be written (it does not read) is watched for
// writability only: nothing more is read from it until its output drains,
// so it holds at most flushAt bytes plus one reply, and it is
// disconnected after WriteTimeout without progress. A client whose reply
// is held stays watched for input, so that its going away is seen. TLS
// clients keep the goroutine path (crypto/tls needs a net.Conn).

// eventLoop is one epoll instance and the clients it serves.
type eventLoop struct {
	s    *Server
	epfd int
	wake [2]int // a pipe: writing to wake[1] interrupts epoll_wait
	// wakeMu orders wake-ups against the pipe's closing: once the loop
	// has shut down, the descriptor numbers may belong to another file
	// or socket, which a late wake-up (CLIENT KILL, PUBLISH, a handed
	// connection) must not write a byte into.
	wakeMu     sync.RWMutex
	wakeClosed bool
	mu         sync.Mutex
	newc       []*loopConn // handed over by the acceptor
	resume     []*loopConn // clients whose held replies may go now (mu)
	pushed     []*loopConn // clients PUBLISH queued messages for (mu)
	conns      map[int]*loopConn
	dirty      []*loopConn // clients with replies to send this round
	rerun      []*loopConn // clients with requests left in their buffer
	events     []unix.EpollEvent
	ctl        func(epfd, op, fd int, ev *unix.EpollEvent) error // epoll_ctl(2)
	now        int64                                             // monoNow at the end of the last round
	pf         []prefetchItem
	beat       atomic.Int64 // monoNow at the start of the last round (/livez)
	// net counts the bytes this loop read from and wrote to its clients
	// (INFO total_net_input_bytes/total_net_output_bytes): one counter
	// per loop, written by the loop alone, so no cache line is shared.
	net netCounters
}

// lastBeat is when the loop last went round (it does at least every
// 100 ms, idle or not).
func (l *eventLoop) lastBeat() int64 { return l.beat.Load() }

// netBytes is what the loop's clients sent and were sent.
func (l *eventLoop) netBytes() (in, out int64) { return l.net.in.Load(), l.net.out.Load() }

// loopConn is one client of an event loop.
type loopConn struct {
	client
	loop      *eventLoop
	fd        int
	watchOut  bool // registered for EPOLLOUT (output blocked)
	inDirty   bool
	lastRead  int64 // monoNow of the last read and of the last write progress
	lastWrite int64
}

// fdReader reads from a non-blocking descriptor for requestReader.fill,
// counting the bytes in in.
type fdReader struct {
	fd int
	in *atomic.Int64
}

var errAgain = errors.New("EAGAIN")

func (r fdReader) Read(p []byte) (int, error) {
	for {
		n, err := rawRead(r.fd, p)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, errAgain
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		r.in.Add(int64(n))
		return n, nil
	}
}

// rawRead and rawWrite are read(2) and write(2) on a non-blocking socket
// without telling the Go scheduler (unix.RawSyscall): they never block,
// so the bookkeeping unix.Read does for a call that might (entering and
// leaving the syscall state, and the thread hand-offs that can follow) is
// pure cost — two of them per request at pipeline depth 1.
func rawRead(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawWrite(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// startLoops starts the event loops (Serve calls it).
func (s *Server) startLoops() error {
	if s.cfg.goroutinePerConn {
		return nil
	}
	n := s.cfg.EventLoops
	if n <= 0 {
		// Half the CPUs: measured on 2 CPUs with the client on the same
		// machine, one loop needed 6.9 µs of CPU per BF.EXISTS at
		// pipeline depth 1 and two loops 10.4 µs (threads woken across
		// CPUs and competing with the clients and the kernel's network
		// work); the kernel does most of a request's work anyway.
		n = max(1, min(runtime.GOMAXPROCS(0)/2, 8))
	}
	for i := 0; i < n; i++ {
		l, err := newEventLoop(s)
		if err != nil {
			for _, o := range s.loops {
				o.stop()
			}
			s.loops = nil
			return err
		}
		s.loops = append(s.loops, l)
		s.connWG.Add(1)
		go func() {
			defer s.connWG.Done()
			l.run()
		}()
	}
	return nil
}

// epollCtl is epoll_ctl(2) for the loops created from now on; tests
// replace it to make it fail.
var epollCtl = unix.EpollCtl

func newEventLoop(s *Server) (*eventLoop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("event loop: epoll_create1: %w", err)
	}
	l := &eventLoop{s: s, epfd: epfd, conns: map[int]*loopConn{}, events: make([]unix.EpollEvent, 256), ctl: epollCtl}
	if err := unix.Pipe2(l.wake[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		l.closeFD(epfd, "epoll")
		return nil, fmt.Errorf("event loop: pipe2: %w", err)
	}
	if err := l.ctl(epfd, unix.EPOLL_CTL_ADD, l.wake[0], &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(l.wake[0])}); err != nil {
		l.closeFD(epfd, "epoll")
		l.closeFD(l.wake[0], "wake-up pipe")
		l.closeFD(l.wake[1], "wake-up pipe")
		return nil, fmt.Errorf("event loop: epoll_ctl ADD of the wake-up pipe: %w", err)
	}
	return l, nil
}

// closeFD closes a descriptor the loop owns. A failure leaks nothing (on
// Linux the descriptor is released whatever close returns) but is logged:
// it means a descriptor was closed twice or I/O was lost.
func (l *eventLoop) closeFD(fd int, what string) {
	if err := unix.Close(fd); err != nil {
		l.s.log.Warn("event loop: close failed", "fd", fd, "what", what, "err", err)
	}
}

// adoptable prepares a freshly accepted plain TCP connection for an event
// loop (its descriptor duplicated and made non-blocking, c.kill set); nil
// means the caller serves it with a goroutine. hand gives it to the loop.
func (s *Server) adoptable(nc net.Conn, c *Session) *loopConn {
	if len(s.loops) == 0 {
		return nil
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	// Any failure below leaves the connection to a goroutine, which
	// serves it as well (only more slowly).
	fd, dupErr := -1, error(nil)
	if err := raw.Control(func(f uintptr) { fd, dupErr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil || dupErr != nil {
		s.log.Warn("event loop: cannot duplicate a client's socket; serving it with a goroutine", "addr", c.Addr, "err", errors.Join(err, dupErr))
		return nil
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		s.log.Warn("event loop: cannot make a client's socket non-blocking; serving it with a goroutine", "addr", c.Addr, "err", err)
		if err := unix.Close(fd); err != nil {
			s.log.Warn("event loop: close failed", "fd", fd, "err", err)
		}
		return nil
	}
	nc.Close() // the duplicate keeps the socket open
	c.fd.Store(int64(fd))
	now := monoNow()
	l := s.loops[int(c.ID)%len(s.loops)]
	c.setKill(l.wakeUp)
	lc := &loopConn{client: client{s: s, sess: c, rd: resp.NewReader(fdReader{fd, &l.net.in}, s.readLimits(c))}, loop: l, fd: fd, lastRead: now, lastWrite: now}
	notify := func() {
		l.mu.Lock()
		l.pushed = append(l.pushed, lc)
		l.mu.Unlock()
		l.wakeUp()
	}
	c.notify.Store(&notify)
	return lc
}

// hand gives a prepared connection to its loop.
func (c *loopConn) hand() {
	l := c.loop
	l.mu.Lock()
	l.newc = append(l.newc, c)
	l.mu.Unlock()
	l.wakeUp()
}

func (l *eventLoop) wakeUp() {
	l.wakeMu.RLock()
	defer l.wakeMu.RUnlock()
	if l.wakeClosed {
		return // nobody is waiting, and the descriptor is not ours
	}
	// EAGAIN: the pipe is full, so a wake-up is already pending.
	if _, err := unix.Write(l.wake[1], []byte{1}); err != nil && err != unix.EAGAIN {
		l.s.log.Warn("event loop: cannot write to the wake-up pipe", "err", err)
	}
}

func (l *eventLoop) stop() {
	l.wakeUp()
}

func (l *eventLoop) run() {
	defer l.shutdown()
	lastCheck := monoNow()
	lastYield := lastCheck
	for {
		timeout := 100
		if len(l.rerun) > 0 {
			timeout = 0
		}
		n, err := unix.EpollWait(l.epfd, l.events, timeout)
		if err != nil && err != unix.EINTR {
			l.s.log.Error("epoll_wait failed; event loop stops", "err", err)
			return
		}
		if l.s.closed.Load() {
			return
		}
		l.now = monoNow() // one clock read a round, for the timeouts
		l.beat.Store(l.now)
		for _, ev := range l.events[:max(n, 0)] {
			fd := int(ev.Fd)
			if fd == l.wake[0] {
				l.woken()
				continue
			}
			c := l.conns[fd]
			if c == nil {
				continue
			}
			if ev.Events&unix.EPOLLOUT != 0 {
				l.write(c)
			}
			if ev.Events&(unix.EPOLLIN|unix.EPOLLHUP|unix.EPOLLERR) != 0 && !c.watchOut && l.conns[fd] == c {
				l.read(c)
			}
		}
		rerun := l.rerun
		l.rerun = nil
		for _, c := range rerun {
			if l.conns[c.fd] == c && !c.watchOut {
				l.runRequests(c)
			}
		}
		l.flushAll()
		if now := l.now; now-lastYield >= int64(5*time.Millisecond) {
			// A goroutine that never reschedules is preempted by the
			// runtime's monitor after 10 ms (and moved to another
			// thread when that happens in a syscall), which then keeps
			// waking up every 20 µs for a while; yielding now and then
			// (it gets the CPU straight back) avoids both.
			lastYield = now
			runtime.Gosched()
			if now-lastCheck >= int64(100*time.Millisecond) {
				lastCheck = now
				l.checkTimeouts(now)
			}
		}
	}
}

// woken handles the wake-up pipe: new clients and killed ones.
func (l *eventLoop) woken() {
	var b [64]byte
	for {
		n, err := unix.Read(l.wake[0], b[:])
		if err != nil && err != unix.EAGAIN && err != unix.EINTR {
			l.s.log.Warn("event loop: cannot read the wake-up pipe", "err", err)
		}
		if n <= 0 && err != unix.EINTR {
			break
		}
	}
	l.mu.Lock()
	newc, resume, pushed := l.newc, l.resume, l.pushed
	l.newc, l.resume, l.pushed = nil, nil, nil
	l.mu.Unlock()
	for _, c := range resume {
		l.release(c)
	}
	for _, c := range pushed {
		l.sendPushes(c)
	}
	for _, c := range newc {
		if err := l.ctl(l.epfd, unix.EPOLL_CTL_ADD, c.fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(c.fd)}); err != nil {
			l.s.log.Warn("event loop: cannot watch a new client; disconnecting it", "addr", c.sess.Addr, "err", err)
			l.s.endSession(c.sess)
			l.closeFD(c.fd, "client")
			continue
		}
		l.conns[c.fd] = c
	}
	for _, c := range l.conns {
		if c.sess.closing.Load() {
			l.close(c)
		}
	}
}

// sendPushes moves the messages PUBLISH queued for c to its output, to
// be written at the end of this round.
func (l *eventLoop) sendPushes(c *loopConn) {
	if l.conns[c.fd] == c && c.pushes() {
		l.markDirty(c)
	}
}

// read reads what the client sent and runs its complete requests.
func (l *eventLoop) read(c *loopConn) {
	err := c.rd.Fill()
	switch {
	case err == errAgain:
		return
	case err != nil:
		if c.readFailed(err) {
			l.markDirty(c)
		} else {
			l.close(c)
		}
		return
	}
	c.lastRead = l.now
	if c.held() {
		return // kept for after the held reply (released)
	}
	if c.sess.authed && c.sess.multi == nil {
		l.pf = l.s.prefetch(c.rd, l.pf) // a pipeline's filter memory, all at once (prefetch.go)
	}
	l.runRequests(c)
}

// runRequests runs the complete requests in c's buffer (client.run).
func (l *eventLoop) runRequests(c *loopConn) {
	switch c.run() {
	case stepFull:
		l.rerun = append(l.rerun, c) // continue after this round's write
	case stepHandoff:
		l.handOff(c)
		return
	case stepHeld:
		l.hold(c)
	}
	if c.pending() {
		l.markDirty(c)
	}
}

// hold has the loop run c's requests again once its held reply is done
// (or forget it if c goes away first); the loop serves its other clients
// meanwhile. c stays watched for input, so that its going away is seen.
func (l *eventLoop) hold(c *loopConn) {
	wait, gone := c.sess.wait, c.sess.gone
	go func() {
		select {
		case <-wait:
		case <-gone:
			return
		}
		l.mu.Lock()
		l.resume = append(l.resume, c)
		l.mu.Unlock()
		l.wakeUp()
	}()
}

// release lets c's held replies go and its requests run again.
func (l *eventLoop) release(c *loopConn) {
	if l.conns[c.fd] != c || !c.released() {
		return
	}
	l.markDirty(c)
	l.rerun = append(l.rerun, c)
}

func (l *eventLoop) markDirty(c *loopConn) {
	if !c.inDirty {
		c.inDirty = true
		l.dirty = append(l.dirty, c)
	}
}

// flushAll ends the round: the log is made as durable as the replies need
// (the first client's endBatch writes it for everyone), then every
// client's replies are written.
func (l *eventLoop) flushAll() {
	dirty := l.dirty
	l.dirty = l.dirty[:0]
	for _, c := range dirty {
		c.inDirty = false
		if l.conns[c.fd] == c && !c.watchOut {
			l.write(c)
		}
	}
}

// write writes c's pending output; if the socket is full it waits for
// writability (and reads nothing more meanwhile).
func (l *eventLoop) write(c *loopConn) {
	if c.held() {
		return // nothing goes out until the held reply is done (release)
	}
	buf := c.output()
	n := 0
	for n < len(buf) {
		m, err := rawWrite(c.fd, buf[n:])
		if m > 0 {
			n += m
			c.lastWrite = l.now
		}
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			l.net.out.Add(int64(n))
			c.wrote(n)
			c.blocked()
			if !c.watchOut {
				// Unwatched for writability, the client would never get
				// the rest of its replies: it is disconnected instead.
				if err := l.ctl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, &unix.EpollEvent{Events: unix.EPOLLOUT, Fd: int32(c.fd)}); err != nil {
					l.s.log.Warn("event loop: cannot watch a client for writability; disconnecting it", "addr", c.sess.Addr, "err", err)
					l.close(c)
					return
				}
				c.watchOut = true
			}
			return
		}
		if err != nil {
			l.close(c)
			return
		}
	}
	l.net.out.Add(int64(n))
	c.wrote(n)
	if c.closeAfter {
		l.close(c)
		return
	}
	if c.watchOut {
		c.watchOut = false
		// Unwatched for input, the client would hang: disconnect it.
		if err := l.ctl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(c.fd)}); err != nil {
			l.s.log.Warn("event loop: cannot watch a client for input; disconnecting it", "addr", c.sess.Addr, "err", err)
			l.close(c)
			return
		}
		if c.rd.Buffered() {
			l.rerun = append(l.rerun, c)
		}
	}
}

// checkTimeouts disconnects idle clients (Timeout) and clients whose
// output made no progress for WriteTimeout.
func (l *eventLoop) checkTimeouts(now int64) {
	s := l.s
	for _, c := range l.conns {
		switch {
		case c.watchOut && time.Duration(now-c.lastWrite) > s.cfg.WriteTimeout:
			s.slowClients.Add(1)
			s.log.Info("disconnecting a client that does not read its replies", "addr", c.sess.Addr, "timeout", s.cfg.WriteTimeout)
			l.close(c)
		case s.idleTimeout() > 0 && !c.watchOut && !c.held() && time.Duration(now-c.lastRead) > s.idleTimeout():
			// A client blocked in WAIT or a merge is not idle (as in Redis).
			l.close(c)
		case c.sess.closing.Load():
			l.close(c)
		}
	}
}

func (l *eventLoop) close(c *loopConn) {
	if l.conns[c.fd] != c {
		return
	}
	delete(l.conns, c.fd)
	// Closing the descriptor would drop it from the epoll set anyway; a
	// failure here means the loop's bookkeeping and the kernel's differ.
	if err := l.ctl(l.epfd, unix.EPOLL_CTL_DEL, c.fd, nil); err != nil {
		l.s.log.Warn("event loop: epoll_ctl DEL of a closing client failed", "addr", c.sess.Addr, "err", err)
	}
	l.closeFD(c.fd, "client")
	l.s.endSession(c.sess)
}

func (l *eventLoop) shutdown() {
	for _, c := range l.conns {
		l.close(c)
	}
	l.mu.Lock()
	for _, c := range l.newc {
		l.closeFD(c.fd, "client")
		l.s.endSession(c.sess)
	}
	l.newc = nil
	l.mu.Unlock()
	l.closeFD(l.epfd, "epoll")
	l.wakeMu.Lock()
	l.wakeClosed = true
	l.closeFD(l.wake[0], "wake-up pipe")
	l.closeFD(l.wake[1], "wake-up pipe")
	l.wakeMu.Unlock()
}

// handOff gives a client that sent SYNC or PSYNC to a goroutine that
// serves it as a replica (serveReplica): the loop stops watching it, its
// pending replies are written first, and its socket becomes a blocking
// net.Conn.
func (l *eventLoop) handOff(c *loopConn) {
	s := l.s
	sess := c.sess
	delete(l.conns, c.fd)
	if err := l.ctl(l.epfd, unix.EPOLL_CTL_DEL, c.fd, nil); err != nil {
		s.log.Warn("event loop: epoll_ctl DEL of a replica failed", "addr", sess.Addr, "err", err)
	}
	var out []byte
	if sess.batched > 0 {
		if err := s.endBatch(sess); err != nil {
			sess.reply.w.Replace(appendInDoubt(sess.reply.w.Pending()[:c.checked], sess.batched, err))
		}
		sess.batched = 0
	}
	out = append(out, sess.reply.w.Pending()[c.wpos:]...)
	sess.reply.w.Drain()
	rest := append([]byte(nil), c.rd.Unread()...)
	fail := func(err error) {
		s.log.Warn("event loop: cannot hand a replica's connection over; disconnecting it", "addr", sess.Addr, "err", err)
		l.closeFD(c.fd, "client")
		s.endSession(sess)
	}
	if err := unix.SetNonblock(c.fd, false); err != nil {
		fail(err)
		return
	}
	f := os.NewFile(uintptr(c.fd), "replica")
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		s.endSession(sess)
		s.log.Warn("event loop: cannot hand a replica's connection over; disconnecting it", "addr", sess.Addr, "err", err)
		return
	}
	s.lifeMu.Lock()
	if s.closed.Load() {
		s.lifeMu.Unlock()
		nc.Close()
		s.endSession(sess)
		return
	}
	s.connWG.Add(1)
	s.lifeMu.Unlock()
	sess.hmu.Lock()
	sess.kill = nil // CLIENT KILL and shutdown close the connection now
	sess.hmu.Unlock()
	sess.setConn(nc)
	go func() {
		defer s.connWG.Done()
		defer s.endSession(sess)
		defer nc.Close()
		if len(out) > 0 {
			nc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
			if _, err := nc.Write(out); err != nil {
				return
			}
		}
		s.serveReplica(sess, nc, rest)
	}()
}
