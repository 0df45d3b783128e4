package server

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/aof"
	"github.com/bloomkit/bloomkit/server/internal/keyspace"
)

// Persistence is the durability engine's (internal/aof: the files, the
// log, the policy); what is here is the glue: which snapshot and logs
// start-up loads and how they are replayed through the command table,
// the point in time of a rewrite, and INFO's Persistence section.

// SnapshotName is the file name of generation gen's snapshot.
func SnapshotName(gen uint64) string { return aof.SnapshotName(gen) }

// LogName is the file name of generation gen's append-only log.
func LogName(gen uint64) string { return aof.LogName(gen) }

// ErrCorrupt marks a snapshot or log that failed its checksum or structure checks.
var ErrCorrupt = aof.ErrCorrupt

// LogCheck is the result of CheckLog.
type LogCheck = aof.LogCheck

// CheckLog reads the append-only log at path and reports its good records
// and the first damage, as redis-check-aof does. With fix it truncates the
// file at the first bad record (losing everything from there on) and
// fsyncs it, holding the data directory's lock (LockDir): with a server
// running there it fails with ErrDirLocked and changes nothing.
func CheckLog(path string, fix bool) (LogCheck, error) { return aof.CheckLog(path, fix) }

// persistState is the snapshot bookkeeping INFO and /healthz report.
type persistState struct {
	saveMu  sync.Mutex // one rewrite at a time; nextGen
	nextGen uint64
	gen     atomic.Uint64 // newest durable snapshot's generation (0: none)
	// saving is set while a background rewrite runs and scheduled when
	// BGSAVE SCHEDULE asked for another after it; both change only under
	// bgMu (they are read without it).
	bgMu      sync.Mutex
	saving    atomic.Bool
	scheduled atomic.Bool
	current   atomic.Pointer[keyspace.Snapshot]
	started   atomic.Int64 // unix seconds the running rewrite started

	lastSave     atomic.Int64 // unix seconds of the last successful save
	lastOK       atomic.Bool
	lastDuration atomic.Int64 // seconds the last rewrite took
	saves        atomic.Int64
	failures     atomic.Int64 // consecutive failed rewrites
	lastCOW      atomic.Int64
	lastSnapSize atomic.Int64
	dirtyAtSave  atomic.Uint64
	loadedKeys   atomic.Int64
}

// load reads the newest snapshot and replays the logs after it (New
// calls it; with LoadWhileServing New calls openDataDir and Serve
// loadData).
func (s *Server) load() error {
	if err := s.openDataDir(); err != nil {
		return err
	}
	return s.loadData(nil)
}

// openDataDir locks the data directory and makes it s.dir.
func (s *Server) openDataDir() error {
	d := s.cfg.dataDir
	if d == nil {
		// One server per directory, for the process's life: a second one
		// would replay this one's log and then remove it under its feet.
		lock, err := LockDir(s.cfg.Dir)
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		s.dirLock = lock
		od, err := aof.NewOSDir(s.cfg.Dir)
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		d = od
	}
	s.dir = d
	return nil
}

