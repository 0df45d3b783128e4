package aof

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	snapPrefix = "dump."
	snapSuffix = ".bkdb"
	logPrefix  = "appendonly."
	logSuffix  = ".aof"
	// TmpMarker is in the name of a snapshot being written; start-up
	// removes such files (snapshots that never completed).
	TmpMarker = ".tmp-"

	// LegacySnapshot and LegacyLog are the version 1 file names: one
	// snapshot and one log.
	LegacySnapshot = "dump.bkdb"
	LegacyLog      = "appendonly.aof"

	// ReplStateName is the file a server leaves at a clean shutdown to
	// say which replication history and offset its data ends at; the
	// next start-up reads and removes it. This package only names it.
	ReplStateName = "replication.state"

	// snapMagic starts a snapshot (the keyspace writes the format); it is
	// read here only to find a version 1 snapshot's generation.
	snapMagic = "BKSNAP02"
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

// Chain is the chain of generations a data directory holds at start-up:
// the newest snapshot and the logs after it, checked.
type Chain struct {
	dir   Dir
	log   *slog.Logger
	names []string
	// Snapshot is the newest snapshot's generation (0: none).
	Snapshot uint64
	// First is the generation replay starts from: the snapshot's, or 1.
	First uint64
	// Logs are the generations of the logs to replay, in order.
	Logs  []uint64
	scans []Scan
	// next is the first generation no file uses.
	next uint64
}

// OpenChain finds the chain of generations in d and checks it before
// anything is loaded: temporary files are removed, version 1 names are
// migrated, a missing log, a generation number that disagrees with its
// file name and damage other than a torn tail stop start-up (with
// ErrCorrupt and what to do about it).
func OpenChain(d Dir, log *slog.Logger) (*Chain, error) {
	names, err := d.List()
	if err != nil {
		return nil, fmt.Errorf("server: list %s: %w", d.Path(""), err)
	}
	// Temporary files are snapshots that never completed.
	for _, n := range names {
		if strings.Contains(n, TmpMarker) {
			if err := d.Remove(n); err != nil {
				return nil, fmt.Errorf("server: remove stale %s: %w", d.Path(n), err)
			}
			log.Warn("removed an unfinished snapshot (a rewrite stopped by a crash; nothing acknowledged was in it alone)", "file", d.Path(n))
		}
	}
	if names, err = migrateLegacy(d, log, names); err != nil {
		return nil, err
	}
	logs := map[uint64]bool{}
	var maxGen, snapGen uint64
	for _, n := range names {
		if g, ok := parseGen(n, snapPrefix, snapSuffix); ok {
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
			return nil, fmt.Errorf("server: %s: %s is missing, so the writes it held are lost; restore it, or move the newer files away to start without them: %w", d.Path(""), missing, ErrCorrupt)
		}
	}
	c := &Chain{dir: d, log: log, names: names, Snapshot: snapGen, First: first, Logs: chain, next: maxGen + 1}
	c.scans = make([]Scan, len(chain))
	for i, g := range chain {
		if c.scans[i], err = c.scanFile(g, nil); err != nil {
			return nil, err
		}
		want := g
		if c.scans[i].Version == 1 {
			want = g - 1 // version 1 numbered generations from 0
		}
		if c.scans[i].Gen != want && c.scans[i].Version != 0 {
			return nil, fmt.Errorf("server: %s says it is generation %d: %w", d.Path(LogName(g)), c.scans[i].Gen, ErrCorrupt)
		}
	}
	// Damage: a torn tail is a crash while appending and is cut; anything
	// else stops start-up. A torn log before the last is only possible when
	// its writes failed and the server refused writes since, so every later
	// log must be empty.
	for i, sc := range c.scans {
		name := d.Path(LogName(chain[i]))
		if sc.Corrupt != "" {
			return nil, fmt.Errorf("server: %s is damaged at offset %d (%s) with %d bytes after it; refusing to start with a partial log — `bloom check-log --fix %s` cuts it there, losing those bytes: %w",
				name, sc.End, sc.Corrupt, sc.Size-sc.End, name, ErrCorrupt)
		}
		if sc.Torn != "" {
			for _, later := range c.scans[i+1:] {
				if later.Records > 0 {
					return nil, fmt.Errorf("server: %s ends with a torn record (%s) at offset %d, but later logs hold writes: %w", name, sc.Torn, sc.End, ErrCorrupt)
				}
			}
		}
	}
	return c, nil
}

