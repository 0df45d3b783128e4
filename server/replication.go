package server

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/backlog"
)

// Replication, as Redis does it (the protocol, the commands, the INFO
// fields), between bloom serves.
//
// The stream a master sends its replicas is what it logs: logCommand feeds
// the same records, in the same order and under the same keyspace lock, to
// the backlog (internal/backlog) as RESP commands, a MULTI/EXEC block as
// MULTI … EXEC. Its offset is the stream's byte count (master_repl_offset).
// A replica applies the stream exactly as start-up replays a log (no
// memory limit, no expiry, no window moved by its own clock: the master's
// BF.ADVANCE and DEL do that), logs it to its own data directory, and
// feeds the same bytes to its own backlog, so its offset is its master's
// and, promoted, it continues the same history under a new replication ID
// (replid2 keeps the old one, as PSYNC2).
//
// repl_master.go serves replicas (SYNC, PSYNC, the full sync's snapshot,
// the stream); repl_replica.go is a replica's link to its master.

// replState is the server's replication state.
type replState struct {
	// mu guards the fields below that are not atomic. Changes that
	// must line up with the stream (role, replication IDs, the backlog)
	// are made with the keyspace lock held too, so a command logged
	// under that lock sees one consistent state.
	mu sync.Mutex
	// foreignLogged is the second of the last warning about a refused
	// Redis replica (one a minute: such a replica retries every second).
	foreignLogged atomic.Int64
	replid        string
	replid2       string
	second        int64 // second_repl_offset: offsets up to it are valid under replid2 (-1: none)
	replicas      map[*replica]struct{}
	link          *masterLink // non-nil: this server is a replica of link's master
	// following mirrors link for the per-command check (replicaRefuses)
	// without taking mu.
	following atomic.Pointer[masterLink]
	// backlog is the stream's history (nil until a replica connects or
	// this server becomes one); it is set with the keyspace lock held.
	backlog atomic.Pointer[backlog.Buffer]
	// enc is scratch space for encoding the stream (keyspace lock).
	enc []byte
	// offset0 is master_repl_offset before any backlog exists.
	offset0 int64

	// Settings (CONFIG SET changes them).
	backlogSize atomic.Int64
	readOnly    atomic.Bool
	// ignoreUnsupported: a Redis master's keys this server cannot hold
	// are skipped (and counted) instead of stopping the sync.
	ignoreUnsupported atomic.Bool
	serveStale        atomic.Bool
	minReplicas       atomic.Int64
	minLag            atomic.Int64 // seconds
	priority          atomic.Int64
	announced         atomic.Bool
	announcePort      atomic.Int64
	announceIP        atomic.Pointer[string]
	masterAuth        atomic.Pointer[string]
	masterUser        atomic.Pointer[string]
	timeout           atomic.Int64 // repl-timeout, seconds
	pingPeriod        atomic.Int64 // repl-ping-replica-period, seconds
	outLimit          atomic.Pointer[backlog.Limits]

	// Counters (INFO stats).
	syncFull, syncPartialOK, syncPartialErr atomic.Int64

	// waiters are WAIT calls blocked until replicas acknowledge.
	waitMu  sync.Mutex
	waiters map[*waiter]struct{}
}

// Replication defaults, Redis's.
const (
	defaultBacklogSize = 1 << 20
	defaultReplTimeout = 60
	defaultPingPeriod  = 10
	defaultMinLag      = 10
	defaultPriority    = 100
	replidLen          = 40
	errReadOnly        = "READONLY You can't write against a read only replica."
	errMasterDown      = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
	errNoReplicas      = "NOREPLICAS Not enough good replicas to write."
	errWaitOnReplica   = "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated."
	// errForeignReplica refuses SYNC/PSYNC from a replica that is not
	// bloom serve, before any payload: a Redis replica keeps its data
	// (it discards it only once a payload starts).
	errForeignReplica = "ERR this master is bloom serve, whose full-sync payload is bloomkit's snapshot format, which a Redis replica cannot load; refused before any payload, so the replica keeps its data (copy the data with bloom migrate instead)"
)

