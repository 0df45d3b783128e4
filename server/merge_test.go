package server

import (
	"fmt"
	"strings"
	"testing"
)

// BF.MERGE: the union of filters with the same layout, into a new or an
// existing key; refused for different layouts and other types; kept across
// a restart (replayed from its one log record) and a snapshot.
func TestBFMerge(t *testing.T) {
	s := startServer(t, Config{AppendFsync: "always"})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{
		{"BF.RESERVE day1 0.01 1000", "+OK"},
		{"BF.RESERVE day2 0.01 1000", "+OK"},
		{"BF.RESERVE other 0.001 1000", "+OK"},
		{"CF.RESERVE cf 1000", "+OK"},
	})
	for i := 0; i < 300; i++ {
		rc.do("BF.ADD", "day1", fmt.Sprint("a", i))
		rc.do("BF.ADD", "day2", fmt.Sprint("b", i))
	}
	rc.do("BF.ADD", "day2", "a0") // in both
	runSteps(t, rc, []step{
		{"BF.MERGE week day1 day2", "+OK"},
		{"BF.MEXISTS week a0 a299 b0 b299", "[:1 :1 :1 :1]"},
		{"BF.MERGE day1 other", "-" + strings.TrimPrefix(errLayoutText(), "-")},
		{"BF.MERGE day1 cf", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"BF.MERGE day1 missing", "-ERR not found"},
		{"BF.MERGE cf day1", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"BF.MERGE day1 day2", "+OK"}, // into an existing key
		{"BF.EXISTS day1 b150", ":1"},
	})
	card := rc.do("BF.CARD", "week")
	if card != ":600" && card != ":599" && card != ":601" {
		t.Errorf("BF.CARD after merging 300 + 301 items with one in common: %s (want about 600)", card)
	}
	// Adding to the merged filter still works (and may grow it).
	if got := rc.do("BF.ADD", "week", "new"); got != ":1" {
		t.Errorf("BF.ADD after merge: %s", got)
	}
	dump := rc.do("BF.SCANDUMP", "week", "0")
	s2 := restart(t, s, false) // replay of the log
	rc2 := dialRaw(t, s2.Addr())
	runSteps(t, rc2, []step{
		{"BF.SCANDUMP week 0", dump},
		{"BF.MEXISTS week a7 b7 new", "[:1 :1 :1]"},
		{"BF.EXISTS day1 b150", ":1"},
	})
	s3 := restart(t, s2, true) // from a snapshot
	if got := dialRaw(t, s3.Addr()).do("BF.SCANDUMP", "week", "0"); got != dump {
		t.Errorf("after a snapshot: %s", got)
	}
}

func errLayoutText() string {
	return "ERR filters differ in layout: only filters created with the same capacity, error rate, expansion and options, grown to the same number of links, can be merged"
}
