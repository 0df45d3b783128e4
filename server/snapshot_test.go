package server

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/keyspace"
)

// doArgs runs one command through the command layer.
func doArgs(s *Server, c *Session, args ...string) string {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	var r Reply
	s.Do(c, b, &r)
	return string(r.Bytes())
}

// dumpAll is every key's complete SCANDUMP, for comparing filters exactly.
func dumpAll(t *testing.T, s *Server, c *Session, keys ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range keys {
		cmd := "BF.SCANDUMP"
		if strings.HasPrefix(doArgs(s, c, "TYPE", k), "+MBbloomCF") {
			cmd = "CF.SCANDUMP"
		}
		var all strings.Builder
		it := "0"
		for i := 0; i < 10000; i++ {
			got := doArgs(s, c, cmd, k, it)
			all.WriteString(got)
			// *2\r\n:<next>\r\n...
			lines := strings.SplitN(got, "\r\n", 3)
			if len(lines) < 2 || !strings.HasPrefix(lines[1], ":") {
				t.Fatalf("%s %s %s: %q", cmd, k, it, got)
			}
			it = lines[1][1:]
			if it == "0" {
				break
			}
		}
		out[k] = all.String()
	}
	return out
}

// A snapshot holds the keyspace exactly as it was when it started, while
// clients go on adding, deleting (cuckoo compaction frees sub-filters),
// loading chunks and dropping keys as the writer works through the
// filters chunk by chunk.
func TestSnapshotIsPointInTime(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	c := &Session{authed: true}
	must := func(want string, args ...string) {
		t.Helper()
		if got := doArgs(s, c, args...); !strings.HasPrefix(got, want) {
			t.Fatalf("%v: %q, want %q", args, got, want)
		}
	}
	must("+OK", "BF.RESERVE", "big", "0.001", "2000000") // 3.6 MB: many chunks
	must("+OK", "CF.RESERVE", "cf", "1000", "BUCKETSIZE", "2", "EXPANSION", "1")
	for i := 0; i < 20000; i++ {
		doArgs(s, c, "BF.ADD", "big", fmt.Sprint("a", i))
	}
	for i := 0; i < 2500; i++ { // several sub-filters
		doArgs(s, c, "CF.ADD", "cf", fmt.Sprint("c", i))
	}
	must(":1", "BF.ADD", "gone", "x")
	must(":1", "BF.ADD", "moved", "x")
	keys := []string{"big", "cf", "gone", "moved"}
	want := dumpAll(t, s, c, keys...)

	rs := startSnapshot(s)
	rs.read(t, 300<<10)
	// The writer is inside "big" now: change it ahead of and behind it.
	for i := 0; i < 20000; i++ {
		doArgs(s, c, "BF.ADD", "big", fmt.Sprint("b", i))
	}
	for i := 0; i < 2500; i += 2 {
		doArgs(s, c, "CF.DEL", "cf", fmt.Sprint("c", i))
	}
	must(":1", "DEL", "gone")
	must("+OK", "RENAME", "moved", "moved2")
	must(":1", "BF.ADD", "moved2", "y")
	must(":1", "BF.ADD", "new", "z")
	rs.read(t, 1<<20)
	must("+OK", "FLUSHALL")
	data := rs.finish(t)
	if rs.snap.Copied.Load() == 0 {
		t.Error("no chunk was copied on write: the test did not race the writer")
	}

	holdsPointInTime(t, data, nil, want, keys...)
}

