package keyspace

// What the server's tests look at inside the keyspace. They drive the
// keyspace through the server (real commands, real snapshots), so they
// live there and reach in only through these.

// Drift adds n bytes to the accounting that no value holds, as growth
// the accounting missed would; a recount must take them out again.
func (db *DB) Drift(n uint64) { db.used += n }

// RecountCursor is where the running recount pass has reached in scan
// order (a ScanHash).
func (db *DB) RecountCursor() uint64 { return db.pass.cursor }

// ScanHash is key's place in scan order (SCAN's cursor space).
func ScanHash(key string) uint64 { return scanHash(key) }

// OffHeapCopies reports whether copy-on-write copies of large filters
// are kept outside the Go heap on this platform.
func OffHeapCopies() bool {
	_, ok := mapAnon(cowMapMin)
	return ok
}

// HoldsImage reports whether e still holds a snapshot's image.
func (e *Entry) HoldsImage() bool { return e.img != nil }
