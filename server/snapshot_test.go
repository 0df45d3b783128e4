package server

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
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

	s.db.mu.Lock()
	snap := s.db.beginSnapshot(7)
	s.db.mu.Unlock()
	pr, pw := io.Pipe()
	go func() {
		err := s.writeSnapshot(pw, snap)
		s.db.mu.Lock()
		s.db.endSnapshot(snap)
		s.db.mu.Unlock()
		pw.CloseWithError(err)
	}()
	var out bytes.Buffer
	if _, err := io.CopyN(&out, pr, 300<<10); err != nil {
		t.Fatal(err)
	}
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
	if _, err := io.CopyN(&out, pr, 1<<20); err != nil {
		t.Fatal(err)
	}
	must("+OK", "FLUSHALL")
	if _, err := io.Copy(&out, pr); err != nil {
		t.Fatal(err)
	}
	if snap.copied.Load() == 0 {
		t.Error("no chunk was copied on write: the test did not race the writer")
	}

	s2 := startServer(t, Config{NoPersistence: true})
	data := out.Bytes()
	if _, n, err := s2.readSnapshot(&memReader{Reader: bytes.NewReader(data), size: int64(len(data))}, "mem"); err != nil || n != len(keys) {
		t.Fatalf("reading the snapshot: %d keys, %v", n, err)
	}
	got := dumpAll(t, s2, &Session{authed: true}, keys...)
	for _, k := range keys {
		if got[k] != want[k] {
			t.Errorf("key %s differs from its state when the snapshot started", k)
		}
	}
}