// scanFile scans generation g's log (see ScanLog).
func (c *Chain) scanFile(g uint64, fn func(int64, [][][]byte) error) (Scan, error) {
	f, err := c.dir.Open(LogName(g))
	if err != nil {
		return Scan{}, fmt.Errorf("server: open %s: %w", c.dir.Path(LogName(g)), err)
	}
	defer f.Close()
	sc, err := ScanLog(f, f.Size(), fn)
	if err != nil && fn == nil {
		err = fmt.Errorf("server: read %s: %w", c.dir.Path(LogName(g)), err)
	}
	return sc, err
}

// Replay calls fn with every record of the chain's logs, in order, with
// the log's path and the record's offset; an error from fn stops it. A
// torn tail is cut off after its log was replayed.
func (c *Chain) Replay(fn func(path string, off int64, cmds [][][]byte) error) (records int, err error) {
	for i, g := range c.Logs {
		name := c.dir.Path(LogName(g))
		if _, err := c.scanFile(g, func(off int64, cmds [][][]byte) error {
			if err := fn(name, off, cmds); err != nil {
				return err
			}
			records++
			return nil
		}); err != nil {
			return records, err
		}
		if sc := c.scans[i]; sc.Torn != "" && sc.Version != 0 {
			c.log.Warn("append-only log ends with a torn record; cutting it off", "file", name, "offset", sc.End, "reason", sc.Torn, "dropped_bytes", sc.Size-sc.End)
			if err := cutLog(c.dir, LogName(g), sc.End); err != nil {
				return records, fmt.Errorf("server: cut %s: %w", name, err)
			}
		}
	}
	return records, nil
}

// OpenLog opens the log to append to: the chain's last, unless it is
// missing, was never completed or is of the old version (a new one follows
// it then). The log starts with policy p; onDoubt is told the records that
// were appended but are not durable when the log fails.
func (c *Chain) OpenLog(p Policy, onDoubt func(records []byte)) (*Log, error) {
	d := c.dir
	var cur *LogFile
	if n := len(c.Logs); n > 0 && c.scans[n-1].Version == 2 {
		g := c.Logs[n-1]
		f, err := d.OpenAppend(LogName(g))
		if err != nil {
			return nil, fmt.Errorf("server: open %s: %w", d.Path(LogName(g)), err)
		}
		size := c.scans[n-1].End
		cur = &LogFile{name: LogName(g), gen: g, f: f, size: size}
	} else {
		g := c.First
		if n == 0 && c.Snapshot > 0 {
			c.log.Warn("the snapshot's log is missing: starting from the snapshot alone; if that log was deleted rather than never written (a restored backup), the writes acknowledged after the snapshot are gone",
				"snapshot", d.Path(SnapshotName(c.Snapshot)), "missing", d.Path(LogName(c.Snapshot)))
		}
		if n > 0 {
			g = c.Logs[n-1]
			if c.scans[n-1].Version == 0 {
				if err := d.Remove(LogName(g)); err != nil {
					return nil, fmt.Errorf("server: remove unfinished %s: %w", d.Path(LogName(g)), err)
				}
			} else {
				g++
			}
		}
		var err error
		if cur, err = CreateLog(d, g); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		c.next = max(c.next, g+1)
	}
	a := newLog(d, cur, 0)
	a.policy.Store(int32(p))
	a.onDoubt = onDoubt
	return a, nil
}

// LogBytes is the size of the logs Replay reads.
func (c *Chain) LogBytes() int64 {
	var n int64
	for _, sc := range c.scans {
		n += sc.Size
	}
	return n
}

// LogSize is the size of Logs[i]'s file.
func (c *Chain) LogSize(i int) int64 { return c.scans[i].Size }

// Next is the first generation no file of the chain uses: the next
// rewrite's.
func (c *Chain) Next() uint64 { return c.next }

// RemoveSuperseded removes the files of generations before the chain's
// first: the snapshot supersedes them.
func (c *Chain) RemoveSuperseded() { RemoveOlder(c.dir, c.log, c.names, c.First) }

