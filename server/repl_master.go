package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/aof"
	"github.com/bloomkit/bloomkit/server/internal/backlog"
	"github.com/bloomkit/bloomkit/server/internal/resp"
)

// The master's side: REPLCONF, SYNC and PSYNC, then the connection is
// taken over from the event loop (handoff) and served by goroutines: one
// sends the full sync's snapshot and the stream, one reads the replica's
// acknowledgements.
//
// The full sync's payload is a point-in-time snapshot taken with the same
// copy-on-write machinery as BGSAVE, written to a temporary file first
// and then sent (Redis's disk-based sync). Writing it to the socket
// directly would tie the snapshot's life — its copy-on-write copies and
// its holds of the keyspace lock — to the replica's network speed; with
// the file, the snapshot ends at disk speed whatever the replica does,
// and the file is sent with sendfile(2) without touching the keyspace.

// Replica states, as INFO's slaveN state field names them.
const (
	stateWaitBgsave int32 = iota
	stateSendBulk
	stateOnline
)

// replica is one connected replica (or redis-cli --rdb / --replica).
type replica struct {
	nc      net.Conn
	ip      string
	port    int
	state   atomic.Int32
	ackOff  atomic.Int64 // the offset the replica acknowledged (-1: none yet)
	ackTime atomic.Int64 // unix seconds of the last ACK
	// fackOff is the offset the replica acknowledged as fsynced in its
	// append-only log (REPLCONF ACK off FACK off, Redis 7.2; WAITAOF).
	fackOff atomic.Int64
	once    sync.Once
	done    chan struct{}
	id      int64
}

// acked is ackOff as INFO and ROLE show it (0 before the first ACK).
func (rp *replica) acked() int64 { return max(rp.ackOff.Load(), 0) }

func (rp *replica) stateName() string {
	switch rp.state.Load() {
	case stateWaitBgsave:
		return "wait_bgsave"
	case stateSendBulk:
		return "send_bulk"
	}
	return "online"
}

// close disconnects the replica.
func (rp *replica) close() {
	rp.once.Do(func() {
		close(rp.done)
		closeNow(rp.nc)
	})
}

