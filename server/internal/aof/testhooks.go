package aof

// What the server's tests reach inside the log. They drive the log through
// the server (real commands over a real data directory), so they live
// there and reach in only through these.

// Break makes the log fail with err as a failed write or fsync would (a
// full disk): the failure is sticky and Failed reports it, so the server
// refuses writes until a rewrite succeeds.
func (a *Log) Break(err error) {
	a.ioMu.Lock()
	a.err = err
	a.ioMu.Unlock()
	a.failed.Store(true)
}
