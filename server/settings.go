package server

import (
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/aof"
)

// settings are the values CONFIG SET changes while the server runs. The
// rest of Config is fixed after New. Each is read without a lock by the
// paths that need it (the reply path reads appendfsync, accept reads
// maxclients, the event loops read timeout).
type settings struct {
	fsync       atomic.Int32 // an aof.Policy: the log's, and CONFIG GET's without a log
	requirePass atomic.Pointer[string]
	timeout     atomic.Int64 // nanoseconds; 0: never
	maxClients  atomic.Int64
	slowerThan  atomic.Int64 // microseconds; negative: slow log off
	slowMaxLen  atomic.Int64
	maxMemory   atomic.Uint64 // as configured (0: 90% of RAM); db.limit is in force
}

func (st *settings) init(cfg *Config) {
	policy, _ := aof.ParsePolicy(cfg.AppendFsync)
	st.fsync.Store(int32(policy))
	p := cfg.RequirePass
	st.requirePass.Store(&p)
	st.timeout.Store(int64(cfg.Timeout))
	st.maxClients.Store(int64(cfg.MaxClients))
	st.slowerThan.Store(defaultSlowlogSlowerThan)
	if cfg.SlowlogLogSlowerThan != nil {
		st.slowerThan.Store(*cfg.SlowlogLogSlowerThan)
	}
	st.slowMaxLen.Store(defaultSlowlogMaxLen)
	if cfg.SlowlogMaxLen != nil {
		st.slowMaxLen.Store(max(*cfg.SlowlogMaxLen, 0))
	}
	st.maxMemory.Store(cfg.MaxMemory)
}

// appendFsync is the appendfsync policy in force.
func (s *Server) appendFsync() string { return aof.Policy(s.set.fsync.Load()).String() }

// requirePass is the password in force ("" for none).
func (s *Server) requirePass() string { return *s.set.requirePass.Load() }

// idleTimeout is the idle-client timeout in force (0: never).
func (s *Server) idleTimeout() time.Duration { return time.Duration(s.set.timeout.Load()) }

// maxClients is the connection limit in force.
func (s *Server) maxClients() int64 { return s.set.maxClients.Load() }
