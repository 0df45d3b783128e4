package server

import (
	"time"

	"github.com/bloomkit/bloomkit/internal/confval"
)

// Replication's CONFIG parameters, with the old names redis.conf and
// Sentinel still use (slave-*) as aliases.
func init() {
	yesNo := func(get func(s *Server) bool, set func(s *Server, b bool)) (func(*Server) string, func(*Server, string) error) {
		return func(s *Server) string { return confval.FormatBool(get(s)) }, func(s *Server, v string) error {
			b, err := confval.ParseBool(v)
			if err != nil {
				return errConfigValue("argument must be 'yes' or 'no'")
			}
			set(s, b)
			return nil
		}
	}
	intSetting := func(p func(s *Server) interface {
		Load() int64
		Store(int64)
	}, lo, hi int64) (func(*Server) string, func(*Server, string) error) {
		return func(s *Server) string { return itoa(p(s).Load()) }, func(s *Server, v string) error {
			n, err := configInt(v, lo, hi)
			if err == nil {
				p(s).Store(n)
			}
			return err
		}
	}
	add := func(get func(*Server) string, set func(*Server, string) error, names ...string) {
		for i, n := range names {
			st := setting{name: n, get: get, set: set, secret: n == "masterauth"}
			if i > 0 {
				st.alias = names[0]
			}
			settingList = append(settingList, st)
		}
	}
	g, st := yesNo(func(s *Server) bool { return s.repl.readOnly.Load() }, func(s *Server, b bool) { s.repl.readOnly.Store(b) })
	add(g, st, "replica-read-only", "slave-read-only")
	g, st = yesNo(func(s *Server) bool { return s.repl.serveStale.Load() }, func(s *Server, b bool) { s.repl.serveStale.Store(b) })
	add(g, st, "replica-serve-stale-data", "slave-serve-stale-data")
	g, st = yesNo(func(s *Server) bool { return s.repl.announced.Load() }, func(s *Server, b bool) { s.repl.announced.Store(b) })
	add(g, st, "replica-announced")
	type i64 = interface {
		Load() int64
		Store(int64)
	}
	g, st = intSetting(func(s *Server) i64 { return &s.repl.minReplicas }, 0, 1<<31-1)
	add(g, st, "min-replicas-to-write", "min-slaves-to-write")
	g, st = intSetting(func(s *Server) i64 { return &s.repl.minLag }, 0, 1<<31-1)
	add(g, st, "min-replicas-max-lag", "min-slaves-max-lag")
	g, st = intSetting(func(s *Server) i64 { return &s.repl.priority }, 0, 1<<31-1)
	add(g, st, "replica-priority", "slave-priority")
	g, st = intSetting(func(s *Server) i64 { return &s.repl.announcePort }, 0, 65535)
	add(g, st, "replica-announce-port", "slave-announce-port")
	add(func(s *Server) string { return itoa(s.repl.timeout.Load()) }, func(s *Server, v string) error {
		d, err := parseSeconds(v, 1)
		if err == nil {
			s.repl.timeout.Store(int64(d / time.Second))
		}
		return err
	}, "repl-timeout")
	g, st = intSetting(func(s *Server) i64 { return &s.repl.pingPeriod }, 1, 1<<31-1)
	add(g, st, "repl-ping-replica-period", "repl-ping-slave-period")
	add(func(s *Server) string { return *s.repl.announceIP.Load() }, func(s *Server, v string) error {
		s.repl.announceIP.Store(&v)
		return nil
	}, "replica-announce-ip", "slave-announce-ip")
	add(func(s *Server) string { return *s.repl.masterAuth.Load() }, func(s *Server, v string) error {
		s.repl.masterAuth.Store(&v)
		return nil
	}, "masterauth")
	add(func(s *Server) string { return *s.repl.masterUser.Load() }, func(s *Server, v string) error {
		s.repl.masterUser.Store(&v)
		return nil
	}, "masteruser")
	add(func(s *Server) string { return itoa(s.repl.backlogSize.Load()) }, func(s *Server, v string) error {
		n, err := confval.ParseSize(v)
		if err != nil || n < 16<<10 || n > 1<<40 {
			return errConfigValue("argument must be a memory value from 16kb to 1tb")
		}
		s.repl.backlogSize.Store(int64(n))
		if b := s.repl.backlog.Load(); b != nil {
			b.SetKeep(int64(n))
		}
		return nil
	}, "repl-backlog-size")
}