func (s *Server) initReplication(cfg *Config) {
	r := &s.repl
	r.replid = newRunID()
	r.replid2 = strings.Repeat("0", replidLen)
	r.second = -1
	r.replicas = map[*replica]struct{}{}
	r.waiters = map[*waiter]struct{}{}
	r.backlogSize.Store(defaultBacklogSize)
	if cfg.ReplBacklogSize > 0 {
		r.backlogSize.Store(cfg.ReplBacklogSize)
	}
	r.readOnly.Store(cfg.ReplicaReadOnly != "no")
	r.serveStale.Store(cfg.ReplicaServeStaleData != "no")
	r.ignoreUnsupported.Store(cfg.ReplicaIgnoreUnsupported == "yes")
	r.minReplicas.Store(int64(cfg.MinReplicasToWrite))
	r.minLag.Store(defaultMinLag)
	if cfg.MinReplicasMaxLag != nil {
		r.minLag.Store(int64(*cfg.MinReplicasMaxLag))
	}
	r.priority.Store(defaultPriority)
	if cfg.ReplicaPriority != nil {
		r.priority.Store(int64(*cfg.ReplicaPriority))
	}
	r.announced.Store(cfg.ReplicaAnnounced != "no")
	r.announcePort.Store(int64(cfg.ReplicaAnnouncePort))
	ip, auth, user := cfg.ReplicaAnnounceIP, cfg.MasterAuth, cfg.MasterUser
	r.announceIP.Store(&ip)
	r.masterAuth.Store(&auth)
	r.masterUser.Store(&user)
	r.timeout.Store(defaultReplTimeout)
	if cfg.ReplTimeout > 0 {
		r.timeout.Store(int64(cfg.ReplTimeout / time.Second))
	}
	r.pingPeriod.Store(defaultPingPeriod)
	if cfg.ReplPingReplicaPeriod > 0 {
		r.pingPeriod.Store(int64(cfg.ReplPingReplicaPeriod))
	}
	s.setReplicaOutLimit(s.outputLimits())
	if cfg.replicaOutLimit != nil {
		r.outLimit.Store(cfg.replicaOutLimit)
	}
}

// setReplicaOutLimit takes the replica class of client-output-buffer-limit
// (Redis's default 256mb 64mb 60) as the limit of replicas' output.
func (s *Server) setReplicaOutLimit(l [3]outputLimit) {
	o := l[classReplica]
	s.repl.outLimit.Store(&backlog.Limits{Hard: o.hard, Soft: o.soft, SoftFor: o.softFor})
}

// startReplication starts following the master of --replicaof, if any
// (Serve calls it).
func (s *Server) startReplication() {
	if s.cfg.ReplicaOf == "" {
		return
	}
	host, port, err := parseReplicaOf(s.cfg.ReplicaOf)
	if err != nil {
		s.log.Error("replicaof: "+err.Error(), "value", s.cfg.ReplicaOf)
		return
	}
	s.db.Lock()
	s.becomeReplica(host, port)
	s.db.Unlock()
}

// parseReplicaOf reads "host port".
func parseReplicaOf(v string) (string, string, error) {
	f := strings.Fields(v)
	if len(f) != 2 {
		return "", "", fmt.Errorf("want \"host port\", got %q", v)
	}
	if p, err := strconv.Atoi(f[1]); err != nil || p <= 0 || p > 65535 {
		return "", "", fmt.Errorf("bad port %q", f[1])
	}
	return f[0], f[1], nil
}

// offset is master_repl_offset (the keyspace lock or repl.mu held, or a
// racy read for INFO).
func (r *replState) offset() int64 {
	if b := r.backlog.Load(); b != nil {
		return b.End()
	}
	return r.offset0
}

