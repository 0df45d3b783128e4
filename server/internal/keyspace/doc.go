// Package keyspace is the server's data: one table of keys to values
// (RedisBloom's Bloom and cuckoo filters, strings, and bloomkit's own
// filters in NativeFilter), with expiry, the scan order SCAN and the
// snapshot walk follow, and the memory accounted against --maxmemory.
//
// Everything is done with the keyspace locked (DB.Lock), like Redis's
// single thread. The accounting counters (memory used, the limit, changes
// since start-up, keys, loading) change only through DB's methods: a
// handler that changes a value asks the keyspace to Allow the memory
// first and tells it about changes it cannot see (DB.Changed).
//
// Snapshots are copy-on-write images: DB.BeginSnapshot fixes a point in
// time in O(1); DB.WriteSnapshot walks the keys in scan order, a few
// hundred KiB per hold of the lock, while a write about to change an entry
// the walk has not reached preserves its image first (DB.Preserve). The
// snapshot's encoding (DB.WriteSnapshot, DB.ReadSnapshot) is here; the
// file it goes into, and when, belong to the durability engine
// (internal/aof) and the server.
package keyspace
