package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/server/internal/aof"
)

// Replay applies exactly what was logged: a limit lowered between runs
// must not drop a logged BF.RESERVE (which a later BF.ADD would then
// replace with a default filter).
func TestReplayIgnoresMaxMemory(t *testing.T) {
	s := startServer(t, Config{AppendFsync: "always"})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{
		{"BF.RESERVE big 0.001 1000000", "+OK"},
		{"BF.ADD big x", ":1"},
	})
	s.Close()
	s2 := startServer(t, Config{Dir: s.cfg.Dir, MaxMemory: 64 << 10})
	runSteps(t, dialRaw(t, s2.Addr()), []step{
		{"BF.INFO big CAPACITY", "[:1000000]"},
		{"BF.EXISTS big x", ":1"},
		{"BF.RESERVE other 0.001 1000000", "-ERR Insufficient memory to create filter"}, // the limit holds for new writes
	})
}

// A logged command that fails on replay stops start-up with the file and
// offset instead of being skipped.
func TestReplayFailureStopsStartup(t *testing.T) {
	s := startServer(t, Config{AppendFsync: "always"})
	rc := dialRaw(t, s.Addr())
	rc.do("BF.RESERVE", "b", "0.01", "100")
	s.Close()
	// Append a record no server would have logged: a second BF.RESERVE of
	// the same key fails ("item exists").
	path := filepath.Join(s.cfg.Dir, LogName(1))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	off, _ := f.Seek(0, io.SeekEnd)
	f.Write(aof.EncodeRecord(nil, [][]byte{[]byte("BF.RESERVE"), []byte("b"), []byte("0.01"), []byte("100")}))
	f.Close()
	_, err = New(Config{Dir: s.cfg.Dir, Logger: quietLogger()})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "offset "+itoa(off)) || !strings.Contains(err.Error(), "item exists") {
		t.Fatalf("New with a record that fails on replay: %v", err)
	}
}

// A flipped bit in a record's length is caught by the header checksum and
// stops start-up, instead of silently cutting the log there.
func TestFlippedLengthBitStopsStartup(t *testing.T) {
	s := startServer(t, Config{AppendFsync: "always"})
	rc := dialRaw(t, s.Addr())
	for _, it := range []string{"one", "two", "three"} {
		rc.do("BF.ADD", "b", it)
	}
	s.Close()
	path := filepath.Join(s.cfg.Dir, LogName(1))
	data, _ := os.ReadFile(path)
	good := append([]byte(nil), data...)
	second := aof.HeaderLen + aof.RecordHeaderLen + int(binary.LittleEndian.Uint32(data[aof.HeaderLen:]))
	data[second+1] ^= 0x01 // the second record's length grows by 256 bytes
	os.WriteFile(path, data, 0o644)
	_, err := New(Config{Dir: s.cfg.Dir, Logger: quietLogger()})
	if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "record header checksum") || !strings.Contains(err.Error(), "check-log --fix") {
		t.Fatalf("New with a flipped length bit: %v", err)
	}
	res, err := CheckLog(path, false)
	if err != nil || !res.Corrupt || res.Records != 1 || res.End != int64(second) {
		t.Fatalf("CheckLog: %+v %v", res, err)
	}
	// --fix cuts at the bad record: the first write survives, the rest is gone.
	if res, err = CheckLog(path, true); err != nil || !res.Fixed {
		t.Fatalf("CheckLog --fix: %+v %v", res, err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, good[:second]) {
		t.Fatalf("fixed log is %d bytes, want the first %d", len(now), second)
	}
	s2 := startServer(t, Config{Dir: s.cfg.Dir})
	if got := dialRaw(t, s2.Addr()).do("BF.MEXISTS", "b", "one", "two"); got != "[:1 :0]" {
		t.Fatalf("after the fix: %s", got)
	}
}

// MULTI/EXEC is logged as one record, so a crash in the middle of writing
// it replays none of it.
func TestTransactionIsOneRecord(t *testing.T) {
	s := startServer(t, Config{AppendFsync: "always"})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{
		{"BF.ADD b before", ":1"},
		{"MULTI", "+OK"},
		{"BF.ADD b t1", "+QUEUED"},
		{"BF.EXISTS b t1", "+QUEUED"},
		{"CF.ADD c t2", "+QUEUED"},
		{"EXEC", "[:1 :1 :1]"},
	})
	s.Close()
	path := filepath.Join(s.cfg.Dir, LogName(1))
	var offsets []int64
	var kinds [][]string
	f, _ := os.Open(path)
	st, _ := f.Stat()
	sc, err := aof.ScanLog(f, st.Size(), func(off int64, cmds [][][]byte) error {
		offsets = append(offsets, off)
		var names []string
		for _, c := range cmds {
			names = append(names, string(c[0])+" "+string(c[len(c)-1]))
		}
		kinds = append(kinds, names)
		return nil
	})
	f.Close()
	if err != nil || sc.Records != 2 || len(kinds) != 2 || strings.Join(kinds[1], ",") != "BF.ADD t1,CF.ADD t2" {
		t.Fatalf("log records %v (%+v, %v): want BF.ADD before, then one record with BF.ADD t1 and CF.ADD t2", kinds, sc, err)
	}
	// Cut the transaction record in half: neither of its writes replays.
	os.Truncate(path, offsets[1]+(st.Size()-offsets[1])/2)
	s2 := startServer(t, Config{Dir: s.cfg.Dir})
	runSteps(t, dialRaw(t, s2.Addr()), []step{
		{"BF.MEXISTS b before t1", "[:1 :0]"},
		{"EXISTS c", ":0"},
	})
}

