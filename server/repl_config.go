package server

import (
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/internal/confval"
)

// Replication's CONFIG parameters, with the old names redis.conf and
// Sentinel still use (slave-*) as aliases. Each is declared once: how
// CONFIG GET reads it, how CONFIG SET changes it, and how a config file's
// line (or a flag of bloom serve) sets it in a Config, with one parser
// and one range for both.
func init() {
	type i64 = interface {
		Load() int64
		Store(int64)
	}
	add := func(st setting, aliases ...string) {
		settingList = append(settingList, st)
		for _, a := range aliases {
			st.name, st.alias = a, st.name
			settingList = append(settingList, st)
			st.name = st.alias
		}
	}
	yesNo := func(name, def string, live func(s *Server) *atomic.Bool, file func(c *Config) *string, aliases ...string) {
		parse := func(v string) (bool, error) {
			b, err := confval.ParseBool(v)
			if err != nil {
				return false, errConfigValue("argument must be 'yes' or 'no'")
			}
			return b, nil
		}
		add(setting{name: name, def: def,
			get: func(s *Server) string { return confval.FormatBool(live(s).Load()) },
			set: func(s *Server, v string) error {
				b, err := parse(v)
				if err == nil {
					live(s).Store(b)
				}
				return err
			},
			file: func(c *Config, v string) error {
				b, err := parse(v)
				if err == nil {
					*file(c) = confval.FormatBool(b)
				}
				return err
			}}, aliases...)
	}
	intParam := func(name, def string, lo, hi int64, live func(s *Server) i64, file func(c *Config, n int64), aliases ...string) {
		add(setting{name: name, def: def,
			get: func(s *Server) string { return itoa(live(s).Load()) },
			set: func(s *Server, v string) error {
				n, err := configInt(v, lo, hi)
				if err == nil {
					live(s).Store(n)
				}
				return err
			},
			file: func(c *Config, v string) error {
				n, err := configInt(v, lo, hi)
				if err == nil {
					file(c, n)
				}
				return err
			}}, aliases...)
	}
	text := func(name string, live func(s *Server) *atomic.Pointer[string], file func(c *Config) *string, secret bool, aliases ...string) {
		add(setting{name: name, secret: secret,
			get: func(s *Server) string { return *live(s).Load() },
			set: func(s *Server, v string) error { live(s).Store(&v); return nil },
			file: func(c *Config, v string) error {
				*file(c) = v
				return nil
			}}, aliases...)
	}
	yesNo("replica-read-only", "yes", func(s *Server) *atomic.Bool { return &s.repl.readOnly }, func(c *Config) *string { return &c.ReplicaReadOnly }, "slave-read-only")
	yesNo("replica-serve-stale-data", "yes", func(s *Server) *atomic.Bool { return &s.repl.serveStale }, func(c *Config) *string { return &c.ReplicaServeStaleData }, "slave-serve-stale-data")
	add(setting{name: "replica-ignore-unsupported", def: "no",
		get: func(s *Server) string { return confval.FormatBool(s.repl.ignoreUnsupported.Load()) },
		set: func(s *Server, v string) error {
			b, err := confval.ParseBool(v)
			if err != nil {
				return errConfigValue("argument must be 'yes' or 'no'")
			}
			s.repl.ignoreUnsupported.Store(b)
			// A sync it stopped is tried again now, not after the
			// pause (up to a minute): the operator's answer counts.
			if l := s.repl.following.Load(); l != nil && !l.up() {
				l.nudge()
			}
			return nil
		},
		file: func(c *Config, v string) error {
			b, err := confval.ParseBool(v)
			if err != nil {
				return errConfigValue("argument must be 'yes' or 'no'")
			}
			c.ReplicaIgnoreUnsupported = confval.FormatBool(b)
			return nil
		}})
	yesNo("replica-announced", "yes", func(s *Server) *atomic.Bool { return &s.repl.announced }, func(c *Config) *string { return &c.ReplicaAnnounced })
	intParam("min-replicas-to-write", "0", 0, 1<<31-1, func(s *Server) i64 { return &s.repl.minReplicas },
		func(c *Config, n int64) { c.MinReplicasToWrite = int(n) }, "min-slaves-to-write")
	intParam("min-replicas-max-lag", itoa(defaultMinLag), 0, 1<<31-1, func(s *Server) i64 { return &s.repl.minLag },
		func(c *Config, n int64) { x := int(n); c.MinReplicasMaxLag = &x }, "min-slaves-max-lag")
	intParam("replica-priority", itoa(defaultPriority), 0, 1<<31-1, func(s *Server) i64 { return &s.repl.priority },
		func(c *Config, n int64) { x := int(n); c.ReplicaPriority = &x }, "slave-priority")
	intParam("replica-announce-port", "0", 0, 65535, func(s *Server) i64 { return &s.repl.announcePort },
		func(c *Config, n int64) { c.ReplicaAnnouncePort = int(n) }, "slave-announce-port")
	intParam("repl-ping-replica-period", itoa(defaultPingPeriod), 1, 1<<31-1, func(s *Server) i64 { return &s.repl.pingPeriod },
		func(c *Config, n int64) { c.ReplPingReplicaPeriod = int(n) }, "repl-ping-slave-period")
	text("replica-announce-ip", func(s *Server) *atomic.Pointer[string] { return &s.repl.announceIP }, func(c *Config) *string { return &c.ReplicaAnnounceIP }, false, "slave-announce-ip")
	text("masterauth", func(s *Server) *atomic.Pointer[string] { return &s.repl.masterAuth }, func(c *Config) *string { return &c.MasterAuth }, true)
	text("masteruser", func(s *Server) *atomic.Pointer[string] { return &s.repl.masterUser }, func(c *Config) *string { return &c.MasterUser }, false)
	add(setting{name: "repl-timeout", def: itoa(defaultReplTimeout),
		get: func(s *Server) string { return itoa(s.repl.timeout.Load()) },
		set: func(s *Server, v string) error {
			d, err := parseSeconds(v, 1)
			if err == nil {
				s.repl.timeout.Store(int64(d / time.Second))
			}
			return err
		},
		file: func(c *Config, v string) error {
			d, err := parseSeconds(v, 1)
			if err == nil {
				c.ReplTimeout = d
			}
			return err
		}})
	backlogSize := func(v string) (int64, error) {
		n, err := confval.ParseSize(v)
		if err != nil || n < 16<<10 || n > 1<<40 {
			return 0, errConfigValue("argument must be a memory value from 16kb to 1tb")
		}
		return int64(n), nil
	}
	add(setting{name: "repl-backlog-size", def: itoa(defaultBacklogSize),
		get: func(s *Server) string { return itoa(s.repl.backlogSize.Load()) },
		set: func(s *Server, v string) error {
			n, err := backlogSize(v)
			if err != nil {
				return err
			}
			s.repl.backlogSize.Store(n)
			if b := s.repl.backlog.Load(); b != nil {
				b.SetKeep(n)
			}
			return nil
		},
		file: func(c *Config, v string) error {
			n, err := backlogSize(v)
			if err == nil {
				c.ReplBacklogSize = n
			}
			return err
		}})
}