// ensureBacklog creates the backlog at the current offset (keyspace lock held).
func (r *replState) ensureBacklog() *backlog.Buffer {
	if b := r.backlog.Load(); b != nil {
		return b
	}
	b := backlog.New(r.offset0, r.backlogSize.Load())
	r.backlog.Store(b)
	return b
}

// appendRESP encodes one command as a RESP array of bulk strings.
func appendRESP(dst []byte, args [][]byte) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

var (
	argMulti = [][]byte{[]byte("MULTI")}
	argExec  = [][]byte{[]byte("EXEC")}
)

// feed sends commands to the replicas (keyspace lock held): one command,
// or a transaction's as MULTI … EXEC. A replica feeds nothing of its own:
// its stream is its master's (repl_replica.go feeds that).
func (s *Server) feed(cmds [][][]byte, txn bool) {
	r := &s.repl
	b := r.backlog.Load()
	if b == nil || s.db.Following() {
		return
	}
	buf := r.enc[:0]
	if txn {
		buf = appendRESP(buf, argMulti)
	}
	for _, c := range cmds {
		buf = appendRESP(buf, c)
	}
	if txn {
		buf = appendRESP(buf, argExec)
	}
	b.Append(buf)
	if cap(buf) > 1<<20 {
		buf = nil // do not keep a huge command's buffer
	}
	r.enc = buf
}

// isReplica reports whether this server follows a master.
func (s *Server) isReplica() bool { return s.repl.following.Load() != nil }

// replicaRefuses is the error a replica gives a command before it runs,
// or "": writes on a read-only replica, and everything not marked stale
// while the link is down and replica-serve-stale-data is no.
func (s *Server) replicaRefuses(c *Session, cmd *command) string {
	if c.fromMaster {
		return ""
	}
	r := &s.repl
	link := r.following.Load()
	if link == nil {
		if cmd.write && r.minReplicas.Load() > 0 && s.goodReplicas() < int(r.minReplicas.Load()) {
			return errNoReplicas
		}
		return ""
	}
	if cmd.write && r.readOnly.Load() {
		return errReadOnly
	}
	if !r.serveStale.Load() && !link.up() && !cmd.stale() {
		return errMasterDown
	}
	return ""
}

// stale reports whether a command runs on a replica whose link is down
// even with replica-serve-stale-data no (Redis's CMD_STALE).
func (c *command) stale() bool {
	for _, f := range c.flags {
		if f == "stale" {
			return true
		}
	}
	return false
}

// goodReplicas counts the online replicas whose last ACK is at most
// min-replicas-max-lag seconds old.
func (s *Server) goodReplicas() int {
	r := &s.repl
	maxLag := r.minLag.Load()
	now := time.Now().Unix()
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for rp := range r.replicas {
		if rp.state.Load() == stateOnline && now-rp.ackTime.Load() <= maxLag {
			n++
		}
	}
	return n
}

// REPLICAOF host port | REPLICAOF NO ONE (and SLAVEOF).
func cmdReplicaOf(s *Server, c *Session, args [][]byte, r *Reply) {
	host, port := string(args[1]), string(args[2])
	unlock := s.lockDB(c)
	defer unlock()
	if strings.EqualFold(host, "no") && strings.EqualFold(port, "one") {
		if s.isReplica() {
			s.becomeMaster()
			s.log.Info("MASTER MODE enabled (user request)", "client", c.Addr)
		}
		r.OK()
		return
	}
	if c.fromMaster {
		r.Error("ERR Command is not valid when client is a replica.")
		return
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		r.Error("ERR Invalid master port")
		return
	}
	s.repl.mu.Lock()
	link := s.repl.link
	s.repl.mu.Unlock()
	if link != nil && strings.EqualFold(link.host, host) && link.port == port {
		r.Simple("OK Already connected to specified master")
		return
	}
	s.becomeReplica(host, port)
	s.log.Info("REPLICAOF enabled (user request from client)", "master", net.JoinHostPort(host, port), "client", c.Addr)
	r.OK()
}

