package server

// FAILOVER, Redis 6.2's coordinated hand-over of the master role to a
// replica: writes are paused, a replica (the one named with TO, or the
// first) catches up with the master's offset, and the master becomes a
// replica of it with PSYNC … FAILOVER, which makes the replica a master
// and continues the stream from where it was. INFO replication shows
// master_failover_state: no-failover, waiting-for-sync,
// failover-in-progress.

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The failover states (INFO replication master_failover_state).
const (
	noFailover int32 = iota
	failoverWaitSync
	failoverInProgress
)

// failoverState is a FAILOVER in progress.
type failoverState struct {
	state atomic.Int32
	mu    sync.Mutex // paused, abort
	// paused is closed when writes resume (nil: not paused).
	paused chan struct{}
	// abort is closed by FAILOVER ABORT.
	abort chan struct{}
}

func failoverStateName(st int32) string {
	switch st {
	case failoverWaitSync:
		return "waiting-for-sync"
	case failoverInProgress:
		return "failover-in-progress"
	}
	return "no-failover"
}

// writesPaused is the channel a write waits on while FAILOVER pauses
// writes, or nil.
func (s *Server) writesPaused() chan struct{} {
	if s.failover.state.Load() == noFailover {
		return nil
	}
	f := &s.failover
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.paused
}

// endFailover resumes writes and clears the state.
func (s *Server) endFailover() {
	f := &s.failover
	f.mu.Lock()
	if f.paused != nil {
		close(f.paused)
		f.paused = nil
	}
	f.abort = nil
	f.mu.Unlock()
	f.state.Store(noFailover)
}

// holdWrite holds a write (a write command, or EXEC of a queue with one)
// while FAILOVER pauses writes, as Redis's pause does: the client's
// replies wait, and the command runs when writes resume (a replica by
// then refuses it). It reports whether it took the command.
func (s *Server) holdWrite(c *Session, cmd *command, args [][]byte) bool {
	if c.fromMaster || !c.canWait || c.inExec {
		return false
	}
	write := cmd.write
	if cmd.name == "exec" {
		for _, q := range c.multi[min(1, len(c.multi)):] {
			write = write || q.cmd.write
		}
	}
	if !write {
		return false
	}
	ch := s.writesPaused()
	if ch == nil {
		return false
	}
	cp := make([][]byte, len(args))
	for i, a := range args {
		cp[i] = append([]byte(nil), a...)
	}
	done := make(chan struct{})
	c.wait = done
	go func() {
		select {
		case <-ch:
		case <-s.stop:
			close(done)
			return
		case <-c.gone:
			close(done)
			return
		}
		var rw Reply
		rw.Reset(c.resp3)
		s.do(c, cp, &rw)
		c.deferred = append([]byte(nil), rw.Bytes()...)
		close(done)
	}()
	return true
}

