package server

import "github.com/bloomkit/bloomkit/server/internal/aof"

// LockFileName is the file in a data directory whose advisory lock a
// server holds for as long as it runs: a second server (or `bloom
// check-log --fix`) on the same directory is refused instead of removing
// the first one's live log. The file holds the holder's process ID; it is
// never removed (removing it would let a newcomer lock a different file).
const LockFileName = aof.LockFileName

// ErrDirLocked is returned when another process holds a data directory.
var ErrDirLocked = aof.ErrDirLocked

// DirLock is a held lock on a data directory.
type DirLock = aof.DirLock

// LockDir takes the data directory's lock without waiting, creating the
// directory and the lock file if needed, and writes this process's ID into
// the file. When another process holds it the error wraps ErrDirLocked and
// names the directory and, when known, the holder's process ID. Offline
// tools that write in a data directory take it too.
func LockDir(dir string) (*DirLock, error) { return aof.LockDir(dir) }