// becomeReplica makes this server a replica of host:port (keyspace lock
// held). Its own replicas are disconnected (they resynchronize with the
// new history); the keyspace stays as it is until the first sync.
func (s *Server) becomeReplica(host, port string) { s.becomeReplicaOf(host, port, false) }

// becomeReplicaOf is becomeReplica; with failover its PSYNC asks the new
// master to take over (PSYNC … FAILOVER, failover.go). It returns the link.
func (s *Server) becomeReplicaOf(host, port string, failover bool) *masterLink {
	r := &s.repl
	r.ensureBacklog()
	r.mu.Lock()
	old := r.link
	link := newMasterLink(host, port)
	link.failover.Store(failover)
	if old != nil {
		// Keep what the old link knew: a partial resync with the new
		// master is tried from there.
		old.mu.Lock()
		link.cachedID = old.cachedID
		old.mu.Unlock()
	} else {
		// A master turning replica continues its own history (Redis's
		// "cached master using myself"): the new master, if promoted from
		// one of its replicas, knows it as replid2.
		link.cachedID = r.replid
	}
	r.link = link
	r.following.Store(link)
	reps := r.detachReplicas()
	r.mu.Unlock()
	s.db.SetFollowing(true)
	if old != nil {
		old.close()
	}
	for _, rp := range reps {
		rp.close()
	}
	s.wakeWaiters()
	s.bgWG.Add(1)
	go func() {
		defer s.bgWG.Done()
		s.follow(link)
	}()
	return link
}

// becomeMaster stops following (REPLICAOF NO ONE; keyspace lock held): a
// new replication ID, the old one kept as replid2 for replicas of the old
// master that continue with this one (PSYNC2).
func (s *Server) becomeMaster() {
	r := &s.repl
	r.mu.Lock()
	old := r.link
	r.link = nil
	r.following.Store(nil)
	r.replid2 = r.replid
	r.second = r.offset() + 1
	r.replid = newRunID()
	reps := r.detachReplicas()
	r.mu.Unlock()
	s.db.SetFollowing(false)
	if old != nil {
		old.close()
	}
	for _, rp := range reps {
		rp.close()
	}
}

// detachReplicas forgets the connected replicas and returns them to be
// closed (repl.mu held).
func (r *replState) detachReplicas() []*replica {
	out := make([]*replica, 0, len(r.replicas))
	for rp := range r.replicas {
		out = append(out, rp)
	}
	clear(r.replicas)
	return out
}

// ROLE.
func cmdRole(s *Server, c *Session, args [][]byte, r *Reply) {
	rs := &s.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if l := rs.link; l != nil {
		r.Array(5)
		r.BulkString("slave")
		r.BulkString(l.host)
		p, _ := strconv.Atoi(l.port)
		r.Int(int64(p))
		r.BulkString(l.roleState())
		off := int64(-1)
		if l.up() {
			off = rs.offset()
		}
		r.Int(off)
		return
	}
	r.Array(3)
	r.BulkString("master")
	r.Int(rs.offset())
	reps := rs.sortedReplicas()
	r.Array(len(reps))
	for _, rp := range reps {
		r.Array(3)
		r.BulkString(rp.ip)
		r.BulkString(strconv.Itoa(rp.port))
		r.BulkString(strconv.FormatInt(rp.acked(), 10))
	}
}