// FAILOVER [TO host port [FORCE]] [TIMEOUT ms] | ABORT
func cmdFailover(s *Server, c *Session, args [][]byte, r *Reply) {
	f := &s.failover
	if len(args) == 2 && strings.EqualFold(string(args[1]), "abort") {
		f.mu.Lock()
		abort := f.abort
		if abort != nil {
			close(abort)
			f.abort = nil
		}
		f.mu.Unlock()
		if abort == nil {
			r.Error("ERR No failover in progress.")
			return
		}
		r.OK()
		return
	}
	var host, port string
	var timeout int64
	force := false
	for i := 1; i < len(args); i++ {
		switch a := strings.ToLower(string(args[i])); {
		case a == "to" && i+2 < len(args) && host == "":
			host, port = string(args[i+1]), string(args[i+2])
			if _, err := strconv.Atoi(port); err != nil {
				r.Error("ERR value is not an integer or out of range")
				return
			}
			i += 2
		case a == "timeout" && i+1 < len(args) && timeout == 0:
			n, ok := parseInt(args[i+1])
			if !ok || n <= 0 {
				r.Error("ERR FAILOVER timeout must be greater than 0")
				return
			}
			timeout = n
			i++
		case a == "force" && !force:
			force = true
		default:
			r.Error(errSyntax)
			return
		}
	}
	if s.isReplica() {
		r.Error("ERR FAILOVER is not valid when server is a replica.")
		return
	}
	if force && (timeout == 0 || host == "") {
		r.Error("ERR FAILOVER with force option requires both a timeout and target HOST and IP.")
		return
	}
	rs := &s.repl
	rs.mu.Lock()
	n := 0
	var target *replica
	for rp := range rs.replicas {
		n++
		if host != "" && rp.ip == host && strconv.Itoa(rp.port) == port {
			target = rp
		}
	}
	rs.mu.Unlock()
	if n == 0 {
		r.Error("ERR FAILOVER requires connected replicas.")
		return
	}
	if host != "" && target == nil {
		r.Error("ERR FAILOVER target HOST and PORT is not a replica.")
		return
	}
	if target != nil && target.state.Load() != stateOnline {
		r.Error("ERR FAILOVER target replica is not online.")
		return
	}
	f.mu.Lock()
	if f.state.Load() != noFailover {
		f.mu.Unlock()
		r.Error("ERR FAILOVER already in progress.")
		return
	}
	f.paused = make(chan struct{})
	abort := make(chan struct{})
	f.abort = abort
	f.state.Store(failoverWaitSync)
	f.mu.Unlock()
	s.log.Info("FAILOVER requested", "to", net.JoinHostPort(host, port), "timeout_ms", timeout, "force", force, "client", c.Addr)
	s.bgWG.Add(1)
	go func() {
		defer s.bgWG.Done()
		s.runFailover(host, port, time.Duration(timeout)*time.Millisecond, force, abort)
	}()
	r.OK()
}

// runFailover waits for a replica to catch up (writes paused), then
// follows it with PSYNC … FAILOVER; it ends the failover either way.
func (s *Server) runFailover(host, port string, timeout time.Duration, force bool, abort chan struct{}) {
	defer s.endFailover()
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	// waiting-for-sync: a replica (the target) acknowledges the master's
	// whole stream.
	for i := 0; ; i++ {
		// One GETACK, as Redis: the answer to a GETACK leaves the GETACK
		// out of its offset (a replica acknowledges what it had processed
		// before it), so asking again and again would keep the offsets
		// apart for ever; the replica's ACK each second counts it.
		if i == 0 {
			s.askAcks()
		}
		s.db.Lock()
		rs := &s.repl
		rs.mu.Lock()
		off := rs.offset()
		for rp := range rs.replicas {
			if rp.state.Load() != stateOnline || rp.ackOff.Load() < off {
				continue
			}
			if host == "" || rp.ip == host && strconv.Itoa(rp.port) == port {
				host, port = rp.ip, strconv.Itoa(rp.port)
				i = -1
				break
			}
		}
		rs.mu.Unlock()
		s.db.Unlock()
		if i == -1 {
			break
		}
		select {
		case <-tick.C:
			continue
		case <-abort:
			s.log.Warn("FAILOVER aborted: Failover manually aborted")
			return
		case <-s.stop:
			return
		case <-deadline:
		}
		if !force {
			s.log.Warn("FAILOVER aborted: Replica never caught up before timeout")
			return
		}
		s.log.Warn("FAILOVER: the target did not catch up before the timeout; forcing the failover", "target", net.JoinHostPort(host, port))
		break
	}
	// failover-in-progress: follow the replica, asking it to take over.
	s.failover.state.Store(failoverInProgress)
	s.log.Info("FAILOVER: following the new master", "target", net.JoinHostPort(host, port))
	s.db.Lock()
	l := s.becomeReplicaOf(host, port, true)
	s.db.Unlock()
	for l != nil {
		if l.up() {
			s.log.Info("FAILOVER: done; this server is a replica of the new master", "master", net.JoinHostPort(host, port))
			return
		}
		failed := l.lastError() != ""
		select {
		case <-tick.C:
		case <-abort:
			failed = true
		case <-s.stop:
			return
		case <-deadline:
			failed = true
		}
		if failed {
			s.log.Warn("FAILOVER aborted: the new master did not accept; this server is the master again", "err", l.lastError())
			s.db.Lock()
			if s.currentLink() == l {
				s.becomeMaster()
			}
			s.db.Unlock()
			return
		}
	}
}
