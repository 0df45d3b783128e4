package server

// CONFIG GET/SET/REWRITE/RESETSTAT.

import (
	"strconv"
	"strings"
)

// CONFIG GET pattern... answers the settings tools such as redis-benchmark
// read; CONFIG SET and others are refused (settings come from flags).
func cmdConfig(s *Server, c *Session, args [][]byte, r *Reply) {
	sub := strings.ToLower(string(args[1]))
	if sub == "resetstat" {
		r.OK()
		return
	}
	if sub != "get" {
		r.Error("ERR CONFIG " + strings.ToUpper(sub) + " is not supported by bloomkit; use command-line flags")
		return
	}
	if len(args) < 3 {
		r.Error(wrongArity("config|get"))
		return
	}
	appendonly := "yes"
	if s.cfg.NoPersistence {
		appendonly = "no"
	}
	vals := [][2]string{
		{"appendfsync", s.cfg.AppendFsync},
		{"appendonly", appendonly},
		{"bind", s.Addr()},
		{"databases", "1"},
		{"dir", s.cfg.Dir},
		{"maxmemory", strconv.FormatUint(s.db.limit, 10)},
		{"maxmemory-policy", "noeviction"},
		{"port", func() string { _, p := splitHostPort(s.Addr()); return p }()},
		{"save", ""},
	}
	var out [][2]string
	for _, v := range vals {
		for _, p := range args[2:] {
			if globMatch(strings.ToLower(string(p)), v[0]) {
				out = append(out, v)
				break
			}
		}
	}
	r.Map(len(out))
	for _, v := range out {
		r.BulkString(v[0])
		r.BulkString(v[1])
	}
}
