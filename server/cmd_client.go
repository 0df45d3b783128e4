package server

// CLIENT and its subcommands.

import (
	"fmt"
	"strings"
	"time"
)

func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

func cmdClient(s *Server, c *Session, args [][]byte, r *Reply) {
	sub := strings.ToLower(string(args[1]))
	switch sub {
	case "setname":
		if len(args) != 3 {
			r.Error(wrongArity("client|setname"))
			return
		}
		if !validClientName(args[2]) {
			r.Error("ERR Client names cannot contain spaces, newlines or special characters.")
			return
		}
		c.Name = string(args[2])
		r.OK()
	case "getname":
		if c.Name == "" {
			r.Null()
		} else {
			r.BulkString(c.Name)
		}
	case "id":
		r.Int(c.ID)
	case "setinfo":
		if len(args) != 4 {
			r.Error(wrongArity("client|setinfo"))
			return
		}
		attr := strings.ToLower(string(args[2]))
		if attr != "lib-name" && attr != "lib-ver" {
			r.Error("ERR Unrecognized option '" + trimArg(args[2]) + "'")
			return
		}
		if !validClientName(args[3]) {
			r.Error("ERR " + attr + " cannot contain spaces, newlines or special characters.")
			return
		}
		if attr == "lib-name" {
			c.LibName = string(args[3])
		} else {
			c.LibVer = string(args[3])
		}
		r.OK()
	case "info":
		r.Verbatim(s.clientLine(c) + "\n")
	case "list":
		var b strings.Builder
		for _, sc := range s.sessionList() {
			b.WriteString(s.clientLine(sc))
			b.WriteByte('\n')
		}
		r.Verbatim(b.String())
	default:
		r.Error("ERR unknown subcommand '" + trimArg(args[1]) + "'. Try CLIENT HELP.")
	}
}

func (s *Server) clientLine(c *Session) string {
	resp := 2
	if c.resp3 {
		resp = 3
	}
	return fmt.Sprintf("id=%d addr=%s name=%s age=%d db=0 resp=%d lib-name=%s lib-ver=%s",
		c.ID, c.Addr, c.Name, int(time.Since(c.created).Seconds()), resp, c.LibName, c.LibVer)
}
