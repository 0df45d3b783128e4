package server

import (
	"strings"
	"testing"
)

// TestKeysManyStars: KEYS and SCAN MATCH with a pattern of many stars
// against a 60-byte key answer (the recursive matcher needed seconds for
// 6 stars and did not answer for 12, holding the keyspace lock).
func TestKeysManyStars(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	rc := dialRaw(t, s.Addr())
	key := strings.Repeat("a", 60)
	rc.do("SET", key, "v")
	p := strings.Repeat("a*", 20) + "b"
	if got := rc.do("KEYS", p); got != "[]" {
		t.Fatalf("KEYS: %s", got)
	}
	if got := rc.do("SCAN", "0", "MATCH", p, "COUNT", "100"); got != `["0" []]` {
		t.Fatalf("SCAN: %s", got)
	}
	if got := rc.do("KEYS", strings.Repeat("a*", 20)); got != `["`+key+`"]` {
		t.Fatalf("KEYS: %s", got)
	}
	if got := rc.do("CONFIG", "GET", strings.Repeat("*", 40)+"m*m*o*r*y*z"); got != "[]" {
		t.Fatalf("CONFIG GET: %s", got)
	}
	if got := rc.do("PING"); got != "+PONG" {
		t.Fatal(got)
	}
}