// replicationInfo is INFO's Replication section, with Redis's field names
// (Sentinel parses them).
func (s *Server) replicationInfo() []string {
	rs := &s.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var lines []string
	off := rs.offset()
	if l := rs.link; l != nil {
		lines = append(lines, "role:slave",
			"master_host:"+l.host,
			"master_port:"+l.port,
			"master_link_status:"+map[bool]string{true: "up", false: "down"}[l.up()],
			"master_last_io_seconds_ago:"+itoa(l.lastIOAgo()),
			"master_sync_in_progress:"+b01(l.syncing.Load()),
			"slave_read_repl_offset:"+itoa(off),
			"slave_repl_offset:"+itoa(off),
		)
		if l.syncing.Load() {
			lines = append(lines,
				"master_sync_total_bytes:"+itoa(l.syncTotal.Load()),
				"master_sync_read_bytes:"+itoa(l.syncRead.Load()),
				"master_sync_left_bytes:"+itoa(l.syncTotal.Load()-l.syncRead.Load()),
				"master_sync_perc:"+syncPerc(l.syncRead.Load(), l.syncTotal.Load()),
				"master_sync_last_io_seconds_ago:"+itoa(l.lastIOAgo()),
			)
		}
		if !l.up() {
			lines = append(lines, "master_link_down_since_seconds:"+itoa(l.downSeconds()))
		}
		lines = append(lines,
			"slave_priority:"+itoa(rs.priority.Load()),
			"slave_read_only:"+b01(rs.readOnly.Load()),
			"replica_announced:"+b01(rs.announced.Load()),
		)
		if e := l.lastError(); e != "" {
			lines = append(lines, "master_sync_last_error:"+strings.ReplaceAll(e, "\r\n", " "))
		}
		if n := l.ignored.Load(); n > 0 {
			lines = append(lines, "master_sync_skipped_keys:"+itoa(n))
		}
		if n := l.skippedCmds.Load(); n > 0 {
			lines = append(lines, "master_stream_skipped_commands:"+itoa(n))
		}
	} else {
		lines = append(lines, "role:master")
	}
	reps := rs.sortedReplicas()
	lines = append(lines, "connected_slaves:"+strconv.Itoa(len(reps)))
	if rs.link == nil && rs.minReplicas.Load() > 0 {
		lines = append(lines, "min_slaves_good_slaves:"+strconv.Itoa(s.goodReplicasLocked()))
	}
	now := time.Now().Unix()
	for i, rp := range reps {
		lines = append(lines, fmt.Sprintf("slave%d:ip=%s,port=%d,state=%s,offset=%d,lag=%d",
			i, rp.ip, rp.port, rp.stateName(), rp.acked(), now-rp.ackTime.Load()))
	}
	lines = append(lines,
		"master_failover_state:"+failoverStateName(s.failover.state.Load()),
		"master_replid:"+rs.replid,
		"master_replid2:"+rs.replid2,
		"master_repl_offset:"+itoa(off),
		"second_repl_offset:"+itoa(rs.second),
	)
	if b := rs.backlog.Load(); b != nil {
		first := b.First()
		lines = append(lines,
			"repl_backlog_active:1",
			"repl_backlog_size:"+itoa(b.Keep()),
			"repl_backlog_first_byte_offset:"+itoa(first+1),
			"repl_backlog_histlen:"+itoa(b.End()-first),
		)
	} else {
		lines = append(lines,
			"repl_backlog_active:0",
			"repl_backlog_size:"+itoa(rs.backlogSize.Load()),
			"repl_backlog_first_byte_offset:0",
			"repl_backlog_histlen:0",
		)
	}
	return lines
}

// goodReplicasLocked is goodReplicas with repl.mu held.
func (s *Server) goodReplicasLocked() int {
	r := &s.repl
	maxLag := r.minLag.Load()
	now := time.Now().Unix()
	n := 0
	for rp := range r.replicas {
		if rp.state.Load() == stateOnline && now-rp.ackTime.Load() <= maxLag {
			n++
		}
	}
	return n
}

// replStatsLines are INFO stats' replication counters, Redis's names.
func (s *Server) replStatsLines() []string {
	return []string{
		"sync_full:" + itoa(s.repl.syncFull.Load()),
		"sync_partial_ok:" + itoa(s.repl.syncPartialOK.Load()),
		"sync_partial_err:" + itoa(s.repl.syncPartialErr.Load()),
	}
}

// syncPerc is how much of a full sync's payload has arrived, in percent:
// 0.00 while its length is unknown (a diskless sync from a Redis master,
// whose total is -1).
func syncPerc(read, total int64) string {
	if total <= 0 {
		return "0.00"
	}
	return fmt.Sprintf("%.2f", 100*float64(read)/float64(total))
}

