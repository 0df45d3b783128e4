package server

import (
	"sync"
	"testing"
)

// A BGSAVE SCHEDULE that arrives after the running rewrite finished its
// work but before it stopped counting as running is not lost: it is
// answered "scheduled" and a second rewrite runs. (The finishing
// goroutine looked at the request before it cleared its running flag, and
// started the next from another goroutine that raced the same flag.)
func TestBGSaveScheduleNotDropped(t *testing.T) {
	s := startServer(t, Config{})
	rc, other := dialRaw(t, s.Addr()), dialRaw(t, s.Addr())
	scheduled := make(chan string, 1)
	var once sync.Once
	hook := func() {
		once.Do(func() { scheduled <- other.do("BGSAVE", "SCHEDULE") })
	}
	testHookRewriteDone.Store(&hook)
	defer testHookRewriteDone.Store(nil)
	before := s.persist.saves.Load()
	mustDo(t, rc, "+Background saving started", "BGSAVE")
	waitFor(t, func() bool { return s.persist.saves.Load() >= before+1 })
	waitFor(t, func() bool {
		return s.persist.saves.Load() == before+2 && !s.persist.saving.Load()
	})
	if got := <-scheduled; got != "+Background saving scheduled" {
		t.Errorf("BGSAVE SCHEDULE while a rewrite ends: %s", got)
	}
	if s.persist.scheduled.Load() {
		t.Error("aof_rewrite_scheduled still set after the scheduled rewrite ran")
	}
}
