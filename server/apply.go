package server

// The apply path: every command that changes the keyspace — a client's,
// one of a MULTI block run by EXEC, one of the append-only log replayed at
// start-up, one of a master's stream on a replica — runs through apply.
// The source is an argument, not a mode of the session: what differs
// between sources is written here, in one place, and nowhere else.
//
//	                 client   EXEC    log replay   master's stream (bloom serve or Redis)
//	arity checked      yes     yes       yes           yes
//	before-write       yes     yes       yes           yes
//	keyspace_hits      yes     yes       no            no
//	  (each lookup of a read; a write's lookups for reading, as Redis's
//	  lookupKeyRead: GETDEL, GETEX, GETSET, SET … GET, COPY's source,
//	  CMS.MERGE's sources, TDIGEST.MERGE's keys; not its lookups for
//	  writing, nor those of a write refused for memory)
//	change counted     yes     yes       zeroed once loaded   yes
//	logged             yes     with the block   no     yes (with its block)
//	fed to replicas    yes     with the block   no     no: the stream's own bytes
//	reply waits for    the log position it saw      -          -
//	a failure          replied  replied  stops start-up  logged (bloom serve) or
//	                                                    stops the link (Redis)
//
// What is logged is what the command did (Session.logArgs, logBefore),
// not what was sent, so replay and a replica reproduce what clients saw.

import (
	"errors"
	"strings"

	"github.com/bloomkit/bloomkit/server/internal/aof"
)

// source is where a command comes from (see the table above).
type source uint8

const (
	// srcClient is a client's command: a network connection's or Do's.
	srcClient source = iota
	// srcExec is a command of a MULTI block, run by EXEC with the
	// keyspace locked for the whole block; its writes are logged and fed
	// to replicas as one transaction.
	srcExec
	// srcReplay is a command of the append-only log, replayed at
	// start-up: applied exactly, never logged again.
	srcReplay
	// srcMaster is a command of the master's stream, applied by a
	// replica: logged in its own log, and passed on to its replicas as
	// the master's bytes (replicationFeed), so their offsets agree.
	srcMaster
	// srcRedisMaster is a command of a Redis master's stream: applied
	// as srcMaster's; the caller (applyFromMaster) stops the link when
	// one fails instead of going on (repl_redis.go), and the filters it
	// creates take the master's RedisBloom parameters (filterConfig).
	srcRedisMaster
)

// checkArgs is the check every source makes before a command runs: its
// arity (RedisBloom's commands check their own, with RedisBloom's
// errors). It returns the error reply, or "".
func checkArgs(cmd *command, args [][]byte) string {
	if !cmd.checkOwn && !cmd.arityOK(len(args)) {
		return wrongArity(cmd.name)
	}
	return ""
}

// apply runs one command from src (db.mu held) and, for a write that
// changed something, counts the change, logs what it did and feeds it to
// replicas. The reply is left in r; a command that fails changes nothing
// and is not logged.
func (s *Server) apply(src source, c *Session, cmd *command, args [][]byte, r *Reply) {
	if msg := checkArgs(cmd, args); msg != "" {
		r.Error(msg)
		return
	}
	if cmd.write && s.repl.redisReplicas > 0 && (src == srcClient || src == srcExec) {
		if msg := s.redisRefusesCommand(cmd, args); msg != "" {
			r.Error(msg)
			return
		}
	}
	s.beforeWrite(cmd, args)
	c.skipLog, c.logArgs, c.logBefore = false, nil, nil
	counted := src == srcClient || src == srcExec
	if counted {
		// keyspace_hits/misses count the lookups of reads, and the
		// lookups for reading that some writes make (ReadLookup).
		s.db.CountReads(!cmd.write)
		s.db.ReadLookups(true)
	}
	dirty := s.db.Dirty()
	if cmd.write {
		s.signalFlush(cmd)
	}
	cmd.fn(s, c, args, r)
	if counted {
		s.db.CountReads(false)
		s.db.ReadLookups(false)
	}
	var la [][]byte
	if (cmd.write || cmd.layout && c.logArgs != nil) && !r.w.Failed() && !c.skipLog {
		la = args
		if c.logArgs != nil {
			la = c.logArgs
		}
		// What is logged changed something: a save point must see it,
		// even when the change is inside a value (an item added to a
		// filter) that the keyspace cannot see.
		if s.db.Dirty() == dirty {
			s.db.Changed()
		}
		if src != srcReplay {
			s.markForRedis(cmd)
			if c.logBefore != nil {
				s.record(c.logBefore, la)
			} else {
				s.record(la)
			}
			c.woff = s.repl.offset()
			if s.aof != nil {
				c.logPos = s.aof.Appended()
			}
		}
	}
	if cmd.write {
		s.signalWrites(cmd, args, r, la != nil || s.db.Dirty() != dirty)
	}
	if src == srcClient || src == srcExec {
		s.replyWaits(c, cmd, args, la, r)
	}
}