func b01(v bool) string {
	if v {
		return "1"
	}
	return "0"
}

// waiter is one WAIT call waiting for acknowledgements.
type waiter struct {
	off  int64
	need int
	ch   chan struct{}
}

// WAIT numreplicas timeout — blocks the calling client (only it) until
// numreplicas replicas acknowledged every write it made, or timeout
// milliseconds (0: for ever) passed; the reply is how many did.
func cmdWait(s *Server, c *Session, args [][]byte, r *Reply) {
	n, ok1 := parseInt(args[1])
	ms, ok2 := parseInt(args[2])
	if !ok1 || !ok2 {
		r.Error("ERR value is not an integer or out of range")
		return
	}
	if ms < 0 {
		r.Error("ERR timeout is negative")
		return
	}
	if s.isReplica() {
		r.Error(errWaitOnReplica)
		return
	}
	off := c.woff
	if got := s.acked(off); got >= int(n) || c.inExec {
		r.Int(int64(got))
		return
	}
	w := &waiter{off: off, need: int(n), ch: make(chan struct{})}
	rs := &s.repl
	rs.waitMu.Lock()
	rs.waiters[w] = struct{}{}
	rs.waitMu.Unlock()
	s.askAcks()
	wait := func() int64 {
		var timer <-chan time.Time
		if ms > 0 {
			t := time.NewTimer(time.Duration(ms) * time.Millisecond)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-w.ch:
		case <-timer:
		case <-s.stop:
		case <-c.gone: // the client went away: nobody reads the answer
		}
		rs.waitMu.Lock()
		delete(rs.waiters, w)
		rs.waitMu.Unlock()
		return int64(s.acked(off))
	}
	if !c.canWait {
		r.Int(wait())
		return
	}
	// A network client: its connection holds its replies (and reads no
	// more requests) until the answer is known; the server serves the
	// others meanwhile.
	done := make(chan struct{})
	c.wait = done
	go func() {
		n := wait()
		var rw Reply
		rw.Reset(c.resp3)
		rw.Int(n)
		c.deferred = append([]byte(nil), rw.Bytes()...)
		close(done)
	}()
}

func parseInt(b []byte) (int64, bool) {
	v, err := strconv.ParseInt(string(b), 10, 64)
	return v, err == nil
}

// blockedClients counts the clients blocked in WAIT (INFO's
// blocked_clients: WAIT is the only command that blocks here).
func (s *Server) blockedClients() int {
	rs := &s.repl
	rs.waitMu.Lock()
	defer rs.waitMu.Unlock()
	return len(rs.waiters)
}

// acked counts the replicas whose acknowledged offset reached off.
func (s *Server) acked(off int64) int {
	rs := &s.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	n := 0
	for rp := range rs.replicas {
		if rp.state.Load() == stateOnline && rp.ackOff.Load() >= off {
			n++
		}
	}
	return n
}

// wakeWaiters releases the WAIT calls that have their answer (after an
// ACK, or when the role changed).
func (s *Server) wakeWaiters() {
	rs := &s.repl
	rs.waitMu.Lock()
	ws := make([]*waiter, 0, len(rs.waiters))
	for w := range rs.waiters {
		ws = append(ws, w)
	}
	rs.waitMu.Unlock()
	for _, w := range ws {
		if s.acked(w.off) >= w.need || s.isReplica() {
			rs.waitMu.Lock()
			if _, ok := rs.waiters[w]; ok {
				delete(rs.waiters, w)
				close(w.ch)
			}
			rs.waitMu.Unlock()
		}
	}
}

// askAcks puts REPLCONF GETACK * in the stream, so replicas acknowledge
// at once rather than at their next once-a-second ACK (WAIT).
func (s *Server) askAcks() {
	s.db.Lock()
	defer s.db.Unlock()
	if b := s.repl.backlog.Load(); b != nil && !s.db.Following() {
		b.Append(getAckCmd)
	}
}