// Temporary files of snapshots that never completed are removed at start.
func TestStaleTempFilesRemoved(t *testing.T) {
	s := startServer(t, Config{})
	dialRaw(t, s.Addr()).do("BF.ADD", "b", "x")
	s.Close()
	stale := filepath.Join(s.cfg.Dir, SnapshotName(7)+aof.TmpMarker+"abc")
	os.WriteFile(stale, make([]byte, 1000), 0o644)
	s2 := startServer(t, Config{Dir: s.cfg.Dir})
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale temp file still there: %v", err)
	}
	if got := dialRaw(t, s2.Addr()).do("BF.EXISTS", "b", "x"); got != ":1" {
		t.Fatal(got)
	}
}

// Version 1 data directories (dump.bkdb + appendonly.aof, lengths not
// checksummed) are still read, and renamed to generation names.
func TestVersion1FilesAreRead(t *testing.T) {
	dir := t.TempDir()
	// A version 1 log of generation 0: 16-byte header, 8-byte record headers.
	var b []byte
	b = append(b, "BKAOF001"...)
	b = binary.LittleEndian.AppendUint64(b, 0)
	for _, args := range [][]string{{"BF.RESERVE", "b", "0.01", "100"}, {"BF.ADD", "b", "old"}} {
		var payload []byte
		var argv [][]byte
		for _, a := range args {
			argv = append(argv, []byte(a))
		}
		payload = aof.AppendCommand(payload, argv)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
		b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(payload, crc32.MakeTable(crc32.Castagnoli)))
		b = append(b, payload...)
	}
	os.WriteFile(filepath.Join(dir, aof.LegacyLog), b, 0o644)
	s := startServer(t, Config{Dir: dir, AppendFsync: "always"})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{
		{"BF.EXISTS b old", ":1"},
		{"BF.ADD b new", ":1"},
	})
	s.Close()
	if _, err := os.Stat(filepath.Join(dir, aof.LegacyLog)); !os.IsNotExist(err) {
		t.Errorf("version 1 log not renamed: %v", err)
	}
	// The version 1 log is generation 1 now, and new writes went to a
	// version 2 log after it.
	for _, n := range []string{LogName(1), LogName(2)} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	s2 := startServer(t, Config{Dir: dir})
	if got := dialRaw(t, s2.Addr()).do("BF.MEXISTS", "b", "old", "new"); got != "[:1 :1]" {
		t.Fatal(got)
	}
}

// A missing log in the middle of the chain stops start-up.
func TestMissingLogStopsStartup(t *testing.T) {
	s := startServer(t, Config{})
	rc := dialRaw(t, s.Addr())
	rc.do("BF.ADD", "b", "x")
	s.Close()
	// As after two failed snapshots: logs 1, 2, 3 and no snapshot.
	for g := uint64(2); g <= 3; g++ {
		d, err := aof.NewOSDir(s.cfg.Dir)
		if err != nil {
			t.Fatal(err)
		}
		lf, err := aof.CreateLog(d, g)
		if err != nil {
			t.Fatal(err)
		}
		lf.Close()
	}
	os.Remove(filepath.Join(s.cfg.Dir, LogName(2)))
	_, err := New(Config{Dir: s.cfg.Dir, Logger: quietLogger()})
	if err == nil || !strings.Contains(err.Error(), LogName(2)+" is missing") {
		t.Fatalf("New with a gap in the logs: %v", err)
	}
}

// A panic in a command handler releases the keyspace lock: a read that
// panics is answered with an error and the server goes on.
func TestPanicReleasesLock(t *testing.T) {
	commandTable["test.panic"] = &command{name: "test.panic", arity: 1, fn: func(*Server, *Session, [][]byte, *Reply) { panic("boom") }}
	defer delete(commandTable, "test.panic")
	s := startServer(t, Config{NoPersistence: true, Logger: quietLogger()})
	rc := dialRaw(t, s.Addr())
	if got := rc.do("TEST.PANIC"); got != "-ERR internal error in 'test.panic' (logged)" {
		t.Fatalf("panicking command: %s", got)
	}
	if got := rc.do("BF.ADD", "b", "x"); got != ":1" {
		t.Fatalf("after the panic: %s", got)
	}
	if err := s.Shutdown(); err != nil { // must not hang on the lock
		t.Fatal(err)
	}
}
