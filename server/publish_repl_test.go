package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// PUBLISH on a master reaches the subscribers of its replicas (and of
// theirs), as in Redis; its reply counts the master's own receivers; it is
// not written to the log; and a PUBLISH sent to a replica stays there.
func TestPublishReachesReplicas(t *testing.T) {
	m := startServer(t, Config{})
	mc := dialRaw(t, m.Addr())
	r := startReplica(t, m, Config{})
	rc := dialRaw(t, r.Addr())
	chained := startReplica(t, r, Config{})
	cc := dialRaw(t, chained.Addr())
	mc.do("BF.ADD", "k", "1")
	waitSynced(t, mc, rc)
	waitSynced(t, rc, cc)
	onReplica, onChained := dialRaw(t, r.Addr()), dialRaw(t, chained.Addr())
	for _, sub := range []*rawConn{onReplica, onChained} {
		if got := sub.do("SUBSCRIBE", "news"); got != `["subscribe" "news" :1]` {
			t.Fatalf("SUBSCRIBE: %s", got)
		}
	}
	if got := mc.do("PUBLISH", "news", "from-master"); got != ":0" {
		t.Fatalf("PUBLISH on the master, no subscriber there: %s, want :0", got)
	}
	for name, sub := range map[string]*rawConn{"replica": onReplica, "chained replica": onChained} {
		if got := sub.read(); got != `["message" "news" "from-master"]` {
			t.Fatalf("%s's subscriber: %s", name, got)
		}
	}
	waitSynced(t, mc, rc) // the offsets still agree
	if got := rc.do("PUBLISH", "news", "local"); got != ":1" {
		t.Fatalf("PUBLISH on the replica: %s", got)
	}
	if got := onReplica.read(); got != `["message" "news" "local"]` {
		t.Fatalf("replica's subscriber, local message: %s", got)
	}
	mc.do("BF.ADD", "k", "2")
	waitSynced(t, mc, rc)
	waitSynced(t, rc, cc)
	// The chained replica got the master's message only: the next thing it
	// reads would be "local" if the replica had passed its own on.
	if got := cc.do("PUBLISH", "news", "probe"); got != ":1" {
		t.Fatalf("PUBLISH on the chained replica: %s", got)
	}
	if got := onChained.read(); got != `["message" "news" "probe"]` {
		t.Fatalf("chained replica's subscriber got %s, want its own probe (the replica's local message must not travel)", got)
	}
	// Nothing of it in the master's log.
	ents, _ := os.ReadDir(m.cfg.Dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".aof") {
			b, _ := os.ReadFile(filepath.Join(m.cfg.Dir, e.Name()))
			if strings.Contains(string(b), "from-master") {
				t.Fatalf("PUBLISH was logged in %s", e.Name())
			}
		}
	}
}
