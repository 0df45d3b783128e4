package server

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/aof"
)

// A server stopped cleanly leaves its replication ID and offset beside its
// data (aof.ReplStateName), as Redis keeps them in the RDB file it writes
// at shutdown: started again, a replica asks its master to continue from
// there (PSYNC replid offset+1) instead of copying the whole data set, and
// a master keeps its history, so that its replicas continue too.
//
// The file is trusted only for the data it was written beside: it names
// the snapshot's generation and the log's generation and length at the
// moment the log was closed, and start-up uses it only if it loaded
// exactly that (a write after it, a log cut short by a repair, a restored
// backup: a full sync, as without the file). It is removed when read, so
// a server killed later does not find it; a kill -9 leaves no file and
// means a full sync, as in Redis.

// replStateVersion starts the file.
const replStateVersion = "bloomkit-replication-state 1"

// replMark is what the file records.
type replMark struct {
	replid   string
	offset   int64
	snapshot uint64 // generation of the snapshot loaded with the log (0: none)
	logGen   uint64
	logSize  int64
}

func (m replMark) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\nreplid %s\noffset %d\nsnapshot %d\nlog %d %d\n", replStateVersion, m.replid, m.offset, m.snapshot, m.logGen, m.logSize)
	fmt.Fprintf(&b, "crc32c %08x\n", crc32.Checksum(b.Bytes(), crc32.MakeTable(crc32.Castagnoli)))
	return b.Bytes()
}

// maxReplState bounds what start-up reads of the file.
const maxReplState = 4096

func decodeReplMark(data []byte) (replMark, error) {
	var m replMark
	i := bytes.LastIndex(data, []byte("crc32c "))
	if i < 0 {
		return m, errors.New("no checksum")
	}
	want, err := strconv.ParseUint(strings.TrimSpace(string(data[i+len("crc32c "):])), 16, 32)
	if err != nil || uint32(want) != crc32.Checksum(data[:i], crc32.MakeTable(crc32.Castagnoli)) {
		return m, errors.New("checksum mismatch")
	}
	lines := strings.Split(strings.TrimSuffix(string(data[:i]), "\n"), "\n")
	if len(lines) != 5 || lines[0] != replStateVersion {
		return m, errors.New("unknown layout")
	}
	_, err1 := fmt.Sscanf(lines[1], "replid %s", &m.replid)
	_, err2 := fmt.Sscanf(lines[2], "offset %d", &m.offset)
	_, err3 := fmt.Sscanf(lines[3], "snapshot %d", &m.snapshot)
	_, err4 := fmt.Sscanf(lines[4], "log %d %d", &m.logGen, &m.logSize)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return m, err
	}
	if len(m.replid) != replidLen || m.offset < 0 || m.logSize < 0 {
		return m, errors.New("values out of range")
	}
	return m, nil
}

// saveReplMark writes the file after the log was closed cleanly (finish).
// A failure costs the next start-up's partial resync, nothing else.
func (s *Server) saveReplMark() {
	if s.dir == nil || s.aof == nil {
		return
	}
	s.db.Lock()
	s.repl.mu.Lock()
	m := replMark{replid: s.repl.replid, offset: s.repl.offset(), snapshot: s.persist.gen.Load(),
		logGen: s.aof.Generation(), logSize: s.aof.Size()}
	s.repl.mu.Unlock()
	s.db.Unlock()
	if err := writeReplMark(s.dir, m); err != nil {
		s.log.Warn("could not record the replication offset at shutdown: the next start-up's replicas and master need a full sync", "err", err)
	}
}

func writeReplMark(d aof.Dir, m replMark) error {
	tmp := aof.ReplStateName + aof.TmpMarker + strconv.FormatInt(time.Now().UnixNano(), 36)
	f, err := d.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(m.encode())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.Rename(tmp, aof.ReplStateName)
	}
	if err == nil {
		err = d.Sync()
	}
	if err != nil {
		d.Remove(tmp)
	}
	return err
}

// loadReplMark reads and removes the file at start-up (load, after the
// log is open) and, if it describes exactly the data loaded, takes its
// replication ID and offset.
func (s *Server) loadReplMark(snapshot uint64) {
	d := s.dir
	f, err := d.Open(aof.ReplStateName)
	if err != nil {
		return // none: no clean shutdown
	}
	data, err := io.ReadAll(io.LimitReader(f, maxReplState))
	f.Close()
	// Read once: whatever happens next, a later start-up must not trust it.
	if rerr := d.Remove(aof.ReplStateName); rerr == nil {
		d.Sync()
	}
	if err != nil {
		s.log.Warn("could not read the replication state left at shutdown: a full sync will follow", "file", d.Path(aof.ReplStateName), "err", err)
		return
	}
	m, err := decodeReplMark(data)
	if err != nil {
		s.log.Warn("ignoring the replication state left at shutdown: a full sync will follow", "file", d.Path(aof.ReplStateName), "err", err)
		return
	}
	if m.snapshot != snapshot || m.logGen != s.aof.Generation() || m.logSize != s.aof.Size() {
		s.log.Warn("the replication state left at shutdown is for other data: a full sync will follow",
			"file", d.Path(aof.ReplStateName), "recorded_log", aof.LogName(m.logGen), "recorded_size", m.logSize,
			"loaded_log", aof.LogName(s.aof.Generation()), "loaded_size", s.aof.Size())
		return
	}
	r := &s.repl
	r.mu.Lock()
	r.replid, r.offset0 = m.replid, m.offset
	r.mu.Unlock()
	s.log.Info("replication history restored from the last shutdown", "replid", m.replid, "offset", m.offset)
}