// loadData loads the newest snapshot of s.dir and replays the logs after
// it, then opens the log to append to. It holds saveMu throughout (no
// snapshot of a partial keyspace can be taken) and the keyspace lock only
// for each step: the snapshot is read into a keyspace of its own and
// swapped in, each logged record is applied on its own, and the log is
// published last, under the keyspace lock, before the loading state is
// cleared (see loading.go). A closed stop ends it with errLoadStopped
// between two steps.
func (s *Server) loadData(stop <-chan struct{}) (err error) {
	p := &s.persist
	p.saveMu.Lock()
	defer p.saveMu.Unlock()
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	d := s.dir
	chain, err := aof.OpenChain(d, s.log)
	if err != nil {
		return err
	}
	if chain.Snapshot == 0 && len(chain.Logs) == 0 && s.cfg.dataDir == nil {
		// Nothing to load: a restored snapshot under another name would
		// be ignored, and the server would start empty.
		if err := misnamedSnapshot(s.cfg.Dir); err != nil {
			return err
		}
	}
	var snap aof.ReadFile
	total := chain.LogBytes()
	if snapGen := chain.Snapshot; snapGen > 0 {
		if snap, err = d.Open(SnapshotName(snapGen)); err != nil {
			return fmt.Errorf("server: open snapshot: %w", err)
		}
		defer snap.Close()
		total += snap.Size()
	}
	s.loading.total.Store(total)
	progress := &s.loading.loaded

	// Exact replay: no limit that can change between runs applies.
	s.db.Lock()
	s.db.BeginLoad()
	s.db.Unlock()
	defer func() {
		if err != nil {
			s.db.Lock()
			s.db.EndLoad()
			s.db.Unlock()
		}
	}()
	if snapGen := chain.Snapshot; snapGen > 0 {
		fresh := keyspace.New(0, s.cfg.Now)
		gen, n, err := fresh.ReadSnapshot(&progressFile{ReadFile: snap, n: progress, stop: stop}, d.Path(SnapshotName(snapGen)))
		if err != nil {
			if stopped() {
				return errLoadStopped
			}
			return fmt.Errorf("server: %w", err)
		}
		if gen != snapGen {
			return fmt.Errorf("server: snapshot %s says it is generation %d (a restored backup must be named %s): %w", d.Path(SnapshotName(snapGen)), gen, SnapshotName(gen), ErrCorrupt)
		}
		fresh.PrepareFor(s.db)
		s.db.Lock()
		s.db.TakeOver(fresh)
		s.db.Unlock()
		p.loadedKeys.Store(int64(n))
		s.log.Info("snapshot loaded", "file", d.Path(SnapshotName(snapGen)), "keys", n)
	}
	sess := &Session{authed: true}
	var reply Reply
	// Progress: the snapshot's bytes, the logs before this one, the
	// offset in this one.
	logStart := map[string]int64{}
	at := progress.Load()
	for i, g := range chain.Logs {
		logStart[d.Path(LogName(g))] = at
		at += chain.LogSize(i)
	}
	curName, curStart := "", int64(0)
	replayed, err := chain.Replay(func(name string, off int64, cmds [][][]byte) error {
		if stopped() {
			return errLoadStopped
		}
		if name != curName {
			curName, curStart = name, logStart[name]
		}
		progress.Store(curStart + off)
		for _, args := range cmds {
			if err := s.replayCommand(sess, args, &reply); err != nil {
				return fmt.Errorf("server: replaying %s at offset %d: %s: %w; refusing to start with a database that differs from the acknowledged one", name, off, strings.ToUpper(string(args[0])), err)
			}
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, errLoadStopped) {
			return errLoadStopped
		}
		return err
	}
	if replayed > 0 {
		s.log.Info("append-only log replayed", "records", replayed, "logs", len(chain.Logs))
	}
	policy, _ := aof.ParsePolicy(s.appendFsync())
	lg, err := chain.OpenLog(policy, s.doubt.add)
	if err != nil {
		return err
	}
	lg.SetLatencyHook(s.latency.add)
	progress.Store(total)
	// Published under the keyspace lock: every command reads s.aof under
	// it, and CONFIG SET appendfsync (under it too) either ran before, so
	// the policy read here is its value, or runs after and sees the log.
	s.db.Lock()
	s.db.EndLoad()
	s.db.Loaded()
	if pol, ok := aof.ParsePolicy(s.appendFsync()); ok && pol != policy {
		lg.SetPolicy(pol)
	}
	s.aof = lg
	p.nextGen = chain.Next()
	p.gen.Store(chain.Snapshot)
	keys := s.db.Len()
	s.db.Unlock()
	s.loadReplMark(chain.Snapshot)
	if s.cfg.dataDir == nil {
		s.warnForeign(s.cfg.Dir, keys)
	}
	// Files of generations before the snapshot are superseded.
	chain.RemoveSuperseded()
	s.loading.phase.CompareAndSwap(loadingData, notLoading)
	if keys > 0 {
		go s.returnLoadGarbage()
	}
	return nil
}

// rewrite moves to a new generation: a snapshot of the keyspace as it is
// now, and a new log after it (see the top of this file). It is what SAVE,
// BGSAVE, BGREWRITEAOF, the automatic save and the shutdown save do.
func (s *Server) rewrite() error {
	p := &s.persist
	p.saveMu.Lock()
	defer p.saveMu.Unlock()
	if s.aof == nil {
		p.lastSave.Store(time.Now().Unix())
		return nil
	}
	start := time.Now()
	p.started.Store(start.Unix())
	gen := p.nextGen
	p.nextGen++
	err := s.rewrite0(gen)
	p.lastDuration.Store(int64(time.Since(start).Seconds()))
	if err != nil {
		p.lastOK.Store(false)
		p.failures.Add(1)
		s.metrics.saveFailures.Inc()
		return err
	}
	p.lastOK.Store(true)
	p.failures.Store(0)
	p.lastSave.Store(time.Now().Unix())
	p.saves.Add(1)
	s.metrics.saves.Inc()
	s.log.Info("snapshot saved", "file", s.dir.Path(SnapshotName(gen)), "generation", gen, "took", time.Since(start).Round(time.Millisecond), "copied_on_write", p.lastCOW.Load())
	return nil
}

func (s *Server) rewrite0(gen uint64) error {
	p := &s.persist
	lf, err := aof.CreateLog(s.dir, gen)
	if err != nil {
		return fmt.Errorf("new log: %w", err)
	}
	// A snapshot's point in time must not fall inside a merge (the
	// merge is in the log before it): wait for the running ones, and
	// finish any started since with the lock held.
	s.db.WaitMerges()
	s.db.Lock()
	stallStart := time.Now()
	s.db.FinishMerges(nil)
	failedBefore := s.aof.Failure() != nil
	snap := s.db.BeginSnapshot(gen)
	s.aof.Rotate(lf)
	dirty := s.db.Dirty()
	s.db.Unlock()
	s.noteSnapshotStart(time.Since(stallStart))
	p.current.Store(snap)
	err = s.inBackgroundThread(func() error { return s.writeSnapshotFile(snap) })
	s.db.Lock()
	s.db.EndSnapshot(snap)
	s.db.Unlock()
	p.current.Store(nil)
	p.lastCOW.Store(snap.Copied.Load())
	if err != nil {
		return err
	}
	p.gen.Store(gen)
	p.dirtyAtSave.Store(dirty)
	if failedBefore || s.aof.Failure() != nil {
		// Only a failure from before the point in time is covered by the
		// snapshot; one of the new log needs the next rewrite.
		if s.aof.FailedGen() < gen {
			s.aof.Recover()
			s.doubt.clear()
			s.log.Info("append-only log writable again: the snapshot holds every write that was in doubt", "generation", gen)
		}
	}
	if names, err := s.dir.List(); err == nil {
		aof.RemoveOlder(s.dir, s.log, names, gen)
	}
	return nil
}

// writeSnapshotFile writes the snapshot to its file durably.
func (s *Server) writeSnapshotFile(snap *keyspace.Snapshot) error {
	n, err := aof.WriteSnapshot(s.dir, snap.Gen, func(w io.Writer) error { return s.db.WriteSnapshot(w, snap) })
	if err != nil {
		return err
	}
	s.persist.lastSnapSize.Store(n)
	return nil
}

// Save writes a snapshot and starts a new log, waiting until both are
// durable. Clients keep being served meanwhile.
func (s *Server) Save() error { return s.rewrite() }

// startRewrite runs a rewrite in the background unless one is running; it
// reports whether it started one.
func (s *Server) startRewrite(why string) bool {
	p := &s.persist
	p.bgMu.Lock()
	defer p.bgMu.Unlock()
	return s.startRewriteLocked(why)
}

// scheduleRewrite is BGSAVE SCHEDULE: a rewrite now, or, while one runs,
// one more as soon as it is done. It reports whether it started one.
func (s *Server) scheduleRewrite(why string) (started bool) {
	p := &s.persist
	p.bgMu.Lock()
	defer p.bgMu.Unlock()
	if s.startRewriteLocked(why) {
		return true
	}
	p.scheduled.Store(true)
	return false
}

// startRewriteLocked is startRewrite with bgMu held.
func (s *Server) startRewriteLocked(why string) bool {
	p := &s.persist
	if p.saving.Load() {
		return false
	}
	p.saving.Store(true)
	s.bgWG.Add(1)
	go s.rewrites(why)
	return true
}

// testHookRewriteDone, if set, runs after each background rewrite, before
// the goroutine decides whether a scheduled one follows.
var testHookRewriteDone atomic.Pointer[func()]

// rewrites runs a background rewrite and then, as long as BGSAVE
// SCHEDULE asked for one while it ran, the next: the decision and the
// end of saving are one step under bgMu, so a request made at any point
// is either seen here or starts a rewrite itself.
func (s *Server) rewrites(why string) {
	defer s.bgWG.Done()
	p := &s.persist
	for {
		if err := s.rewrite(); err != nil {
			s.log.Error("snapshot failed", "reason", why, "err", err)
		}
		if h := testHookRewriteDone.Load(); h != nil {
			(*h)()
		}
		p.bgMu.Lock()
		if !p.scheduled.Load() || s.closed.Load() {
			// Closing: the shutdown save follows; nothing else may start.
			p.saving.Store(false)
			p.bgMu.Unlock()
			return
		}
		p.scheduled.Store(false)
		p.bgMu.Unlock()
		why = "scheduled"
	}
}

// logStatus is aof_last_write_status.
func (s *Server) logStatus() string {
	if lg := s.appendLog(); lg != nil && lg.Failure() != nil {
		return "err"
	}
	return "ok"
}

// lastSaveStatus is rdb_last_bgsave_status.
func (s *Server) lastSaveStatus() string {
	if s.persist.lastOK.Load() || s.persist.saves.Load() == 0 && s.persist.failures.Load() == 0 {
		return "ok"
	}
	return "err"
}

func (s *Server) aofSize() int64 {
	lg := s.appendLog()
	if lg == nil {
		return 0
	}
	return lg.Size()
}

// misconf is the error writes get while the log is failed, or "".
func (s *Server) misconf() string {
	lg := s.appendLog()
	if lg == nil {
		return ""
	}
	if err := lg.Failure(); err != nil {
		return "MISCONF Errors writing to the AOF file: " + errText(err)
	}
	return ""
}

// errText is the root cause of err (as Redis prints strerror).
func errText(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}

// persistenceInfo is INFO's Persistence section, with Redis's field names.
// A snapshot is both Redis's RDB save and its AOF rewrite (it starts a new
// log), so the rdb_ and aof_ fields describe the same operation.
func (s *Server) persistenceInfo() []string {
	p := &s.persist
	b01 := func(v bool) string {
		if v {
			return "1"
		}
		return "0"
	}
	now := time.Now().Unix()
	inProgress := p.saving.Load()
	cur := int64(-1)
	var cow, keysDone, keysTotal int64
	if snap := p.current.Load(); snap != nil {
		cur = now - p.started.Load()
		cow = snap.Copied.Load()
		keysDone = snap.Processed.Load()
		keysTotal = int64(snap.Count)
	}
	status := s.lastSaveStatus()
	lg := s.appendLog()
	loadFlags, loadProgress := s.loadingInfo()
	lines := append(loadFlags,
		"current_cow_peak:"+itoa(cow),
		"current_cow_size:"+itoa(cow),
		"current_cow_size_age:0",
		"current_fork_perc:0.00",
		"current_save_keys_processed:"+itoa(keysDone),
		"current_save_keys_total:"+itoa(keysTotal),
		"rdb_changes_since_last_save:"+strconv.FormatUint(s.db.Dirty()-p.dirtyAtSave.Load(), 10),
		"rdb_bgsave_in_progress:"+b01(inProgress),
		"rdb_last_save_time:"+itoa(p.lastSave.Load()),
		"rdb_last_bgsave_status:"+status,
		"rdb_last_bgsave_time_sec:"+itoa(p.lastDuration.Load()),
		"rdb_current_bgsave_time_sec:"+itoa(cur),
		"rdb_saves:"+itoa(p.saves.Load()),
		"rdb_last_cow_size:"+itoa(p.lastCOW.Load()),
		"rdb_last_load_keys_expired:0",
		"rdb_last_load_keys_loaded:"+itoa(p.loadedKeys.Load()),
		"aof_enabled:"+b01(lg != nil || s.loadingNow()),
		"aof_rewrite_in_progress:"+b01(inProgress),
		"aof_rewrite_scheduled:"+b01(p.scheduled.Load()),
		"aof_last_rewrite_time_sec:"+itoa(p.lastDuration.Load()),
		"aof_current_rewrite_time_sec:"+itoa(cur),
		"aof_last_bgrewrite_status:"+status,
		"aof_rewrites:"+itoa(p.saves.Load()),
		"aof_rewrites_consecutive_failures:"+itoa(p.failures.Load()),
		"aof_last_write_status:"+s.logStatus(),
		"aof_last_cow_size:"+itoa(p.lastCOW.Load()),
		"module_fork_in_progress:0",
		"module_fork_last_cow_size:0",
	)
	if lg != nil {
		lines = append(lines,
			"aof_current_size:"+itoa(s.aofSize()),
			"aof_base_size:"+itoa(p.lastSnapSize.Load()),
			"aof_pending_rewrite:"+b01(p.scheduled.Load()),
			"aof_buffer_length:"+itoa(lg.Buffered()),
			"aof_pending_bio_fsync:0",
			"aof_delayed_fsync:0",
			"aof_fsync:"+s.appendFsync(),
			"aof_current_generation:"+strconv.FormatUint(lg.Generation(), 10),
			"aof_last_write_error:"+s.lastLogError(),
		)
	}
	lines = append(lines, loadProgress...)
	lines = append(lines, "dir:"+s.cfg.Dir)
	return lines
}

// lastLogError is the log's failure, or "" when it is healthy.
func (s *Server) lastLogError() string {
	lg := s.appendLog()
	if lg == nil {
		return ""
	}
	if err := lg.Failure(); err != nil {
		return errText(err)
	}
	return ""
}
