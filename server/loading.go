package server

// Loading while serving, as redis-server does: with
// Config.LoadWhileServing, New only checks and locks the data directory,
// and Serve accepts clients at once while a goroutine loads the snapshot
// and replays the logs. Until it is done a command Redis refuses while
// loading (one without its "loading" flag) is answered
// -LOADING, INFO persistence reports loading:1 with the bytes read so far,
// /livez answers 200 and /readyz 503 "loading". A replica's full sync is
// Redis's asynchronous load (repl-diskless-load swapdb): the old data
// serves until the master's is complete, INFO says async_loading:1, and
// the commands Redis refuses then (SAVE, BGSAVE, REPLICAOF, SYNC…) are
// answered -LOADING.
//
// Nothing reads the keyspace while the loader writes it: the loader takes
// the keyspace lock for each step (the snapshot is read into a keyspace
// of its own and swapped in; each logged record is applied on its own), and
// what it publishes last — the append-only log, the next generation — is
// published under the keyspace lock before the loading state is cleared.
// Code that reads s.aof without the keyspace lock goes through appendLog.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/aof"
)

// errLoading is the reply to a command refused while the data is loaded.
const errLoading = "LOADING Redis is loading the dataset in memory"

// The loading states (loadState.phase).
const (
	notLoading   int32 = iota
	loadingData        // start-up: loading:1
	loadingAsync       // a replica's full sync: async_loading:1
)

// loadState is what INFO persistence reports of a load in progress.
type loadState struct {
	phase  atomic.Int32
	start  atomic.Int64 // unix seconds the load started
	total  atomic.Int64 // bytes of the snapshot and logs to read
	loaded atomic.Int64 // bytes read so far
	// done is closed when a start-up load ends successfully (Loaded).
	done chan struct{}
	// err carries a start-up load's failure to Serve.
	err chan error
}

// errLoadStopped ends a start-up load that Close or Shutdown interrupted.
var errLoadStopped = errors.New("server: loading stopped: the server is shutting down")

// loadingNow reports whether the start-up load is in progress.
func (s *Server) loadingNow() bool { return s.loading.phase.Load() == loadingData }

// appendLog is the append-only log for code that runs without the
// keyspace lock: nil while the start-up load runs (the loader publishes
// the log under the keyspace lock, then clears the loading state) and
// without persistence.
func (s *Server) appendLog() *aof.Log {
	if s.loadingNow() {
		return nil
	}
	return s.aof
}

// Loaded is closed once the data is loaded and the server serves it: at
// once for a server New loaded; with LoadWhileServing, when Serve's load
// succeeds (never, if it fails or the server is closed first).
func (s *Server) Loaded() <-chan struct{} { return s.loading.done }

// loadingAllowed reports whether cmd runs while the data is loaded:
// Redis 7's "loading" flag (INFO, AUTH, HELLO, CONFIG, CLIENT, SHUTDOWN,
// MULTI/EXEC…; not PING), which every HELP subcommand has.
func loadingAllowed(cmd *command, args [][]byte) bool {
	if cmd.loading {
		return true
	}
	return cmd.hasSubcommands && len(args) == 2 && strings.EqualFold(string(args[1]), "help")
}

// asyncRefused reports whether cmd is refused while a replica loads its
// master's data: Redis 7's "no_async_loading" flag (SAVE, BGSAVE,
// REPLICAOF, SYNC, PSYNC, MODULE LOAD and UNLOAD).
func asyncRefused(cmd *command, args [][]byte) bool {
	if !cmd.noAsyncLoading {
		return false
	}
	if cmd.name == "module" {
		sub := ""
		if len(args) > 1 {
			sub = strings.ToLower(string(args[1]))
		}
		return sub == "load" || sub == "loadex" || sub == "unload"
	}
	return true
}

