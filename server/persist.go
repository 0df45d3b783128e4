package server

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Persistence: the files in the data directory and how they change.
//
// The data directory holds one chain of generations:
//
//	dump.<G>.bkdb        the snapshot: the keyspace at the start of generation G
//	appendonly.<G>.aof   the log: every write acknowledged during generation G
//
// Start-up loads the newest snapshot S (none: an empty keyspace, S = 1) and
// replays the logs S, S+1, … in order. A rewrite (BGSAVE, BGREWRITEAOF, SAVE,
// the automatic save and the shutdown save all are one) moves to generation
// G+1 in an order that keeps a complete (snapshot, logs) pair on disk at
// every instant:
//
//  1. appendonly.<G+1>.aof is created, its header fsynced, the directory
//     fsynced. Failing here changes nothing: the log of G keeps going.
//  2. At one point in time (keyspace locked, a few microseconds) writes start
//     going to the new log and the snapshot's image is fixed (copy-on-write,
//     see snapshot.go). Until the snapshot is durable the chain S…G+1 holds
//     everything, because log G ends exactly where log G+1 begins.
//  3. The snapshot is written to a temporary file, fsynced, renamed to
//     dump.<G+1>.bkdb, and the directory fsynced. Failing here leaves the
//     chain S…G+1 intact; the next rewrite simply extends it.
//  4. Only then are the files of generations before G+1 removed.
//
// A failed write or fsync of the log is sticky (see appendLog): writes are
// refused with MISCONF, reads are served, and the server tries a rewrite
// with growing pauses until one succeeds; that snapshot holds everything in
// memory, so the writes that were in doubt become durable with it.
const (
	snapPrefix = "dump."
	snapSuffix = ".bkdb"
	logPrefix  = "appendonly."
	logSuffix  = ".aof"
	tmpMarker  = ".tmp-"

	// legacy (version 1) file names: one snapshot and one log
	legacySnapshot = "dump.bkdb"
	legacyLog      = "appendonly.aof"
)

// SnapshotName is the file name of generation gen's snapshot.
func SnapshotName(gen uint64) string { return snapPrefix + strconv.FormatUint(gen, 10) + snapSuffix }

// LogName is the file name of generation gen's append-only log.
func LogName(gen uint64) string { return logPrefix + strconv.FormatUint(gen, 10) + logSuffix }

func parseGen(name, prefix, suffix string) (uint64, bool) {
	if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, suffix) {
		return 0, false
	}
	g, err := strconv.ParseUint(name[len(prefix):len(name)-len(suffix)], 10, 64)
	return g, err == nil && g > 0
}

