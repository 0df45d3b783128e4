package server

import (
	"net"
	"strings"
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
	protected   atomic.Bool   // protected-mode yes
	filter      atomic.Pointer[filterConfig]
	// aclLogMaxLen is acllog-max-len.
	aclLogMaxLen atomic.Int64
	// savePoints are the save points in force (CONFIG SET save).
	savePoints atomic.Pointer[[][2]int64]
	// limit mirrors the memory limit in force (db.Limit) for CONFIG GET,
	// which may run inside EXEC, where the keyspace lock is held.
	limit atomic.Uint64
	// outLimits is client-output-buffer-limit, by class (nil: Redis's
	// defaults).
	outLimits atomic.Pointer[[3]outputLimit]
}

func (st *settings) init(cfg *Config, filter *filterConfig) {
	st.filter.Store(filter)
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
	points := defaultSavePoints
	if cfg.SavePoints != nil {
		points = *cfg.SavePoints
	}
	st.savePoints.Store(&points)
	st.aclLogMaxLen.Store(128)
	if cfg.ACLLogMaxLen != nil {
		st.aclLogMaxLen.Store(max(*cfg.ACLLogMaxLen, 0))
	}
	st.protected.Store(!strings.EqualFold(cfg.ProtectedMode, "no"))
	if cfg.ClientOutputBufferLimit != "" {
		if l, err := parseOutputLimits(cfg.ClientOutputBufferLimit, defaultOutputLimits); err == nil {
			st.outLimits.Store(&l)
		}
	}
}

// appendFsync is the appendfsync policy in force.
func (s *Server) appendFsync() string { return aof.Policy(s.set.fsync.Load()).String() }

// requirePass is the password in force ("" for none).
func (s *Server) requirePass() string { return *s.set.requirePass.Load() }

// idleTimeout is the idle-client timeout in force (0: never).
func (s *Server) idleTimeout() time.Duration { return time.Duration(s.set.timeout.Load()) }

// maxClients is the connection limit in force.
func (s *Server) maxClients() int64 { return s.set.maxClients.Load() }

// deniedProtected is Redis's reply to a client refused by protected mode.
const deniedProtected = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n"

// protectedRefuses reports whether protected mode refuses a client from
// remote: protected mode on, no password, and a peer that is not on the
// loopback interface (as Redis: only clients on the machine's loopback
// may reach a server nobody secured).
func (s *Server) protectedRefuses(remote net.Addr) bool {
	if !s.set.protected.Load() || s.authRequired() {
		return false
	}
	if _, unix := remote.(*net.UnixAddr); unix {
		return false // a Unix socket is on this machine
	}
	ta, ok := remote.(*net.TCPAddr)
	return !ok || !ta.IP.IsLoopback()
}