// loadingRefusal is the error a command gets in the current loading
// state, or "". EXEC is refused when its queue holds a command that
// would be.
func (s *Server) loadingRefusal(c *Session, cmd *command, args [][]byte) string {
	switch s.loading.phase.Load() {
	case loadingData:
		if !loadingAllowed(cmd, args) {
			return errLoading
		}
		if cmd.name == "exec" && c.multi != nil {
			for _, q := range c.multi[1:] {
				if !loadingAllowed(q.cmd, q.args) {
					return "EXECABORT Transaction discarded because of: " + errLoading
				}
			}
		}
	case loadingAsync:
		if asyncRefused(cmd, args) {
			return errLoading
		}
		if cmd.name == "exec" && c.multi != nil {
			for _, q := range c.multi[1:] {
				if asyncRefused(q.cmd, q.args) {
					return "EXECABORT Transaction discarded because of: " + errLoading
				}
			}
		}
	}
	return ""
}

// beginLoading enters a loading state (phase) with total bytes to read.
func (s *Server) beginLoading(phase int32, total int64) {
	l := &s.loading
	l.start.Store(time.Now().Unix())
	l.total.Store(total)
	l.loaded.Store(0)
	l.phase.Store(phase)
}

// loadingInfo is INFO persistence's loading fields: loading and
// async_loading, and while loading the progress, computed as Redis does
// (loading_rdb_used_mem is 0: a snapshot records no memory figure).
func (s *Server) loadingInfo() (flags []string, progress []string) {
	l := &s.loading
	phase := l.phase.Load()
	flags = []string{"loading:0", "async_loading:0"}
	switch phase {
	case loadingData:
		flags[0] = "loading:1"
	case loadingAsync:
		flags[1] = "async_loading:1"
		return flags, nil
	default:
		return flags, nil
	}
	start, total, loaded := l.start.Load(), l.total.Load(), l.loaded.Load()
	perc := 0.0
	remaining := int64(1)
	if total > 0 {
		perc = float64(loaded) / float64(total) * 100
		remaining = total - loaded
	}
	elapsed := time.Now().Unix() - start
	eta := int64(1) // Redis's figure before a second has passed
	if elapsed > 0 {
		eta = elapsed * remaining / (loaded + 1)
	}
	progress = []string{
		"loading_start_time:" + itoa(start),
		"loading_total_bytes:" + itoa(total),
		"loading_rdb_used_mem:0",
		"loading_loaded_bytes:" + itoa(loaded),
		"loading_loaded_perc:" + strconv.FormatFloat(perc, 'f', 2, 64),
		"loading_eta_seconds:" + itoa(eta),
	}
	return flags, progress
}

// progressFile counts the bytes read from a file being loaded, and stops
// the read when the server is closing.
type progressFile struct {
	aof.ReadFile
	n    *atomic.Int64
	stop <-chan struct{}
}

func (p *progressFile) Read(b []byte) (int, error) {
	select {
	case <-p.stop:
		return 0, errLoadStopped
	default:
	}
	n, err := p.ReadFile.Read(b)
	p.n.Add(int64(n))
	return n, err
}

// loadInBackground is Serve's start-up load (LoadWhileServing). On
// success it starts what waits for the data (background work,
// replication); a failure ends Serve with the error New would have
// returned; Close or Shutdown stop it between two steps, leaving the data
// directory as it found it.
func (s *Server) loadInBackground() {
	defer s.bgWG.Done()
	err := s.loadData(s.stop)
	if err != nil {
		s.loading.phase.Store(notLoading)
		if errors.Is(err, errLoadStopped) {
			s.log.Warn("shutting down while loading: nothing was saved, the data directory is as it was")
			return
		}
		s.loading.err <- err
		return
	}
	s.log.Info("DB loaded from disk", "seconds", fmt.Sprintf("%.3f", time.Since(time.Unix(s.loading.start.Load(), 0)).Seconds()), "keys", s.keyCount())
	s.afterLoad()
	close(s.loading.done)
}

// keyCount is the number of keys (the keyspace lock taken).
func (s *Server) keyCount() int {
	s.db.Lock()
	defer s.db.Unlock()
	return s.db.Len()
}

// afterLoad starts what runs once the data is loaded: the background work
// (expiry, fsync, save points) and the link to a master.
func (s *Server) afterLoad() {
	s.lifeMu.Lock()
	if s.closed.Load() {
		s.lifeMu.Unlock()
		return
	}
	s.bgWG.Add(1)
	s.lifeMu.Unlock()
	go s.background()
	s.startReplication()
}
