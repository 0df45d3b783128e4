package server

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// crashRestart stops s the way kill -9 leaves an appendfsync always server
// (every acknowledged write is in the log; no snapshot is written) and
// starts a new server on its directory with cfg (Dir is filled in).
func crashRestart(t *testing.T, s *Server, cfg Config) *Server {
	t.Helper()
	s.Close()
	cfg.Dir = s.cfg.Dir
	return startServer(t, cfg)
}

// An expiry in the past deletes the key at once; the log must say DEL, not
// PEXPIREAT <past> (replay never expires keys), or the old key comes back
// for the commands logged after it: start-up then fails, or answers
// differently from what clients were told.
func TestPastExpiryIsLoggedAsDel(t *testing.T) {
	for _, form := range []string{"EXPIRE %s -1", "PEXPIRE %s 0", "EXPIREAT %s 1", "PEXPIREAT %s 1000"} {
		t.Run(strings.Fields(form)[0], func(t *testing.T) {
			s := startServer(t, Config{AppendFsync: "always"})
			rc := dialRaw(t, s.Addr())
			runSteps(t, rc, []step{
				{"BF.RESERVE b 0.01 10", "+OK"},
				{"BF.ADD b old", ":1"},
				{fmt.Sprintf(form, "b"), ":1"},
				{"EXISTS b", ":0"},
				{"BF.RESERVE b 0.01 20", "+OK"},
				{"BF.ADD b new", ":1"},
				{"CF.ADD c a", ":1"},
				{fmt.Sprintf(form, "c"), ":1"},
				{"CF.ADD c b", ":1"},
			})
			s2 := crashRestart(t, s, Config{})
			runSteps(t, dialRaw(t, s2.Addr()), []step{
				{"BF.INFO b CAPACITY", "[:20]"},
				{"BF.EXISTS b old", ":0"},
				{"BF.EXISTS b new", ":1"},
				{"CF.EXISTS c a", ":0"},
				{"CF.EXISTS c b", ":1"},
				{"TTL b", ":-1"},
			})
		})
	}
}

// A key that expires by the clock is deleted with a DEL in the log, so a
// replay at any later time (when its PEXPIREAT has long passed) sees the
// later commands on that name as the live server did.
func TestExpiredKeyReplayIsClockIndependent(t *testing.T) {
	clock := newFakeClock(time.Unix(3_000_000, 0))
	s := startServer(t, Config{AppendFsync: "always", Now: clock.Now})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{
		{"CF.RESERVE c 1000", "+OK"},
		{"CF.ADD c a", ":1"},
		{"PEXPIRE c 1500", ":1"},
	})
	clock.Add(2 * time.Second)
	runSteps(t, rc, []step{
		{"CF.ADD c b", ":1"}, // a new default filter: the old one expired
		{"CF.INFO c", "[+Size :1080 +Number of buckets :512 +Number of filters :1 +Number of items inserted :1 +Number of items deleted :0 +Bucket size :2 +Expansion rate :1 +Max iterations :20]"},
	})
	clock.Add(-time.Hour) // the restarted server's clock is far behind
	s2 := crashRestart(t, s, Config{Now: clock.Now})
	runSteps(t, dialRaw(t, s2.Addr()), []step{
		{"CF.EXISTS c a", ":0"},
		{"CF.EXISTS c b", ":1"},
		{"TTL c", ":-1"},
	})
}

// A BF.MADD or BF.INSERT stopped part-way by --maxmemory is logged with the
// items it applied, not whole: the replay (which ignores the limit) must
// end where the clients were told it ended.
func TestPartialMultiAddIsLoggedAsApplied(t *testing.T) {
	cfg := Config{AppendFsync: "always", MaxMemory: 40 << 10}
	s := startServer(t, cfg)
	rc := dialRaw(t, s.Addr())
	items := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%d", prefix, i)
		}
		return out
	}
	check := func(rc *rawConn, cmd ...string) string { return rc.do(cmd...) }
	// BF.MADD onto an existing key, BF.MADD creating one, BF.INSERT with
	// options creating one, and CF.INSERT: each runs into the limit.
	rc.do("BF.RESERVE", "m", "0.01", "1000")
	replies := []string{}
	for _, cmd := range [][]string{
		append([]string{"BF.MADD", "m"}, items("m", 25000)...),
		append([]string{"BF.INSERT", "i", "CAPACITY", "500", "ERROR", "0.001", "EXPANSION", "3", "ITEMS"}, items("i", 25000)...),
		append([]string{"CF.INSERT", "c", "CAPACITY", "1000", "ITEMS"}, items("c", 25000)...),
		append([]string{"BF.MADD", "d"}, items("d", 25000)...),
	} {
		got := rc.do(cmd...)
		if !strings.Contains(got, "-") {
			t.Fatalf("%s did not reach --maxmemory: %.200s", cmd[0], got)
		}
		replies = append(replies, got)
	}
	var before []string
	for _, k := range []string{"m", "i", "d"} {
		before = append(before, check(rc, "BF.INFO", k), check(rc, "BF.CARD", k))
	}
	before = append(before, check(rc, "CF.INFO", "c"))
	s2 := crashRestart(t, s, cfg)
	rc2 := dialRaw(t, s2.Addr())
	var after []string
	for _, k := range []string{"m", "i", "d"} {
		after = append(after, check(rc2, "BF.INFO", k), check(rc2, "BF.CARD", k))
	}
	after = append(after, check(rc2, "CF.INFO", "c"))
	for i := range before {
		if before[i] != after[i] {
			t.Errorf("after restart:\n got  %s\n want %s", after[i], before[i])
		}
	}
	// The items answered 1 (or 0) are present; the rest were not added.
	if got := rc2.do("BF.EXISTS", "m", "m0"); got != ":1" {
		t.Errorf("BF.EXISTS m m0 = %s", got)
	}
}

// A window key's add is "new" by what the window holds, not by the
// replaying server's clock: an item re-added while an older generation
// still held it answered 0, so BF.CARD must not count it after a restart
// once that generation expired.
func TestWindowAddReplayIsClockIndependent(t *testing.T) {
	clock := newFakeClock(time.Unix(4_000_000, 0))
	s := startServer(t, Config{AppendFsync: "always", Now: clock.Now})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{
		{"BF.RESERVE w 0.01 1000 WINDOW 4s GENERATIONS 4", "+OK"},
		{"BF.ADD w a", ":1"},
	})
	clock.Add(3 * time.Second)
	runSteps(t, rc, []step{{"BF.ADD w a", ":0"}})
	clock.Add(2500 * time.Millisecond) // the generation that counted a expires
	want := []step{
		{"BF.CARD w", ":0"},
		{"BF.EXISTS w a", ":1"},
	}
	runSteps(t, rc, want)
	s2 := crashRestart(t, s, Config{Now: clock.Now})
	runSteps(t, dialRaw(t, s2.Addr()), want)
}
