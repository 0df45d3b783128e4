package server

import "github.com/bloomkit/bloomkit/server/internal/keyspace"

// runMerge runs a merge's job: at once when it is small, while replaying,
// inside MULTI/EXEC or for a session that cannot wait; otherwise in the
// background, with c's reply held until it is done.
func (s *Server) runMerge(c *Session, j *keyspace.MergeJob) {
	if j.Bytes() < keyspace.MergeAsyncBytes || s.db.Loading() || s.txn != nil || c == nil || !c.canWait {
		j.Finish()
		return
	}
	// On a thread of lower priority, as the snapshot writer: the event
	// loops get the CPU first when there is not enough for both.
	c.wait = s.db.Background(j, func(work func()) {
		go s.inBackgroundThread(func() error { work(); return nil })
	})
}