// persistState is the snapshot bookkeeping INFO and /healthz report.
type persistState struct {
	saveMu    sync.Mutex // one rewrite at a time; nextGen
	nextGen   uint64
	gen       atomic.Uint64 // newest durable snapshot's generation (0: none)
	saving    atomic.Bool
	scheduled atomic.Bool
	current   atomic.Pointer[snapshot]
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

// load reads the newest snapshot and replays the logs after it (New calls it).
func (s *Server) load() error {
	d := s.cfg.dataDir
	if d == nil {
		// One server per directory, for the process's life: a second one
		// would replay this one's log and then remove it under its feet.
		lock, err := LockDir(s.cfg.Dir)
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		s.dirLock = lock
		od, err := newOSDir(s.cfg.Dir)
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		d = od
	}
	s.dir = d
	names, err := d.List()
	if err != nil {
		return fmt.Errorf("server: list %s: %w", d.Path(""), err)
	}
	// Temporary files are snapshots that never completed.
	for _, n := range names {
		if strings.Contains(n, tmpMarker) {
			if err := d.Remove(n); err != nil {
				return fmt.Errorf("server: remove stale %s: %w", d.Path(n), err)
			}
			s.log.Warn("removed an unfinished snapshot (a rewrite stopped by a crash; nothing acknowledged was in it alone)", "file", d.Path(n))
		}
	}
	if names, err = s.migrateLegacy(names); err != nil {
		return err
	}
	snaps, logs := map[uint64]bool{}, map[uint64]bool{}
	var maxGen, snapGen uint64
	for _, n := range names {
		if g, ok := parseGen(n, snapPrefix, snapSuffix); ok {
			snaps[g] = true
			snapGen = max(snapGen, g)
			maxGen = max(maxGen, g)
		} else if g, ok := parseGen(n, logPrefix, logSuffix); ok {
			logs[g] = true
			maxGen = max(maxGen, g)
		}
	}
	first := snapGen
	if first == 0 {
		first = 1 // no snapshot: the chain starts with an empty keyspace
	}
	var chain []uint64
	for g := range logs {
		if g >= first {
			chain = append(chain, g)
		}
	}
	sort.Slice(chain, func(i, j int) bool { return chain[i] < chain[j] })
	for i, g := range chain {
		if g != first+uint64(i) {
			missing := LogName(first + uint64(i))
			if snapGen == 0 && i == 0 {
				missing = "a snapshot (" + SnapshotName(g) + ")"
			}
			return fmt.Errorf("server: %s: %s is missing, so the writes it held are lost; restore it, or move the newer files away to start without them: %w", d.Path(""), missing, ErrCorrupt)
		}
	}

	// Exact replay: no limit that can change between runs applies.
	limit := s.db.limit
	s.db.limit = 0
	s.db.loading = true
	defer func() {
		s.db.loading = false
		s.db.limit = limit
	}()
	if snapGen > 0 {
		f, err := d.Open(SnapshotName(snapGen))
		if err != nil {
			return fmt.Errorf("server: open snapshot: %w", err)
		}
		gen, n, err := s.readSnapshot(f, d.Path(SnapshotName(snapGen)))
		f.Close()
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		if gen != snapGen {
			return fmt.Errorf("server: snapshot %s says it is generation %d: %w", d.Path(SnapshotName(snapGen)), gen, ErrCorrupt)
		}
		s.persist.loadedKeys.Store(int64(n))
		s.log.Info("snapshot loaded", "file", d.Path(SnapshotName(snapGen)), "keys", n)
	}
	scans := make([]logScan, len(chain))
	for i, g := range chain {
		if scans[i], err = s.scanLogFile(g, nil); err != nil {
			return err
		}
		want := g
		if scans[i].Version == 1 {
			want = g - 1 // version 1 numbered generations from 0
		}
		if scans[i].Gen != want && scans[i].Version != 0 {
			return fmt.Errorf("server: %s says it is generation %d: %w", d.Path(LogName(g)), scans[i].Gen, ErrCorrupt)
		}
	}
	// Damage: a torn tail is a crash while appending and is cut; anything
	// else stops start-up. A torn log before the last is only possible when
	// its writes failed and the server refused writes since, so every later
	// log must be empty.
	for i, sc := range scans {
		name := d.Path(LogName(chain[i]))
		if sc.Corrupt != "" {
			return fmt.Errorf("server: %s is damaged at offset %d (%s) with %d bytes after it; refusing to start with a partial log — `bloom check-log --fix %s` cuts it there, losing those bytes: %w",
				name, sc.End, sc.Corrupt, sc.Size-sc.End, name, ErrCorrupt)
		}
		if sc.Torn != "" {
			for _, later := range scans[i+1:] {
				if later.Records > 0 {
					return fmt.Errorf("server: %s ends with a torn record (%s) at offset %d, but later logs hold writes: %w", name, sc.Torn, sc.End, ErrCorrupt)
				}
			}
		}
	}
	replayed := 0
	for i, g := range chain {
		name := d.Path(LogName(g))
		sess := &Session{authed: true}
		var reply Reply
		if _, err := s.scanLogFile(g, func(off int64, cmds [][][]byte) error {
			for _, args := range cmds {
				if err := s.replayCommand(sess, args, &reply); err != nil {
					return fmt.Errorf("server: replaying %s at offset %d: %s: %w; refusing to start with a database that differs from the acknowledged one", name, off, strings.ToUpper(string(args[0])), err)
				}
			}
			replayed++
			return nil
		}); err != nil {
			return err
		}
		if sc := scans[i]; sc.Torn != "" && sc.Version != 0 {
			s.log.Warn("append-only log ends with a torn record; cutting it off", "file", name, "offset", sc.End, "reason", sc.Torn, "dropped_bytes", sc.Size-sc.End)
			if err := cutLog(d, LogName(g), sc.End); err != nil {
				return fmt.Errorf("server: cut %s: %w", name, err)
			}
		}
	}
	if replayed > 0 {
		s.log.Info("append-only log replayed", "records", replayed, "logs", len(chain))
	}

	// The log to append to: the chain's last, unless it is missing, was
	// never completed or is of the old version (a new one follows it then).
	var cur *logFile
	if n := len(chain); n > 0 && scans[n-1].Version == 2 {
		g := chain[n-1]
		f, err := d.OpenAppend(LogName(g))
		if err != nil {
			return fmt.Errorf("server: open %s: %w", d.Path(LogName(g)), err)
		}
		size := scans[n-1].End
		cur = &logFile{name: LogName(g), gen: g, f: f, size: size}
	} else {
		g := first
		if n == 0 && snapGen > 0 {
			s.log.Warn("the snapshot's log is missing: starting from the snapshot alone; if that log was deleted rather than never written (a restored backup), the writes acknowledged after the snapshot are gone",
				"snapshot", d.Path(SnapshotName(snapGen)), "missing", d.Path(LogName(snapGen)))
		}
		if n > 0 {
			g = chain[n-1]
			if scans[n-1].Version == 0 {
				if err := d.Remove(LogName(g)); err != nil {
					return fmt.Errorf("server: remove unfinished %s: %w", d.Path(LogName(g)), err)
				}
			} else {
				g++
			}
		}
		if cur, err = createLog(d, g); err != nil {
			return fmt.Errorf("server: %w", err)
		}
		maxGen = max(maxGen, g)
	}
	s.persist.nextGen = maxGen + 1
	s.persist.gen.Store(snapGen)
	s.aof = newAppendLog(d, cur, 0)
	s.aof.keepUnsynced.Store(s.fsyncAlways())
	s.aof.onDoubt = s.doubt.add
	s.db.onExpire = func(key string) { s.logCommand(nil, [][]byte{[]byte("DEL"), []byte(key)}) }
	s.db.recount()
	s.db.dirty = 0
	if s.cfg.dataDir == nil {
		s.warnForeign(s.cfg.Dir, len(s.db.keys))
	}
	// Files of generations before the snapshot are superseded.
	s.removeOlder(names, first)
	return nil
}

// scanLogFile scans generation g's log (see scanLog).
func (s *Server) scanLogFile(g uint64, fn func(int64, [][][]byte) error) (logScan, error) {
	f, err := s.dir.Open(LogName(g))
	if err != nil {
		return logScan{}, fmt.Errorf("server: open %s: %w", s.dir.Path(LogName(g)), err)
	}
	defer f.Close()
	sc, err := scanLog(f, f.Size(), fn)
	if err != nil && fn == nil {
		err = fmt.Errorf("server: read %s: %w", s.dir.Path(LogName(g)), err)
	}
	return sc, err
}

// cutLog truncates a log at off and fsyncs it.
func cutLog(d dataDir, name string, off int64) error {
	f, err := d.OpenAppend(name)
	if err != nil {
		return err
	}
	if err := f.Truncate(off); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// migrateLegacy gives version 1 files (dump.bkdb, appendonly.aof) their
// generation's names; the reader still understands their contents.
func (s *Server) migrateLegacy(names []string) ([]string, error) {
	d := s.dir
	has := map[string]bool{}
	for _, n := range names {
		has[n] = true
	}
	if !has[legacySnapshot] && !has[legacyLog] {
		return names, nil
	}
	readGen := func(name string, magic string, at int) (uint64, error) {
		f, err := d.Open(name)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		h := make([]byte, 16)
		if _, err := io.ReadFull(bufio.NewReader(f), h); err != nil || string(h[:8]) != magic {
			return 0, fmt.Errorf("%s: not a bloomkit version 1 file: %w", d.Path(name), ErrCorrupt)
		}
		return binary.LittleEndian.Uint64(h[at:]), nil
	}
	snapGen := uint64(0)
	if has[legacySnapshot] {
		g, err := readGen(legacySnapshot, snapMagic, 8)
		if err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		snapGen = g
	}
	// Version 1 generations start at 0; ours at 1.
	if has[legacyLog] {
		g, err := readGen(legacyLog, aofMagicV1, 8)
		if err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		if g < snapGen {
			// It predates the snapshot: version 1 discarded it too.
			if err := d.Remove(legacyLog); err != nil {
				return nil, fmt.Errorf("server: %w", err)
			}
		} else if err := d.Rename(legacyLog, LogName(g+1)); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
	}
	if has[legacySnapshot] {
		if err := d.Rename(legacySnapshot, SnapshotName(snapGen+1)); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
	}
	if err := d.Sync(); err != nil {
		return nil, fmt.Errorf("server: fsync %s: %w", d.Path(""), err)
	}
	s.log.Info("renamed version 1 data files to generation names", "dir", d.Path(""))
	return d.List()
}

// createLog creates generation g's log durably: header written and fsynced,
// directory entry fsynced.
func createLog(d dataDir, g uint64) (*logFile, error) {
	name := LogName(g)
	f, err := d.Create(name)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", d.Path(name), err)
	}
	fail := func(what string, err error) (*logFile, error) {
		f.Close()
		d.Remove(name)
		return nil, fmt.Errorf("%s %s: %w", what, d.Path(name), err)
	}
	h := aofHeader(g)
	if _, err := f.Write(h); err != nil {
		return fail("write", err)
	}
	if err := f.Sync(); err != nil {
		return fail("fsync", err)
	}
	if err := d.Sync(); err != nil {
		return fail("fsync directory of", err)
	}
	return &logFile{name: name, gen: g, f: f, size: int64(len(h))}, nil
}

// removeOlder removes snapshots and logs of generations before g.
func (s *Server) removeOlder(names []string, g uint64) {
	removed := false
	for _, n := range names {
		sg, isSnap := parseGen(n, snapPrefix, snapSuffix)
		lg, isLog := parseGen(n, logPrefix, logSuffix)
		if (isSnap && sg < g) || (isLog && lg < g) {
			if err := s.dir.Remove(n); err != nil {
				s.log.Warn("could not remove a superseded file", "file", s.dir.Path(n), "err", err)
				continue
			}
			removed = true
		}
	}
	if removed {
		if err := s.dir.Sync(); err != nil {
			s.log.Warn("fsync of the data directory failed", "err", err)
		}
	}
}

// replayCommand applies one logged command during start-up.
func (s *Server) replayCommand(c *Session, args [][]byte, r *Reply) error {
	cmd, ok := lookupCommand(args[0])
	if !ok || cmd.fn == nil || !cmd.write {
		return errors.New("not a logged command")
	}
	r.Reset(false)
	s.db.mu.Lock()
	c.skipLog, c.logArgs = false, nil
	cmd.fn(s, c, args, r)
	s.db.mu.Unlock()
	if r.failed {
		return errors.New(strings.TrimSpace(strings.TrimPrefix(string(r.Bytes()), "-")))
	}
	return nil
}

// logCommand appends a write to the log, or to the transaction being
// executed (db.mu held). It returns the log position the write is at.
func (s *Server) logCommand(c *Session, args [][]byte) {
	if s.aof == nil || s.db.loading || s.cfg.NoAppendLog {
		return
	}
	if s.txn != nil {
		cp := make([][]byte, len(args))
		for i, a := range args {
			cp[i] = append([]byte(nil), a...)
		}
		s.txn = append(s.txn, cp)
		return
	}
	s.aof.append(func(b []byte) []byte { return encodeRecord(b, args) })
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
	lf, err := createLog(s.dir, gen)
	if err != nil {
		return fmt.Errorf("new log: %w", err)
	}
	// A snapshot's point in time must not fall inside a merge (the
	// merge is in the log before it): wait for the running ones, and
	// finish any started since with the lock held.
	s.waitMerges()
	s.db.mu.Lock()
	s.db.finishMerges(nil)
	failedBefore := s.aof.failure() != nil
	snap := s.db.beginSnapshot(gen)
	s.aof.rotate(lf)
	dirty := s.db.dirty
	s.db.mu.Unlock()
	p.current.Store(snap)
	err = s.inBackgroundThread(func() error { return s.writeSnapshotFile(snap) })
	s.db.mu.Lock()
	s.db.endSnapshot(snap)
	s.db.mu.Unlock()
	p.current.Store(nil)
	p.lastCOW.Store(snap.copied.Load())
	if err != nil {
		return err
	}
	p.gen.Store(gen)
	p.dirtyAtSave.Store(dirty)
	if failedBefore || s.aof.failure() != nil {
		// Only a failure from before the point in time is covered by the
		// snapshot; one of the new log needs the next rewrite.
		if s.aof.failedGen() < gen {
			s.aof.recover()
			s.doubt.clear()
			s.log.Info("append-only log writable again: the snapshot holds every write that was in doubt", "generation", gen)
		}
	}
	if names, err := s.dir.List(); err == nil {
		s.removeOlder(names, gen)
	}
	return nil
}

// writeSnapshotFile writes the snapshot to a temporary file and renames it
// into place durably.
func (s *Server) writeSnapshotFile(snap *snapshot) error {
	name := SnapshotName(snap.gen)
	tmp := name + tmpMarker + strconv.FormatInt(time.Now().UnixNano(), 36)
	f, err := s.dir.Create(tmp)
	if err != nil {
		return fmt.Errorf("create %s: %w", s.dir.Path(tmp), err)
	}
	fail := func(what string, err error) error {
		f.Close()
		s.dir.Remove(tmp)
		return fmt.Errorf("%s %s: %w", what, s.dir.Path(tmp), err)
	}
	// writeSnapshot already writes in blocks of about holdBytes: no
	// buffer in between (it would be another MiB of heap per snapshot).
	cw := &countWriter{w: f}
	if err := s.writeSnapshot(cw, snap); err != nil {
		return fail("write", err)
	}
	if err := f.Sync(); err != nil {
		return fail("fsync", err)
	}
	if err := f.Close(); err != nil {
		s.dir.Remove(tmp)
		return fmt.Errorf("close %s: %w", s.dir.Path(tmp), err)
	}
	if err := s.dir.Rename(tmp, name); err != nil {
		s.dir.Remove(tmp)
		return fmt.Errorf("rename %s: %w", s.dir.Path(tmp), err)
	}
	if err := s.dir.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", s.dir.Path(""), err)
	}
	s.persist.lastSnapSize.Store(cw.n)
	return nil
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Save writes a snapshot and starts a new log, waiting until both are
// durable. Clients keep being served meanwhile.
func (s *Server) Save() error { return s.rewrite() }

// startRewrite runs a rewrite in the background unless one is running; it
// reports whether it started one.
func (s *Server) startRewrite(why string) bool {
	p := &s.persist
	if !p.saving.CompareAndSwap(false, true) {
		return false
	}
	s.bgWG.Add(1)
	go func() {
		defer s.bgWG.Done()
		defer p.saving.Store(false)
		if err := s.rewrite(); err != nil {
			s.log.Error("snapshot failed", "reason", why, "err", err)
		}
		if p.scheduled.CompareAndSwap(true, false) {
			go s.startRewrite("scheduled")
		}
	}()
	return true
}

// logStatus is aof_last_write_status.
func (s *Server) logStatus() string {
	if s.aof != nil && s.aof.failure() != nil {
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
	if s.aof == nil {
		return 0
	}
	return s.aof.size()
}

// misconf is the error writes get while the log is failed, or "".
func (s *Server) misconf() string {
	if s.aof == nil {
		return ""
	}
	if err := s.aof.failure(); err != nil {
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
		cow = snap.copied.Load()
		keysDone = snap.processed.Load()
		keysTotal = int64(snap.count)
	}
	status := s.lastSaveStatus()
	lines := []string{
		"loading:0",
		"async_loading:0",
		"current_cow_peak:" + itoa(cow),
		"current_cow_size:" + itoa(cow),
		"current_cow_size_age:0",
		"current_fork_perc:0.00",
		"current_save_keys_processed:" + itoa(keysDone),
		"current_save_keys_total:" + itoa(keysTotal),
		"rdb_changes_since_last_save:" + strconv.FormatUint(s.db.dirty-p.dirtyAtSave.Load(), 10),
		"rdb_bgsave_in_progress:" + b01(inProgress),
		"rdb_last_save_time:" + itoa(p.lastSave.Load()),
		"rdb_last_bgsave_status:" + status,
		"rdb_last_bgsave_time_sec:" + itoa(p.lastDuration.Load()),
		"rdb_current_bgsave_time_sec:" + itoa(cur),
		"rdb_saves:" + itoa(p.saves.Load()),
		"rdb_last_cow_size:" + itoa(p.lastCOW.Load()),
		"rdb_last_load_keys_expired:0",
		"rdb_last_load_keys_loaded:" + itoa(p.loadedKeys.Load()),
		"aof_enabled:" + b01(s.aof != nil),
		"aof_rewrite_in_progress:" + b01(inProgress),
		"aof_rewrite_scheduled:" + b01(p.scheduled.Load()),
		"aof_last_rewrite_time_sec:" + itoa(p.lastDuration.Load()),
		"aof_current_rewrite_time_sec:" + itoa(cur),
		"aof_last_bgrewrite_status:" + status,
		"aof_rewrites:" + itoa(p.saves.Load()),
		"aof_rewrites_consecutive_failures:" + itoa(p.failures.Load()),
		"aof_last_write_status:" + s.logStatus(),
		"aof_last_cow_size:" + itoa(p.lastCOW.Load()),
		"module_fork_in_progress:0",
		"module_fork_last_cow_size:0",
	}
	if s.aof != nil {
		lines = append(lines,
			"aof_current_size:"+itoa(s.aofSize()),
			"aof_base_size:"+itoa(p.lastSnapSize.Load()),
			"aof_pending_rewrite:"+b01(p.scheduled.Load()),
			"aof_buffer_length:"+itoa(s.aof.buffered()),
			"aof_pending_bio_fsync:0",
			"aof_delayed_fsync:0",
			"aof_fsync:"+s.appendFsync(),
			"aof_current_generation:"+strconv.FormatUint(s.aof.generation(), 10),
			"aof_last_write_error:"+s.lastLogError(),
		)
	}
	lines = append(lines, "dir:"+s.cfg.Dir)
	return lines
}

// lastLogError is the log's failure, or "" when it is healthy.
func (s *Server) lastLogError() string {
	if s.aof == nil {
		return ""
	}
	if err := s.aof.failure(); err != nil {
		return errText(err)
	}
	return ""
}
