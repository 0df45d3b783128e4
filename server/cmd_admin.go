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
			r.BulkString(n)
			commandDocsReply(commandTable[n], r)
		}
	default:
		r.Error("ERR unknown subcommand '" + trimArg(args[1]) + "'. Try COMMAND HELP.")
	}
}

// commandInfo is one command's COMMAND INFO entry, as Redis 7 gives it:
// name, arity, flags, first key, last key, step, ACL categories, tips, key
// specifications, subcommands.
func commandInfo(c *command, r *Reply) {
	d := commandDocs[c.name]
	r.Array(10)
	r.BulkString(c.name)
	arity := c.arity
	if d.arity != 0 {
		arity = d.arity
	}
	r.Int(int64(arity))
	r.Set(len(c.flags))
	for _, f := range c.flags {
		r.Simple(f)
	}
	r.Int(int64(c.first))
	r.Int(int64(c.last))
	r.Int(int64(c.step))
	cats := c.categories()
	r.Set(len(cats))
	for _, cat := range cats {
		r.Simple("@" + cat)
	}
	r.Set(len(d.tips))
	for _, t := range d.tips {
		r.BulkString(t)
	}
	keySpecReply(c, d, r)
	r.Set(0) // no subcommands: Redis answers an empty set
}

// keySpecReply writes the command's key specifications: one range from
// its first key, with the access its documentation gives (else read-only
// access for a read, update for a write; a module command registered
// without one has Redis's full access).
func keySpecReply(c *command, d cmdDoc, r *Reply) {
	if c.first == 0 {
		r.Set(0)
		return
	}
	flags := []string{"RW", "update"}
	switch {
	case d.keyFlag != "":
		flags = strings.Fields(d.keyFlag)
	case isFilterCommand(c.name):
		flags = []string{"RW", "access", "update", "insert", "delete"}
	case !c.write:
		flags = []string{"RO", "access"}
	}
	last := c.last
	if last >= 0 {
		last -= c.first
	}
	r.Set(1)
	if d.keyNotes != "" {
		r.Map(4)
		r.BulkString("notes")
		r.BulkString(d.keyNotes)
	} else {
		r.Map(3)
	}
	r.BulkString("flags")
	r.Set(len(flags))
	for _, f := range flags {
		r.Simple(f)
	}
	r.BulkString("begin_search")
	r.Map(2)
	r.BulkString("type")
	r.BulkString("index")
	r.BulkString("spec")
	r.Map(1)
	r.BulkString("index")
	r.Int(int64(c.first))
	r.BulkString("find_keys")
	r.Map(2)
	r.BulkString("type")
	r.BulkString("range")
	r.BulkString("spec")
	r.Map(3)
	r.BulkString("lastkey")
	r.Int(int64(last))
	r.BulkString("keystep")
	r.Int(int64(c.step))
	r.BulkString("limit")
	r.Int(0)
}

// commandDocsReply is one command's COMMAND DOCS map, with Redis's keys in
// Redis's order: summary, since, group, complexity, module, arguments.
func commandDocsReply(c *command, r *Reply) {
	d := commandDocs[c.name]
	group := d.group
	if group == "" {
		group = "generic"
	}
	n := 1
	for _, v := range []string{d.summary, d.since, d.complexity} {
		if v != "" {
			n++
		}
	}
	if group == "module" {
		n++
	}
	if len(d.args) > 0 {
		n++
	}
	r.Map(n)
	if d.summary != "" {
		r.BulkString("summary")
		r.BulkString(d.summary)
	}
	if d.since != "" {
		r.BulkString("since")
		r.BulkString(d.since)
	}
	r.BulkString("group")
	r.BulkString(group)
	if d.complexity != "" {
		r.BulkString("complexity")
		r.BulkString(d.complexity)
	}
	if group == "module" {
		r.BulkString("module")
		r.BulkString("bf")
	}
	if len(d.args) > 0 {
		r.BulkString("arguments")
		argsReply(d.args, r)
	}
}

// argsReply writes COMMAND DOCS' argument list: name, type, display_text
// (not for a oneof or block), key_spec_index, token, flags, and the
// sub-arguments of a oneof or block.
func argsReply(args []cmdArg, r *Reply) {
	r.Array(len(args))
	for _, a := range args {
		container := a.typ == "oneof" || a.typ == "block"
		var flags []string
		if a.optional {
			flags = append(flags, "optional")
		}
		if a.multiple {
			flags = append(flags, "multiple")
		}
		n := 2
		if !container {
			n++
		}
		if a.keySpec >= 0 {
			n++
		}
		if a.token != "" {
			n++
		}
		if len(flags) > 0 {
			n++
		}
		if container {
			n++
		}
		r.Map(n)
		r.BulkString("name")
		r.BulkString(a.name)
		r.BulkString("type")
		r.BulkString(a.typ)
		if !container {
			r.BulkString("display_text")
			r.BulkString(a.name)
		}
		if a.keySpec >= 0 {
			r.BulkString("key_spec_index")
			r.Int(int64(a.keySpec))
		}
		if a.token != "" {
			r.BulkString("token")
			r.BulkString(a.token)
		}
		if len(flags) > 0 {
			r.BulkString("flags")
			r.Set(len(flags))
			for _, f := range flags {
				r.Simple(f)
			}
		}
		if container {
			r.BulkString("arguments")
			argsReply(a.sub, r)
		}
	}
}

func cmdSave(s *Server, c *Session, args [][]byte, r *Reply) {
	if s.persist.saving.Load() {
		r.Error("ERR Background save already in progress")
		return
	}
	if err := s.saveInForeground(); err != nil {
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
	if schedule {
		if !s.scheduleRewrite("BGSAVE") {
			r.Simple("Background saving scheduled")
			return
		}
	} else if !s.startRewrite("BGSAVE") {
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
	if s.loadingNow() {
		// As Redis: a server that is loading never saves (the keyspace
		// is partial; the files on disk are the data).
		nosave = true
	}
	if !nosave && !s.cfg.NoPersistence {
		if err := s.saveInForeground(); err != nil && !force {
			s.log.Error("SHUTDOWN: the snapshot failed; not shutting down", "err", err)
			r.Error("ERR Errors trying to SHUTDOWN. Check logs.")
			return
		}
	}
	if lg := s.appendLog(); lg != nil {
		if err := lg.Sync(); err != nil && !force {
			s.log.Error("SHUTDOWN: the append-only log could not be fsynced; not shutting down", "err", err)
			r.Error("ERR Errors trying to SHUTDOWN. Check logs.")
			return
		}
	}
	s.log.Info("SHUTDOWN requested; stopping", "client", c.Addr)
	c.quit = true
	s.shutdownOnce.Do(func() { close(s.shutdownReq) })
}