// cutLog truncates a log at off and fsyncs it.
func cutLog(d Dir, name string, off int64) error {
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
// generation's names; the readers still understand their contents.
func migrateLegacy(d Dir, log *slog.Logger, names []string) ([]string, error) {
	has := map[string]bool{}
	for _, n := range names {
		has[n] = true
	}
	if !has[LegacySnapshot] && !has[LegacyLog] {
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
	if has[LegacySnapshot] {
		g, err := readGen(LegacySnapshot, snapMagic, 8)
		if err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		snapGen = g
	}
	// Version 1 generations start at 0; ours at 1.
	if has[LegacyLog] {
		g, err := readGen(LegacyLog, aofMagicV1, 8)
		if err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		if g < snapGen {
			// It predates the snapshot: version 1 discarded it too.
			if err := d.Remove(LegacyLog); err != nil {
				return nil, fmt.Errorf("server: %w", err)
			}
		} else if err := d.Rename(LegacyLog, LogName(g+1)); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
	}
	if has[LegacySnapshot] {
		if err := d.Rename(LegacySnapshot, SnapshotName(snapGen+1)); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
	}
	if err := d.Sync(); err != nil {
		return nil, fmt.Errorf("server: fsync %s: %w", d.Path(""), err)
	}
	log.Info("renamed version 1 data files to generation names", "dir", d.Path(""))
	return d.List()
}

// CreateLog creates generation g's log durably: header written and
// fsynced, directory entry fsynced. A rewrite creates the next
// generation's log with it before its point in time (Log.Rotate).
func CreateLog(d Dir, g uint64) (*LogFile, error) {
	name := LogName(g)
	f, err := d.Create(name)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", d.Path(name), err)
	}
	fail := func(what string, err error) (*LogFile, error) {
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
	return &LogFile{name: name, gen: g, f: f, size: int64(len(h))}, nil
}

// Close closes the file (a log file that was never rotated to).
func (lf *LogFile) Close() error { return lf.f.Close() }

// RemoveOlder removes snapshots and logs of generations before g (names
// is the directory's listing).
func RemoveOlder(d Dir, log *slog.Logger, names []string, g uint64) {
	removed := false
	for _, n := range names {
		sg, isSnap := parseGen(n, snapPrefix, snapSuffix)
		lg, isLog := parseGen(n, logPrefix, logSuffix)
		if (isSnap && sg < g) || (isLog && lg < g) {
			if err := d.Remove(n); err != nil {
				log.Warn("could not remove a superseded file", "file", d.Path(n), "err", err)
				continue
			}
			removed = true
		}
	}
	if removed {
		if err := d.Sync(); err != nil {
			log.Warn("fsync of the data directory failed", "err", err)
		}
	}
}

// WriteSnapshot writes generation gen's snapshot durably: write fills a
// temporary file, which is fsynced, renamed to SnapshotName(gen), and the
// directory fsynced. It returns the file's size. On failure the temporary
// file is removed and the chain on disk is as it was.
func WriteSnapshot(d Dir, gen uint64, write func(io.Writer) error) (int64, error) {
	name := SnapshotName(gen)
	tmp := name + TmpMarker + strconv.FormatInt(time.Now().UnixNano(), 36)
	f, err := d.Create(tmp)
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", d.Path(tmp), err)
	}
	fail := func(what string, err error) (int64, error) {
		f.Close()
		d.Remove(tmp)
		return 0, fmt.Errorf("%s %s: %w", what, d.Path(tmp), err)
	}
	// The snapshot writer already writes in large blocks: no buffer in
	// between (it would be another MiB of heap per snapshot).
	cw := &countWriter{w: f}
	if err := write(cw); err != nil {
		return fail("write", err)
	}
	if err := f.Sync(); err != nil {
		return fail("fsync", err)
	}
	if err := f.Close(); err != nil {
		d.Remove(tmp)
		return 0, fmt.Errorf("close %s: %w", d.Path(tmp), err)
	}
	if err := d.Rename(tmp, name); err != nil {
		d.Remove(tmp)
		return 0, fmt.Errorf("rename %s: %w", d.Path(tmp), err)
	}
	if err := d.Sync(); err != nil {
		return 0, fmt.Errorf("fsync directory %s: %w", d.Path(""), err)
	}
	return cw.n, nil
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

// IsOwnFile reports whether name is one of bloomkit's data-directory files.
func IsOwnFile(name string) bool {
	if _, ok := parseGen(name, snapPrefix, snapSuffix); ok {
		return true
	}
	if _, ok := parseGen(name, logPrefix, logSuffix); ok {
		return true
	}
	switch name {
	case LockFileName, LegacySnapshot, LegacyLog, ReplStateName:
		return true
	}
	return strings.Contains(name, TmpMarker) // removed at start-up, with a warning
}
