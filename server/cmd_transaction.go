package server

import "time"

// Transactions: MULTI, DISCARD, WATCH (EXEC is run by the dispatcher, server.go).

func cmdMulti(s *Server, c *Session, args [][]byte, r *Reply) {
	if c.multi != nil {
		r.Error("ERR MULTI calls can not be nested")
		return
	}
	c.multi = []queued{{}}
	c.multiErr = false
	c.txnLen.Store(1)
	r.OK()
}

func cmdDiscard(s *Server, c *Session, args [][]byte, r *Reply) {
	if c.multi == nil {
		r.Error("ERR DISCARD without MULTI")
		return
	}
	s.endMulti(c)
	s.unwatchLocked(c)
	r.OK()
}

// WATCH key [key ...]: EXEC runs the next MULTI block only if none of the
// keys changed meanwhile (watch.go).
func cmdWatch(s *Server, c *Session, args [][]byte, r *Reply) {
	if c.multi != nil {
		r.Error("ERR WATCH inside MULTI is not allowed")
		return
	}
	unlock := s.lockDB(c)
	s.watch(c, args[1:])
	unlock()
	r.OK()
}

// UNWATCH forgets the watched keys. Inside MULTI it is queued, as in
// Redis, and so does nothing: EXEC has already forgotten them.
func cmdUnwatch(s *Server, c *Session, args [][]byte, r *Reply) {
	s.unwatchLocked(c)
	r.OK()
}

// endMulti forgets c's queue and the memory it counted.
func (s *Server) endMulti(c *Session) {
	c.multi, c.multiErr = nil, false
	c.txnLen.Store(0)
	s.queuedBytes.Add(-c.multiBytes)
	c.multiBytes, c.multiLog = 0, 0
	c.mem.multi.Store(0)
}

// queuedOverhead approximates the memory of a queued command beyond its
// bytes (slice headers, the queue entry).
const queuedOverhead = 24

// queueRoom decides whether args may join c's MULTI queue, and counts
// them if so; otherwise it returns the error, which also makes EXEC abort.
// The queue is bounded three ways: by the client's query-buffer limit (a
// queue is requests the server holds), by maxmemory counting every
// client's queue (Redis refuses commands queued past maxmemory with -OOM),
// and by the size of the log record EXEC would write.
func (s *Server) queueRoom(c *Session, cmd *command, args [][]byte) string {
	size := int64(queuedOverhead * (len(args) + 1))
	for _, a := range args {
		size += int64(len(a))
	}
	if c.multiBytes+size > int64(s.cfg.MaxQuery) {
		return "ERR MULTI queue would exceed the client query buffer limit (" + itoa(int64(s.cfg.MaxQuery)) + " bytes)"
	}
	s.db.Lock()
	used, limit := s.db.Used(), s.db.Limit()
	s.db.Unlock()
	if limit != 0 && used+uint64(s.queuedBytes.Load())+uint64(size) > limit {
		return errOOMCommand
	}
	logSize := c.multiLog
	if cmd.write {
		logSize += logRecordSize(args)
		if msg := s.recordFits(logSize); msg != "" {
			return msg
		}
	}
	c.multiBytes += size
	c.mem.multi.Store(c.multiBytes)
	c.multiLog = logSize
	s.queuedBytes.Add(size)
	return ""
}

// logRecordSize bounds the log record payload a write with these arguments
// makes: a handler may log a rewritten form (PEXPIREAT for EXPIRE, SEED
// added, ...), never more than a few short arguments longer.
func logRecordSize(args [][]byte) int64 {
	n := int64(1 + 4 + 4 + 256)
	for _, a := range args {
		n += 4 + int64(len(a))
	}
	return n
}

// recordFits refuses, before anything is applied, a write whose log record
// would be larger than a record may be: a larger one could not be read back,
// and the server would refuse to start.
func (s *Server) recordFits(size int64) string {
	if s.cfg.NoPersistence || size <= s.cfg.maxRecord {
		return ""
	}
	return "ERR the append-only log record of this write would be " + itoa(size) + " bytes, more than a record may hold (" + itoa(s.cfg.maxRecord) + "); nothing was applied"
}

// queued is a command waiting for EXEC.
type queued struct {
	cmd  *command
	args [][]byte
}

// exec runs a MULTI block atomically: one array with each command's reply.
// Its writes are logged as one record, so a crash replays all or none, and
// the clock stands still while it runs, so expiry cannot split it.
func cmdExec(s *Server, c *Session, args [][]byte, r *Reply) { s.exec(c, r) }

func (s *Server) exec(c *Session, r *Reply) {
	if c.multi == nil {
		r.Error("ERR EXEC without MULTI")
		return
	}
	q, failed := c.multi, c.multiErr
	s.endMulti(c)
	if failed {
		s.unwatchLocked(c)
		r.Error("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	for _, e := range q[1:] {
		if e.cmd.write {
			msg := s.misconf()
			if msg == "" {
				// Became a replica, or lost its replicas, since it was queued.
				msg = s.replicaRefuses(c, e.cmd)
			}
			if msg != "" {
				s.unwatchLocked(c)
				r.Error("EXECABORT Transaction discarded because of: " + msg)
				return
			}
			break
		}
	}
	var sub Reply
	s.db.Lock()
	defer s.db.Unlock()
	if c.watch.keys != nil {
		// Checked with the keyspace locked until the queue has run: no
		// watched key can change in between.
		failed := s.watchFailed(c)
		s.unwatch(c)
		if failed {
			r.NullArray()
			return
		}
	}
	r.Array(len(q) - 1) // q[0] is the MULTI marker
	now := s.db.Now()
	clock := s.db.Now
	s.db.Now = func() time.Time { return now }
	s.beginTxn()
	defer func() {
		s.db.Now = clock
		if s.endTxn() {
			if s.aof != nil && !s.cfg.NoAppendLog {
				c.pendingWrite = true
			}
			c.woff = s.repl.offset()
			if s.aof != nil {
				c.logPos = s.aof.Appended()
			}
		}
		if s.aof != nil {
			c.pendingSync = s.aof.Appended()
		}
	}()
	c.inExec = true
	defer func() { c.inExec = false }()
	for _, e := range q[1:] {
		sub.Reset(c.resp3)
		if !s.checkAccess(c, e.cmd, e.args, &sub) {
			// The user's rules changed since the command was queued:
			// Redis checks again when EXEC runs it.
			r.w.Raw(sub.w.Pending())
			continue
		}
		t := time.Now()
		s.apply(srcExec, c, e.cmd, e.args, &sub)
		s.stats.executedInTxn(e.cmd, time.Since(t), &sub)
		r.w.Raw(sub.w.Pending())
	}
}

// lockDB takes the keyspace lock for a command marked unlocked and returns
// its release. Inside EXEC the lock is already held for the whole queue (the
// transaction is atomic), so it neither takes nor releases it: taking it
// again would deadlock the server.
func (s *Server) lockDB(c *Session) (unlock func()) {
	if c != nil && c.inExec {
		return func() {}
	}
	s.db.Lock()
	return s.db.Unlock
}
