package server

import "time"

// The background goroutine: active expiry, the everysec fsync, save points,
// the retries after a log failure, and memory recounts.

// background runs active expiry, the everysec fsync, automatic snapshots,
// the retries of a failed log, and memory recounts.
func (s *Server) background() {
	defer s.bgWG.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	ticks := 0
	var retryAt time.Time
	retryWait := s.cfg.retryMin
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.bgBeat.Store(monoNow())
		}
		ticks++
		s.sampleRates()
		s.expireCycle()
		// Memory recount: a pass at most every 10 s, in steps of about
		// a millisecond of lock per tick.
		s.db.Lock()
		s.db.SetClock(s.db.Now()) // OBJECT IDLETIME's clock
		if s.db.Recounting() || ticks%100 == 0 {
			s.db.RecountStep(time.Millisecond)
		}
		s.db.Unlock()
		if s.aof == nil {
			continue
		}
		if ticks%10 == 0 {
			// The policy's once-a-second work (everysec: fsync).
			if err := s.aof.Tick(); err != nil {
				s.log.Error("append-only log failed; refusing writes (MISCONF) until a snapshot succeeds", "err", err)
			}
		}
		if s.aof.Failure() != nil {
			// The log cannot be trusted again: a snapshot must replace it.
			if now := time.Now(); now.After(retryAt) && !s.persist.saving.Load() {
				retryAt = now.Add(retryWait)
				retryWait = min(2*retryWait, time.Minute)
				s.startRewrite("append-only log failed")
			}
			continue
		}
		retryWait = s.cfg.retryMin
		if s.cfg.NoAppendLog && ticks%10 == 0 && !s.persist.saving.Load() && s.savePointDue() {
			s.log.Info("save point reached; writing a snapshot")
			s.startRewrite("save point")
		}
		if s.cfg.AutoSaveLogBytes > 0 && !s.persist.saving.Load() {
			size := s.aofSize()
			if size > s.cfg.AutoSaveLogBytes && size > s.persist.lastSnapSize.Load() {
				s.log.Info("append-only log is large; writing a snapshot", "log_bytes", size)
				s.startRewrite("log size")
			}
		}
	}
}

// defaultSavePoints are Redis's default save points (seconds, changes):
// with the log off, a snapshot is written once that many changes are that
// old.
var defaultSavePoints = [][2]int64{{3600, 1}, {300, 100}, {60, 10000}}

// savePointDue reports whether a save point is reached.
func (s *Server) savePointDue() bool {
	s.db.Lock()
	changes := int64(s.db.Dirty() - s.persist.dirtyAtSave.Load())
	s.db.Unlock()
	age := time.Now().Unix() - s.persist.lastSave.Load()
	for _, p := range *s.set.savePoints.Load() {
		if age >= p[0] && changes >= p[1] {
			return true
		}
	}
	return false
}

// expireCycle removes expired keys, sampling like Redis's active expiry,
// for at most 1 ms with the keyspace locked at a time and 25 ms a cycle.
func (s *Server) expireCycle() {
	began := time.Now()
	defer func() {
		d := time.Since(began)
		s.latency.add("expire-cycle", d)
		s.expireCycleNanos.Add(int64(d))
	}()
	deadline := began.Add(25 * time.Millisecond)
	for time.Now().Before(deadline) {
		s.db.Lock()
		stop := time.Now().Add(time.Millisecond)
		n := 0
		for time.Now().Before(stop) {
			got := s.db.ExpireSome(20)
			n += got
			if got < 20 {
				break
			}
		}
		more := n > 0 && time.Now().After(stop)
		s.db.Unlock()
		if !more {
			return
		}
	}
}