func (r *replState) sortedReplicas() []*replica {
	out := make([]*replica, 0, len(r.replicas))
	for rp := range r.replicas {
		out = append(out, rp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// replHandoff is what SYNC or PSYNC asked for; the connection is handed
// to serveReplica once the replies before it are sent.
type replHandoff struct {
	psync  bool
	replid string
	off    int64
}

// REPLCONF option value ... (the replica's handshake).
func cmdReplConf(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args)%2 == 0 {
		r.Error("ERR syntax error")
		return
	}
	for i := 1; i < len(args); i += 2 {
		opt, val := strings.ToLower(string(args[i])), string(args[i+1])
		switch opt {
		case "listening-port":
			p, err := strconv.Atoi(val)
			if err != nil || p < 0 || p > 65535 {
				r.Error("ERR value is not an integer or out of range")
				return
			}
			c.replPort, c.replListening = p, true
		case "ip-address":
			if len(val) > 255 {
				r.Error("ERR REPLCONF ip-address provided by replica instance is too long: " + strconv.Itoa(len(val)) + " bytes")
				return
			}
			c.replIP = val
		case "capa", "rdb-filter-only":
		case "rdb-only":
			c.rdbOnly = val == "1"
		case "bloomkit-run-id":
			if val == s.runID {
				r.Error("ERR this server cannot be a replica of itself")
				return
			}
			c.replBloomkit = true
		case "bloomkit-filter-params":
			// The parameters the filters of this server's stream are
			// created with, when it passes on a Redis master's
			// (repl_redis.go); "" for RedisBloom's defaults.
			r.Simple(encodeMasterFilters(s.streamFilters()))
			return
		case "ack", "getack":
			// Only meaningful on a replication link; no reply, as Redis.
			r.w.Discard()
			return
		default:
			r.Error("ERR Unrecognized REPLCONF option: " + trimArg(args[i]))
			return
		}
	}
	r.OK()
}

// SYNC and PSYNC replid offset.
func cmdSync(s *Server, c *Session, args [][]byte, r *Reply) {
	if c.fromMaster {
		r.Error("ERR Replica can't interact with the keyspace")
		return
	}
	if c.multi != nil || c.inExec {
		r.Error("ERR Command not allowed inside a transaction")
		return
	}
	if len(args) == 4 && strings.EqualFold(string(args[0]), "psync") && strings.EqualFold(string(args[3]), "failover") {
		// FAILOVER: this server's master hands its role over; it is
		// a master from now on, and the old one continues as its
		// replica (failover.go).
		unlock := s.lockDB(c)
		s.repl.mu.Lock()
		id := s.repl.replid
		s.repl.mu.Unlock()
		if !s.isReplica() || string(args[1]) != id {
			unlock()
			r.Error("ERR PSYNC FAILOVER replid must match my replid.")
			return
		}
		s.becomeMaster()
		unlock()
		s.log.Info("MASTER MODE enabled (failover request)", "client", c.Addr)
		args = args[:3]
	}
	if s.isReplica() {
		l := s.currentLink()
		if l == nil || !l.up() {
			r.Error("NOMASTERLINK Can't SYNC while not connected with my master")
			return
		}
	}
	h := &replHandoff{off: -1}
	if strings.EqualFold(string(args[0]), "psync") {
		if len(args) != 3 {
			r.Error(wrongArity("psync"))
			return
		}
		h.psync = true
		h.replid = string(args[1])
		if v, err := strconv.ParseInt(string(args[2]), 10, 64); err == nil {
			h.off = v
		}
	} else if len(args) != 1 {
		r.Error(wrongArity("sync"))
		return
	}
	if !c.canWait {
		r.Error("ERR SYNC and PSYNC need a network connection")
		return
	}
	if c.replListening && !c.replBloomkit {
		// A replica that did not say it is bloom serve (Redis): it
		// would discard its data before finding that it cannot load
		// bloomkit's snapshot format, and reconnect at once. Refused
		// before any byte of payload, it keeps its data; the master
		// makes no snapshot for it.
		if now := time.Now().Unix(); now-s.repl.foreignLogged.Load() >= 60 {
			s.repl.foreignLogged.Store(now)
			s.log.Warn("refused a replica that is not bloom serve (a Redis replica cannot load bloomkit's snapshot format); it keeps its data", "addr", c.Addr)
		}
		r.Error(errForeignReplica)
		return
	}
	c.handoff = h
	r.w.Discard() // the replies come from serveReplica
}

func (s *Server) currentLink() *masterLink {
	s.repl.mu.Lock()
	defer s.repl.mu.Unlock()
	return s.repl.link
}

// serveReplica serves a connection that sent SYNC or PSYNC: rest is what
// it sent after that command (normally nothing). It returns when the
// replica is gone.
func (s *Server) serveReplica(c *Session, nc net.Conn, rest []byte) {
	h := c.handoff
	c.handoff = nil
	c.replRole.Store(roleReplica) // CLIENT LIST flag S, type replica
	rp := &replica{nc: nc, port: c.replPort, done: make(chan struct{}), id: c.ID}
	rp.ip = c.replIP
	if rp.ip == "" {
		if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
			rp.ip = ta.IP.String()
		}
	}
	defer rp.close()
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	lim := *s.repl.outLimit.Load()
	// Partial resync: the history it asks for is still here.
	if h.psync {
		if rd, replid, ok := s.tryPartial(h, lim); ok {
			s.repl.syncPartialOK.Add(1)
			reply := "+CONTINUE " + replid + "\r\n"
			s.log.Info("partial resynchronization accepted", "replica", net.JoinHostPort(rp.ip, strconv.Itoa(rp.port)), "from_offset", h.off)
			rp.state.Store(stateOnline)
			rp.ackOff.Store(h.off - 1)
			rp.ackTime.Store(time.Now().Unix())
			if !s.addReplica(rp) {
				rd.Close()
				return
			}
			defer s.removeReplica(rp)
			nc.SetWriteDeadline(time.Now().Add(s.replTimeout()))
			if _, err := io.WriteString(nc, reply); err != nil {
				rd.Close()
				return
			}
			go s.readAcks(rp, rest, true)
			s.stream(rp, rd)
			return
		}
		if h.replid != "?" {
			s.repl.syncPartialErr.Add(1)
		}
	}
	s.repl.syncFull.Add(1)
	rp.state.Store(stateWaitBgsave)
	// Nothing acknowledged until it has loaded the snapshot and says so
	// (WAIT must not count it for the writes in that snapshot before).
	rp.ackOff.Store(-1)
	rp.ackTime.Store(time.Now().Unix())
	if !s.addReplica(rp) {
		return
	}
	defer s.removeReplica(rp)
	rd, err := s.fullSync(rp, h.psync, c.rdbOnly)
	if err != nil {
		s.log.Warn("full resynchronization failed", "replica", net.JoinHostPort(rp.ip, strconv.Itoa(rp.port)), "err", err)
		return
	}
	if c.rdbOnly {
		rd.Close()
		// redis-cli --rdb: the payload is all it wanted; let it read it.
		nc.SetReadDeadline(time.Now().Add(s.replTimeout()))
		io.Copy(io.Discard, nc)
		return
	}
	rp.state.Store(stateOnline)
	go s.readAcks(rp, rest, h.psync)
	s.stream(rp, rd)
}

// tryPartial positions a reader where a PSYNC asks, if it can (PSYNC2:
// the current replication ID, or the previous one up to the offset where
// it ended).
func (s *Server) tryPartial(h *replHandoff, lim backlog.Limits) (*backlog.Reader, string, bool) {
	s.db.Lock()
	defer s.db.Unlock()
	rs := &s.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if h.off < 1 || h.replid != rs.replid && (h.replid != rs.replid2 || h.off > rs.second) {
		return nil, "", false
	}
	b := rs.backlog.Load()
	if b == nil {
		// No backlog yet: only a replica exactly where this server's
		// history stands can continue (both restarted after a clean
		// shutdown, say, with nothing written since).
		if h.off-1 != rs.offset0 {
			return nil, "", false
		}
		b = rs.ensureBacklog()
	}
	rd, ok := b.NewReader(h.off-1, lim)
	if !ok {
		return nil, "", false
	}
	return rd, rs.replid, true
}

// addReplica lists rp (false: the server is closing).
func (s *Server) addReplica(rp *replica) bool {
	if s.closed.Load() {
		return false
	}
	s.repl.mu.Lock()
	s.repl.replicas[rp] = struct{}{}
	s.repl.mu.Unlock()
	return true
}

func (s *Server) removeReplica(rp *replica) {
	s.repl.mu.Lock()
	delete(s.repl.replicas, rp)
	s.repl.mu.Unlock()
	s.wakeWaiters()
}

func (s *Server) replTimeout() time.Duration {
	return time.Duration(s.repl.timeout.Load()) * time.Second
}

// fullSync sends +FULLRESYNC (PSYNC only), the snapshot as a bulk payload
// ($<len>, the bytes, no CRLF after them), and returns a reader of the
// stream from the snapshot's point in time on.
func (s *Server) fullSync(rp *replica, psync, rdbOnly bool) (*backlog.Reader, error) {
	nc := rp.nc
	p := &s.persist
	lim := *s.repl.outLimit.Load()
	// One snapshot at a time (BGSAVE's too): its point in time must
	// not fall inside a merge.
	p.saveMu.Lock()
	s.db.WaitMerges()
	s.db.Lock()
	s.db.FinishMerges(nil)
	rs := &s.repl
	b := rs.ensureBacklog()
	off := b.End()
	rd, _ := b.NewReader(off, lim)
	rs.mu.Lock()
	replid := rs.replid
	rs.mu.Unlock()
	snap := s.db.BeginSnapshot(1)
	s.db.Unlock()
	// The replica hears from another goroutine while the snapshot is
	// written (saveMu is held for that, and no lock may be held across
	// network I/O: a replica that stops reading would hold SAVE, BGSAVE
	// and shutdown up): +FULLRESYNC, then a newline a second to tell it
	// the master is alive (as Redis does).
	stopPing := make(chan struct{})
	pinged := make(chan struct{})
	var replyErr error // +FULLRESYNC's, read after pinged is closed
	go func() {
		defer close(pinged)
		if h := testHookReplicaWrite.Load(); h != nil {
			(*h)()
		}
		nc.SetWriteDeadline(time.Now().Add(s.replTimeout()))
		if psync {
			if _, replyErr = io.WriteString(nc, "+FULLRESYNC "+replid+" "+strconv.FormatInt(off, 10)+"\r\n"); replyErr != nil {
				return
			}
		}
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopPing:
				return
			case <-t.C:
				nc.SetWriteDeadline(time.Now().Add(s.replTimeout()))
				nc.Write([]byte{'\n'})
			}
		}
	}()
	f, err := s.syncFile()
	if err == nil {
		// At the server's own priority, not on BGSAVE's low-priority
		// thread: the writer holds the keyspace lock while it copies a
		// stage, and on a loaded machine a low-priority thread
		// descheduled there holds every client up until the kernel runs
		// it again (a 1.6 s stall measured at a load average of 35;
		// bench/REPLICATION.md).
		bw := bufio.NewWriterSize(f, 1<<20)
		if err = s.db.WriteSnapshot(bw, snap); err == nil {
			err = bw.Flush()
		}
	}
	s.db.Lock()
	s.db.EndSnapshot(snap)
	s.db.Unlock()
	p.saveMu.Unlock()
	close(stopPing)
	<-pinged
	if f != nil {
		defer func() {
			f.Close()
			os.Remove(f.Name())
		}()
	}
	if err == nil && replyErr != nil {
		err = replyErr
	}
	if err != nil {
		rd.Close()
		return nil, fmt.Errorf("snapshot for the replica: %w", err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		rd.Close()
		return nil, err
	}
	rp.state.Store(stateSendBulk)
	start := time.Now()
	if _, err := io.WriteString(nc, "$"+strconv.FormatInt(size, 10)+"\r\n"); err != nil {
		rd.Close()
		return nil, err
	}
	// Sent in pieces, each with its own deadline: a replica that stops
	// reading is dropped after repl-timeout, not after the whole file.
	for sent := int64(0); sent < size; {
		nc.SetWriteDeadline(time.Now().Add(s.replTimeout()))
		n, err := io.CopyN(nc, f, min(size-sent, 64<<20))
		sent += n
		if err != nil {
			rd.Close()
			return nil, fmt.Errorf("sending the snapshot: %w", err)
		}
	}
	s.log.Info("full resynchronization: snapshot sent", "replica", net.JoinHostPort(rp.ip, strconv.Itoa(rp.port)),
		"bytes", size, "offset", off, "took", time.Since(start).Round(time.Millisecond), "rdb_only", rdbOnly)
	return rd, nil
}