// A snapshot of many small keys starts in O(1) and walks the keyspace
// while clients rename keys ahead of and behind the writer (and back),
// delete and re-create them, replace, expire and flush them: it holds
// exactly the keys of its point in time, each under the name it had then,
// with the value it had then.
func TestSnapshotManyKeysIsPointInTime(t *testing.T) {
	for _, flush := range []bool{false, true} {
		t.Run(fmt.Sprintf("flushall=%v", flush), func(t *testing.T) {
			s := startServer(t, Config{NoPersistence: true})
			c := &Session{authed: true}
			const n = 3000
			var keys []string
			for i := 0; i < n; i++ {
				k := fmt.Sprint("k", i)
				keys = append(keys, k)
				switch i % 3 {
				case 0:
					doArgs(s, c, "BF.ADD", k, fmt.Sprint("v", i))
				case 1:
					doArgs(s, c, "SET", k, fmt.Sprint("v", i))
				default:
					doArgs(s, c, "BF.RESERVE", k, "0.01", "100", "LAYOUT", "blocked", "SEED", "1")
					doArgs(s, c, "BF.ADD", k, fmt.Sprint("v", i))
				}
			}
			want := map[string]string{}
			for _, k := range keys {
				want[k] = keyState(t, s, c, k)
			}
			rs := startSnapshot(s)
			rs.read(t, 40<<10) // the writer is under way
			rng := rand.New(rand.NewPCG(1, 2))
			for i := 0; i < 4000; i++ {
				k := keys[rng.IntN(n)]
				switch rng.IntN(7) {
				case 0:
					doArgs(s, c, "RENAME", k, k+"-moved")
				case 1:
					doArgs(s, c, "RENAME", k+"-moved", k) // back
				case 2:
					doArgs(s, c, "DEL", k)
				case 3:
					doArgs(s, c, "SET", k, "new")
				case 4:
					doArgs(s, c, "BF.ADD", k, fmt.Sprint("x", i))
				case 5:
					doArgs(s, c, "PEXPIREAT", k, "1") // expired: gone at once
				case 6:
					doArgs(s, c, "RENAME", k, keys[rng.IntN(n)]) // over another
				}
				if i == 2000 && flush {
					doArgs(s, c, "FLUSHALL")
				}
			}
			data := rs.finish(t)
			s2 := startServer(t, Config{NoPersistence: true})
			_, got, err := loadSnapshot(s2, data)
			if err != nil || got != n {
				t.Fatalf("reading the snapshot: %d keys, %v", got, err)
			}
			c2 := &Session{authed: true}
			bad := 0
			for _, k := range keys {
				if st := keyState(t, s2, c2, k); st != want[k] {
					bad++
					if bad < 5 {
						t.Errorf("key %s: %q, at the point in time %q", k, st, want[k])
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d keys differ", bad, n)
			}
		})
	}
}

// keyState is a key's type and contents, for comparing keyspaces.
func keyState(t *testing.T, s *Server, c *Session, k string) string {
	t.Helper()
	typ := doArgs(s, c, "TYPE", k)
	switch {
	case strings.HasPrefix(typ, "+string"):
		return typ + doArgs(s, c, "GET", k)
	case strings.HasPrefix(typ, "+none"):
		return typ
	}
	return typ + dumpAll(t, s, c, k)[k]
}

// loadSnapshot reads a snapshot's bytes into a running server's keyspace,
// with the keyspace locked (the server's background expiry walks it).
func loadSnapshot(s *Server, data []byte) (uint64, int, error) {
	s.db.Lock()
	defer s.db.Unlock()
	return s.db.ReadSnapshot(&memReader{Reader: bytes.NewReader(data), size: int64(len(data))}, "mem")
}

// Chunks copied on write for a large filter live outside the Go heap, so
// a snapshot racing writes does not leave the heap (and the RSS the
// runtime keeps for it) grown by a copy of the filter.
func TestSnapshotCopiesOutsideHeap(t *testing.T) {
	if !keyspace.OffHeapCopies() {
		t.Skip("no anonymous mappings on this platform: copies stay on the heap")
	}
	s := startServer(t, Config{NoPersistence: true})
	c := &Session{authed: true}
	if got := doArgs(s, c, "BF.RESERVE", "big", "0.001", "10000000"); got != "+OK\r\n" { // 17 MiB
		t.Fatal(got)
	}
	rs := startSnapshot(s)
	// The writer waits for the pipe with the first block staged; every
	// add below lands in a chunk it still needs.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	args := [][]byte{[]byte("BF.ADD"), []byte("big"), nil}
	var r Reply
	for i := 0; i < 20000; i++ {
		args[2] = strconv.AppendInt(args[2][:0], int64(i), 10)
		r.Reset(false)
		s.Do(c, args, &r)
	}
	runtime.ReadMemStats(&after)
	copied := rs.snap.Copied.Load()
	if copied < 8<<20 {
		t.Fatalf("only %d bytes copied on write: the adds did not race the writer", copied)
	}
	if heap := int64(after.TotalAlloc - before.TotalAlloc); heap > copied/4 {
		t.Errorf("the heap grew by %d bytes while %d were copied on write: the copies are on the heap", heap, copied)
	}
	rs.finish(t)
	s.db.Lock()
	defer s.db.Unlock()
	if e := s.db.Lookup("big"); e.HoldsImage() || e.BF.Guard() != nil {
		t.Error("the filter still holds the snapshot's image")
	}
}

// racingSnapshot is a snapshot of a server being written into a pipe that
// the test drains by hand: the writer waits for the pipe between its holds
// of the lock, so the test's commands between reads race it.
type racingSnapshot struct {
	snap *keyspace.Snapshot
	pr   *io.PipeReader
	out  bytes.Buffer
	err  chan error
}

// startSnapshot begins a snapshot of s and starts its writer.
func startSnapshot(s *Server) *racingSnapshot {
	s.db.Lock()
	rs := &racingSnapshot{snap: s.db.BeginSnapshot(7), err: make(chan error, 1)}
	s.db.Unlock()
	pr, pw := io.Pipe()
	rs.pr = pr
	go func() {
		err := s.db.WriteSnapshot(pw, rs.snap)
		s.db.Lock()
		s.db.EndSnapshot(rs.snap)
		s.db.Unlock()
		pw.CloseWithError(err)
		rs.err <- err
	}()
	return rs
}

// read lets the writer go on by n bytes.
func (rs *racingSnapshot) read(t *testing.T, n int64) {
	t.Helper()
	if _, err := io.CopyN(&rs.out, rs.pr, n); err != nil {
		t.Fatal(err)
	}
}

// finish drains the rest and returns the snapshot's bytes.
func (rs *racingSnapshot) finish(t *testing.T) []byte {
	t.Helper()
	if _, err := io.Copy(&rs.out, rs.pr); err != nil {
		t.Fatal(err)
	}
	if err := <-rs.err; err != nil {
		t.Fatal(err)
	}
	return rs.out.Bytes()
}

// holdsPointInTime loads a snapshot's bytes into a fresh server (with the
// given clock) and checks that it holds exactly keys, each as want has it
// (dumpAll at the snapshot's point in time).
func holdsPointInTime(t *testing.T, data []byte, now func() time.Time, want map[string]string, keys ...string) {
	t.Helper()
	s2 := startServer(t, Config{NoPersistence: true, Now: now})
	if _, n, err := loadSnapshot(s2, data); err != nil || n != len(keys) {
		t.Fatalf("reading the snapshot: %d keys, %v", n, err)
	}
	got := dumpAll(t, s2, &Session{authed: true}, keys...)
	for _, k := range keys {
		if got[k] != want[k] {
			t.Errorf("key %s differs from its state when the snapshot started", k)
		}
	}
}
