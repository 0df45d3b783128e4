package server

import (
	"strings"

	"github.com/bloomkit/bloomkit/server/internal/acl"
)

// WATCH: optimistic locking for MULTI/EXEC, as Redis 7 does it. A client
// watches keys; a change to one of them (by any client, itself included,
// by a master's stream, by FLUSHALL or a keyspace replaced by a full sync
// or DEBUG RELOAD), or its expiry, before EXEC makes that EXEC answer a
// null array and run nothing. EXEC, DISCARD, UNWATCH, RESET and the end
// of the connection forget the watched keys.
//
// Every structure here is guarded by the keyspace lock (db.mu): changes
// are signalled from apply, which runs with it held, so a watched key
// cannot change between EXEC's check and its queue running.

// watchState is the server's side: for each watched key, the sessions
// watching it.
type watchState struct {
	keys map[string]map[*Session]struct{}
}

// sessionWatch is a session's side: the keys it watches, each with
// whether the key was there (and not expired) when it was watched, and
// whether one of them changed since (Redis's CLIENT_DIRTY_CAS).
type sessionWatch struct {
	keys  map[string]bool
	dirty bool
}

// watch adds keys to c's watched keys (db.mu held).
func (s *Server) watch(c *Session, keys [][]byte) {
	if s.watching.keys == nil {
		s.watching.keys = map[string]map[*Session]struct{}{}
	}
	if c.watch.keys == nil {
		c.watch.keys = map[string]bool{}
	}
	for _, k := range keys {
		key := string(k)
		if _, ok := c.watch.keys[key]; ok {
			continue
		}
		c.watch.keys[key] = s.db.Peek(key) != nil
		set := s.watching.keys[key]
		if set == nil {
			set = map[*Session]struct{}{}
			s.watching.keys[key] = set
		}
		set[c] = struct{}{}
	}
}

// unwatch forgets every key c watches (db.mu held).
func (s *Server) unwatch(c *Session) {
	for key := range c.watch.keys {
		if set := s.watching.keys[key]; set != nil {
			delete(set, c)
			if len(set) == 0 {
				delete(s.watching.keys, key)
			}
		}
	}
	c.watch = sessionWatch{}
}

// unwatchLocked is unwatch for a caller without the keyspace lock.
func (s *Server) unwatchLocked(c *Session) {
	unlock := s.lockDB(c)
	s.unwatch(c)
	unlock()
}

// watchFailed reports whether EXEC must not run c's queue (db.mu held): a
// watched key changed, or was there when watched and has expired or gone
// since (Redis 7 fails EXEC on a watched key that expired meanwhile).
func (s *Server) watchFailed(c *Session) bool {
	if c.watch.dirty {
		return true
	}
	for key, existed := range c.watch.keys {
		if existed && s.db.Peek(key) == nil {
			return true
		}
	}
	return false
}

// touchWatched marks every session watching key as changed (db.mu held).
func (s *Server) touchWatched(key []byte) {
	for c := range s.watching.keys[string(key)] {
		c.watch.dirty = true
	}
}

// touchAllWatched marks the sessions watching a key that is in the
// keyspace, expired or not, as changed: the keyspace is about to be
// emptied or replaced (db.mu held).
func (s *Server) touchAllWatched() {
	for key, set := range s.watching.keys {
		if s.db.Lookup(key) == nil {
			continue
		}
		for c := range set {
			c.watch.dirty = true
		}
	}
}

// signalFlush is apply's signal before a write command runs (db.mu
// held): FLUSHALL and FLUSHDB, which empty the keyspace, change every
// watched key that is there.
func (s *Server) signalFlush(cmd *command) {
	if len(s.watching.keys) > 0 && (cmd.name == "flushall" || cmd.name == "flushdb") {
		s.touchAllWatched()
	}
}

// signalWrites is apply's signal after a write command ran (db.mu held):
// the keys it writes (commandKeys) changed. Redis's own commands signal a
// change only (changed: the command was logged). A RedisBloom command
// signals its key as Redis signals a module's key opened for writing,
// when the key is closed, whether or not the value changed — so also
// when it answers an error after opening the key (moduleErrorAfterOpen).
func (s *Server) signalWrites(cmd *command, args [][]byte, r *Reply, changed bool) {
	if len(s.watching.keys) == 0 {
		return
	}
	module := strings.Contains(cmd.name, ".")
	switch {
	case !r.w.Failed():
		if !changed && !module {
			return
		}
	case !module || !moduleErrorAfterOpen(cmd.name, string(r.w.Bytes())):
		return
	}
	commandKeys(cmd, args, func(i int, need acl.Perm) {
		if need&acl.Write != 0 {
			s.touchWatched(args[i])
		}
	})
}

// bloomErrorsAfterOpen are the errors of RedisBloom's BF.* and CF.*
// commands that come after the key was opened for writing (lower case):
// their other errors, an argument that does not parse, come before it.
var bloomErrorsAfterOpen = []string{"wrongtype", "not found", "item exists", "invalid position",
	"invalid header", "is full", "maximum expansions", "cannot expand", "problem inserting",
	"bad data", "invalid offset", "invalid chunk", "load chunk"}

// moduleErrorAfterOpen reports whether RedisBloom answers the error msg
// (a RESP error) to the write command name after opening its key, and so
// signals the key: never for a wrong number of arguments or a
// TDIGEST.MERGE's arguments; always for the other Count-Min Sketch, Top-K
// and t-digest errors (those commands open the key first); for BF.* and
// CF.*, the errors of bloomErrorsAfterOpen.
func moduleErrorAfterOpen(name, msg string) bool {
	msg = strings.ToLower(msg)
	switch {
	case strings.Contains(msg, "wrong number of arguments"), name == "tdigest.merge":
		return false
	case strings.HasPrefix(name, "bf.") || strings.HasPrefix(name, "cf."):
		for _, e := range bloomErrorsAfterOpen {
			if strings.Contains(msg, e) {
				return true
			}
		}
		return false
	}
	return true
}
