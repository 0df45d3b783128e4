package server

// Server administration: COMMAND, persistence commands, SHUTDOWN.

import (
	"sort"
	"strings"
)

func cmdCommand(s *Server, c *Session, args [][]byte, r *Reply) {
	names := make([]string, 0, len(commandTable))
	for n := range commandTable {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(args) == 1 {
		r.Array(len(names))
		for _, n := range names {
			commandInfo(commandTable[n], r)
		}
		return
	}
	switch strings.ToLower(string(args[1])) {
	case "count":
		r.Int(int64(len(commandTable)))
	case "list":
		r.Array(len(names))
		for _, n := range names {
			r.BulkString(n)
		}
	case "info":
		if len(args) == 2 {
			r.Array(len(names))
			for _, n := range names {
				commandInfo(commandTable[n], r)
			}
			return
		}
		r.Array(len(args) - 2)
		for _, a := range args[2:] {
			if cmd, ok := commandTable[strings.ToLower(string(a))]; ok {
				commandInfo(cmd, r)
			} else {
				r.NullArray()
			}
		}
	case "docs":
		want := names
		if len(args) > 2 {
			want = nil
			for _, a := range args[2:] {
				if _, ok := commandTable[strings.ToLower(string(a))]; ok {
					want = append(want, strings.ToLower(string(a)))
				}
			}
		}
		r.Map(len(want))
		for _, n := range want {
			cmd := commandTable[n]
			r.BulkString(n)
			group := "generic"
			switch {
			case strings.HasPrefix(n, "bf."):
				group = "bf"
			case strings.HasPrefix(n, "cf."):
				group = "cf"
			}
			r.Map(3)
			r.BulkString("summary")
			r.BulkString(strings.ToUpper(cmd.name) + " (bloomkit)")
			r.BulkString("since")
			r.BulkString("1.0.0")
			r.BulkString("group")
			r.BulkString(group)
		}
	default:
		r.Error("ERR unknown subcommand '" + trimArg(args[1]) + "'. Try COMMAND HELP.")
	}
}

func commandInfo(c *command, r *Reply) {
	r.Array(10)
	r.BulkString(c.name)
	r.Int(int64(c.arity))
	r.Set(len(c.flags))
	for _, f := range c.flags {
		r.Simple(f)
	}
	r.Int(int64(c.first))
	r.Int(int64(c.last))
	r.Int(int64(c.step))
	r.Set(0)
	r.Set(0)
	r.Array(0)
	r.Array(0)
}

func cmdSave(s *Server, c *Session, args [][]byte, r *Reply) {
	if s.persist.saving.Load() {
		r.Error("ERR Background save already in progress")
		return
	}
	if err := s.Save(); err != nil {
		r.Error("ERR " + err.Error())
		return
	}
	r.OK()
}

// BGSAVE [SCHEDULE]
func cmdBGSave(s *Server, c *Session, args [][]byte, r *Reply) {
	schedule := false
	if len(args) == 2 && strings.EqualFold(string(args[1]), "SCHEDULE") {
		schedule = true
	} else if len(args) > 1 {
		r.Error("ERR syntax error")
		return
	}
	if !s.startRewrite("BGSAVE") {
		if schedule {
			s.persist.scheduled.Store(true)
			r.Simple("Background saving scheduled")
			return
		}
		r.Error("ERR Background save already in progress")
		return
	}
	r.Simple("Background saving started")
}

// BGREWRITEAOF: the log is rewritten by writing a snapshot and starting a
// new log after it, so this is BGSAVE by another name.
func cmdBGRewriteAOF(s *Server, c *Session, args [][]byte, r *Reply) {
	if s.aof == nil {
		// Redis rewrites even with appendonly off; without a data
		// directory there is nothing to rewrite.
		r.Simple("Background append only file rewriting started")
		return
	}
	if !s.startRewrite("BGREWRITEAOF") {
		r.Error("ERR Background append only file rewriting already in progress")
		return
	}
	r.Simple("Background append only file rewriting started")
}

func cmdLastSave(s *Server, c *Session, args [][]byte, r *Reply) {
	r.Int(s.persist.lastSave.Load())
}

// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]: stop the server. By default (and
// with SAVE) a snapshot is written first; if that fails the server keeps
// running and answers an error, unless FORCE. NOSAVE skips the snapshot;
// the log is fsynced either way, so nothing acknowledged is lost.
func cmdShutdown(s *Server, c *Session, args [][]byte, r *Reply) {
	save, nosave, force := false, false, false
	for _, a := range args[1:] {
		switch strings.ToUpper(string(a)) {
		case "SAVE":
			save = true
		case "NOSAVE":
			nosave = true
		case "NOW":
		case "FORCE":
			force = true
		case "ABORT":
			r.Error("ERR No shutdown in progress.")
			return
		default:
			r.Error("ERR syntax error")
			return
		}
	}
	if save && nosave {
		r.Error("ERR syntax error")
		return
	}
	if !nosave && !s.cfg.NoPersistence {
		if err := s.Save(); err != nil && !force {
			s.log.Error("SHUTDOWN: the snapshot failed; not shutting down", "err", err)
			r.Error("ERR Errors trying to SHUTDOWN. Check logs.")
			return
		}
	}
	if s.aof != nil {
		if err := s.aof.Sync(); err != nil && !force {
			s.log.Error("SHUTDOWN: the append-only log could not be fsynced; not shutting down", "err", err)
			r.Error("ERR Errors trying to SHUTDOWN. Check logs.")
			return
		}
	}
	s.log.Info("SHUTDOWN requested; stopping", "client", c.Addr)
	c.quit = true
	s.shutdownOnce.Do(func() { close(s.shutdownReq) })
}