// testHookReplicaWrite, if set, runs before a full sync's first write to
// the replica (tests stand it in for a replica that does not read).
var testHookReplicaWrite atomic.Pointer[func()]

// syncFile creates the temporary file a full sync's snapshot is written
// to: in the data directory (start-up removes leftovers: the name has
// aof.TmpMarker), or the system's temporary directory without one.
func (s *Server) syncFile() (*os.File, error) {
	dir := os.TempDir()
	if !s.cfg.NoPersistence && s.cfg.dataDir == nil {
		dir = s.cfg.Dir
	}
	f, err := os.CreateTemp(dir, "replsync"+aof.TmpMarker+"*")
	if err != nil {
		return nil, fmt.Errorf("temporary file for the full sync: %w", err)
	}
	return f, nil
}

// stream sends the replication stream from rd until the replica goes, is
// too slow (its output limit), or the server stops. A PING every
// repl-ping-replica-period keeps an idle link's replica from timing out.
func (s *Server) stream(rp *replica, rd *backlog.Reader) {
	defer rd.Close()
	go func() {
		// Dropped for its output limit while a write to it blocks: the
		// connection is closed, which ends the write.
		select {
		case <-rd.Dropped():
			rp.close()
		case <-rp.done:
		}
	}()
	buf := make([]byte, 256<<10)
	ping := time.NewTicker(time.Duration(s.repl.pingPeriod.Load()) * time.Second)
	defer ping.Stop()
	for {
		n, err := rd.Read(buf)
		if err != nil {
			if errors.Is(err, backlog.ErrTooSlow) {
				s.slowClients.Add(1)
				s.log.Warn("disconnecting a replica over its output buffer limit (client-output-buffer-limit replica)", "replica", net.JoinHostPort(rp.ip, strconv.Itoa(rp.port)))
			}
			return
		}
		if n > 0 {
			rp.nc.SetWriteDeadline(time.Now().Add(s.replTimeout()))
			if _, err := rp.nc.Write(buf[:n]); err != nil {
				s.log.Info("replica connection lost", "replica", net.JoinHostPort(rp.ip, strconv.Itoa(rp.port)), "err", err)
				return
			}
			continue
		}
		select {
		case <-rd.Ready():
		case <-ping.C:
			s.db.Lock()
			if !s.db.Following() {
				s.feed([][][]byte{{[]byte("PING")}}, false)
			}
			s.db.Unlock()
		case <-rp.done:
			return
		case <-s.stop:
			return
		}
	}
}

