// Package aof is the server's durability engine: the data directory and
// every file operation on it, the append-only log's format, group commit
// and the appendfsync policy, the chain of generations, and the snapshot
// file's creation, fsync and rename. It imports only the standard library;
// what a snapshot holds is the keyspace's business, what a logged command
// means the server's.
//
// # Files and how they change
//
// The data directory holds one chain of generations:
//
//	dump.<G>.bkdb        the snapshot: the keyspace at the start of generation G
//	appendonly.<G>.aof   the log: every write acknowledged during generation G
//
// Start-up loads the newest snapshot S (none: an empty keyspace, S = 1) and
// replays the logs S, S+1, … in order (OpenChain, Chain.Replay). A rewrite
// (BGSAVE, BGREWRITEAOF, SAVE, the automatic save and the shutdown save all
// are one) moves to generation G+1 in an order that keeps a complete
// (snapshot, logs) pair on disk at every instant:
//
//  1. appendonly.<G+1>.aof is created, its header fsynced, the directory
//     fsynced (CreateLog). Failing here changes nothing: the log of G keeps
//     going.
//  2. At one point in time (keyspace locked, a few microseconds) writes start
//     going to the new log (Log.Rotate) and the snapshot's image is fixed
//     (copy-on-write, in the keyspace). Until the snapshot is durable the
//     chain S…G+1 holds everything, because log G ends exactly where log
//     G+1 begins.
//  3. The snapshot is written to a temporary file, fsynced, renamed to
//     dump.<G+1>.bkdb, and the directory fsynced (WriteSnapshot). Failing
//     here leaves the chain S…G+1 intact; the next rewrite simply extends
//     it.
//  4. Only then are the files of generations before G+1 removed
//     (RemoveOlder).
//
// # The log and the policy
//
// Commands append records to the log's buffer under the keyspace lock, so
// the log's order is the order they took effect (Log.Append). Before a
// reply leaves, Log.Commit makes everything it depends on as durable as
// the policy promises — written, and with appendfsync always fsynced —
// once for every connection waiting (group commit); Log.Tick does the
// once-a-second part of everysec and no.
//
// A failed write or fsync of the log is sticky (see Log): the server
// refuses writes with MISCONF, serves reads, and tries a rewrite with
// growing pauses until one succeeds; that snapshot holds everything in
// memory, so the writes that were in doubt become durable with it
// (Log.Recover).
//
// # Faults
//
// Every file operation goes through Dir, so tests substitute a directory
// that fails a chosen operation at its Nth call or forgets everything that
// was not fsynced, as a power cut would.
package aof