// replyWaits makes a client's reply wait until everything it could have
// seen is as durable as appendfsync promises (the connection flushes at
// endBatch), and answers an error instead of revealing a key whose last
// write may not survive a failed log.
func (s *Server) replyWaits(c *Session, cmd *command, args, logged [][]byte, r *Reply) {
	if s.aof == nil {
		return
	}
	if logged != nil {
		c.pendingWrite = true
		if s.txn == nil && s.aof.Failed() {
			// Appended after the log failed: in doubt, and its reply
			// will say so (the flush fails).
			s.doubt.add(aof.EncodeRecord(nil, logged))
		}
	}
	if logged != nil || !s.aof.Failed() {
		c.pendingSync = s.aof.Appended()
	} else if !cmd.write && s.doubt.has(cmd, args) {
		// The log failed (and the doubtful keys were recorded before that
		// became visible): do not reveal a write that may not survive.
		r.Reset(c.resp3)
		r.Error("IOERR the append-only log failed; the state of this key is in doubt until a snapshot succeeds")
	}
}

// record appends the writes one command made to the log, as one record
// so that a crash replays all or none of them, and to the replication
// stream (db.mu held). Inside a transaction (EXEC, or a master's
// MULTI/EXEC) they join the transaction's record instead.
func (s *Server) record(cmds ...[][]byte) {
	if s.txn != nil {
		for _, args := range cmds {
			cp := make([][]byte, len(args))
			for i, a := range args {
				cp[i] = append([]byte(nil), a...)
			}
			s.txn = append(s.txn, cp)
		}
		return
	}
	if s.aof != nil && !s.cfg.NoAppendLog {
		if len(cmds) == 1 {
			s.aof.Append(func(b []byte) []byte { return aof.EncodeRecord(b, cmds[0]) })
		} else {
			s.aof.Append(func(b []byte) []byte { return aof.EncodeTransaction(b, cmds) })
		}
	}
	s.feed(cmds, len(cmds) > 1)
}

// logCommand records a write a handler makes beside its own (a window's
// move) or that expiry makes (a DEL), unless the keyspace is loading:
// then the write is part of what is being applied (db.mu held).
func (s *Server) logCommand(_ *Session, args [][]byte) {
	if s.db.Loading() {
		return
	}
	s.record(args)
}

// beginTxn starts collecting the writes of a transaction (db.mu held).
func (s *Server) beginTxn() { s.txn = [][][]byte{} }

// endTxn logs the transaction's writes as one record and feeds them to
// replicas as MULTI/EXEC; it reports whether there were any.
func (s *Server) endTxn() bool {
	cmds := s.txn
	s.txn = nil
	if len(cmds) == 0 {
		return false
	}
	if s.aof != nil && !s.cfg.NoAppendLog {
		s.aof.Append(func(b []byte) []byte { return aof.EncodeTransaction(b, cmds) })
		if s.aof.Failed() {
			s.doubt.add(aof.EncodeTransaction(nil, cmds))
		}
	}
	s.feed(cmds, true)
	return true
}

// replayCommand applies one logged command during start-up. A command the
// log cannot hold, or one that fails, is an error: the database would
// differ from the acknowledged one.
func (s *Server) replayCommand(c *Session, args [][]byte, r *Reply) error {
	cmd, ok := lookupCommand(args[0])
	if !ok || cmd.fn == nil || !cmd.write && !cmd.layout {
		return errors.New("not a logged command")
	}
	r.Reset(false)
	s.db.Lock()
	s.apply(srcReplay, c, cmd, args, r)
	s.db.Unlock()
	if r.w.Failed() {
		return errors.New(strings.TrimSpace(strings.TrimPrefix(string(r.Bytes()), "-")))
	}
	return nil
}

// beforeWrite readies the keys a command names (db.mu held): background
// merges of them finish, a memory recount and a running snapshot see
// them before they change.
func (s *Server) beforeWrite(cmd *command, args [][]byte) {
	if s.db.Merging() {
		// A merge in the background took effect when it was logged:
		// whoever names its keys sees it done (internal/keyspace/merge.go).
		forKeys(cmd, args, s.db.FinishMergesNamed)
	}
	if cmd.write && s.db.Recounting() {
		forKeys(cmd, args, s.db.Touch)
	}
	if cmd.write && s.db.Snapshotting() {
		forKeys(cmd, args, func(k []byte) {
			if e := s.db.Lookup(string(k)); e != nil {
				s.db.Preserve(e)
			}
		})
	}
}