var getAckCmd = appendRESP(nil, [][]byte{[]byte("REPLCONF"), []byte("GETACK"), []byte("*")})

// stopReplication closes the link to a master and the replicas' connections
// (shutdown).
func (s *Server) stopReplication() {
	rs := &s.repl
	rs.mu.Lock()
	link := rs.link
	reps := rs.detachReplicas()
	rs.mu.Unlock()
	if link != nil {
		link.close()
	}
	for _, rp := range reps {
		rp.close()
	}
	s.wakeWaiters()
}

// fsyncAcked is the number of online replicas that acknowledged offset
// off as fsynced in their append-only log (REPLCONF ACK … FACK).
func (s *Server) fsyncAcked(off int64) int {
	rs := &s.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	n := 0
	for rp := range rs.replicas {
		if rp.state.Load() == stateOnline && rp.fackOff.Load() >= off {
			n++
		}
	}
	return n
}

// WAITAOF numlocal numreplicas timeout (Redis 7.2): wait until this
// client's writes are fsynced in this server's log (numlocal 1) and in
// numreplicas replicas' logs, or until the timeout (ms; 0 = forever), and
// answer how many are: [local 0|1, replicas]. How soon depends on
// appendfsync, as in Redis: always at once, everysec within a second or
// so, no only with the next snapshot (a rewrite fsyncs the new log).
func cmdWaitAOF(s *Server, c *Session, args [][]byte, r *Reply) {
	numlocal, ok := parseInt(args[1])
	if !ok {
		r.Error("ERR value is not an integer or out of range")
		return
	}
	if numlocal < 0 || numlocal > 1 {
		r.Error("ERR value is out of range, value must between 0 and 1")
		return
	}
	numreplicas, ok := parseInt(args[2])
	if !ok {
		r.Error("ERR value is not an integer or out of range")
		return
	}
	if numreplicas < 0 {
		r.Error("ERR value is out of range, must be positive")
		return
	}
	ms, ok := parseInt(args[3])
	if !ok {
		r.Error("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		r.Error("ERR timeout is negative")
		return
	}
	if s.isReplica() {
		r.Error("ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.")
		return
	}
	lg := s.appendLog()
	if lg != nil && s.cfg.NoAppendLog {
		lg = nil
	}
	if numlocal > 0 && lg == nil {
		r.Error("ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.")
		return
	}
	pos, off := c.logPos, c.woff
	answer := func() (int64, int64) {
		local := int64(0)
		if lg != nil && lg.Synced() >= pos {
			local = 1
		}
		return local, int64(s.fsyncAcked(off))
	}
	reply := func(r *Reply, local, reps int64) {
		r.Array(2)
		r.Int(local)
		r.Int(reps)
	}
	if local, reps := answer(); local >= numlocal && reps >= numreplicas || c.inExec {
		reply(r, local, reps)
		return
	}
	s.askAcks()
	wait := func() (int64, int64) {
		if lg != nil {
			// This client's writes go to the log now (and are fsynced
			// with appendfsync always), whatever else it waits for.
			lg.Commit(pos)
		}
		var deadline <-chan time.Time
		if ms > 0 {
			t := time.NewTimer(time.Duration(ms) * time.Millisecond)
			defer t.Stop()
			deadline = t.C
		}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			local, reps := answer()
			if local >= numlocal && reps >= numreplicas {
				return local, reps
			}
			select {
			case <-tick.C:
			case <-deadline:
				return answer()
			case <-s.stop:
				return answer()
			case <-c.gone:
				return answer()
			}
		}
	}
	if !c.canWait {
		local, reps := wait()
		reply(r, local, reps)
		return
	}
	// As WAIT: the connection holds its replies while the others are
	// served.
	done := make(chan struct{})
	c.wait = done
	go func() {
		local, reps := wait()
		var rw Reply
		rw.Reset(c.resp3)
		reply(&rw, local, reps)
		c.deferred = append([]byte(nil), rw.Bytes()...)
		close(done)
	}()
}