// readAcks reads what the replica sends: REPLCONF ACK offset, once a
// second and after GETACK. A replica of the old protocol (SYNC: redis-cli
// --replica) sends nothing and is not timed out, as in Redis.
func (s *Server) readAcks(rp *replica, rest []byte, timeout bool) {
	defer rp.close()
	var src io.Reader = rp.nc
	if len(rest) > 0 {
		src = io.MultiReader(bytes.NewReader(rest), rp.nc)
	}
	p := resp.NewReader(src, resp.PreAuthLimits)
	for {
		args, err := p.Next()
		if err != nil {
			return
		}
		if args == nil {
			if timeout {
				rp.nc.SetReadDeadline(time.Now().Add(s.replTimeout()))
			}
			if err := p.Fill(); err != nil {
				return
			}
			continue
		}
		if len(args) >= 3 && strings.EqualFold(string(args[0]), "replconf") && strings.EqualFold(string(args[1]), "ack") {
			if off, ok := resp.ParseInt(args[2]); ok {
				rp.ackOff.Store(off)
				rp.ackTime.Store(time.Now().Unix())
				if len(args) >= 5 && strings.EqualFold(string(args[3]), "fack") {
					if f, ok := resp.ParseInt(args[4]); ok {
						rp.fackOff.Store(f)
					}
				}
				s.wakeWaiters()
			}
		}
	}
}
