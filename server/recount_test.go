package server

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/keyspace"
)

// The stepwise memory recount ends with the same number as a full recount
// however the keyspace changes between its steps: keys created, grown,
// deleted, renamed and compacted on both sides of its cursor.
func TestRecountSteps(t *testing.T) {
	s, err := New(Config{NoPersistence: true, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	c := &Session{authed: true}
	var r Reply
	do := func(args ...string) {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		s.Do(c, b, &r)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 1500; i++ {
		do("BF.ADD", fmt.Sprintf("b%d", i), "x")
		do("CF.ADD", fmt.Sprintf("c%d", i), "x")
	}
	for round := 0; round < 3; round++ {
		// Drift, as the unaccounted parts of growth leave it.
		s.db.Lock()
		s.db.Drift(12345)
		steps := 0
		for !s.db.RecountStep(time.Microsecond) {
			steps++
			cursor := s.db.RecountCursor()
			s.db.Unlock()
			// Grow a filter the pass has counted already.
			for k := 0; k < 1500; k++ {
				if key := fmt.Sprintf("b%d", k); keyspace.ScanHash(key) < cursor {
					for j := 0; j < 300; j++ {
						do("BF.ADD", key, fmt.Sprint(round, steps, j))
					}
					break
				}
			}
			for j := 0; j < 20; j++ {
				k := rng.IntN(2000)
				switch rng.IntN(6) {
				case 0:
					do("BF.ADD", fmt.Sprintf("b%d", k), fmt.Sprint(rng.Int())) // grows a filter now and then
				case 1:
					do("DEL", fmt.Sprintf("c%d", k))
				case 2:
					do("CF.RESERVE", fmt.Sprintf("n%d-%d", round, k), "5000")
				case 3:
					do("RENAME", fmt.Sprintf("b%d", k), fmt.Sprintf("r%d", k))
				case 4:
					do("CF.ADD", fmt.Sprintf("c%d", k), fmt.Sprint(rng.Int()))
				case 5:
					do("CF.COMPACT", fmt.Sprintf("c%d", k))
				}
			}
			s.db.Lock()
		}
		got := s.db.Used()
		s.db.Recount()
		want := s.db.Used()
		s.db.Unlock()
		t.Logf("round %d: %d steps", round, steps)
		if steps < 5 {
			t.Fatalf("round %d: the pass took only %d steps", round, steps)
		}
		if got != want {
			t.Fatalf("round %d: stepwise recount %d, full recount %d (%d steps)", round, got, want, steps)
		}
	}
}
