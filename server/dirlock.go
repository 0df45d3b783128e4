package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockFileName is the file in a data directory whose advisory lock a
// server holds for as long as it runs: a second server (or `bloom
// check-log --fix`) on the same directory is refused instead of removing
// the first one's live log. The file holds the holder's process ID; it is
// never removed (removing it would let a newcomer lock a different file).
const LockFileName = "bloomkit.lock"

// ErrDirLocked is returned when another process holds a data directory.
var ErrDirLocked = errors.New("data directory in use")

// DirLock is a held lock on a data directory.
type DirLock struct{ f *os.File }

// LockDir takes the data directory's lock without waiting, creating the
// directory and the lock file if needed, and writes this process's ID into
// the file. When another process holds it the error wraps ErrDirLocked and
// names the directory and, when known, the holder's process ID. Offline
// tools that write in a data directory take it too.
func LockDir(dir string) (*DirLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("data directory lock: %w", err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("data directory lock %s: %w", path, err)
	}
	if !held {
		raw := make([]byte, 32)
		n, _ := f.ReadAt(raw, 0)
		f.Close()
		holder := "an unknown process"
		if pid, err := strconv.Atoi(strings.TrimSpace(string(raw[:n]))); err == nil && pid > 0 {
			holder = "process " + strconv.Itoa(pid)
		}
		abs, aerr := filepath.Abs(dir)
		if aerr != nil {
			abs = dir
		}
		return nil, fmt.Errorf("%s is used by %s (it holds %s): stop that server first, or give this one another directory: %w",
			abs, holder, LockFileName, ErrDirLocked)
	}
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if err := f.Truncate(0); err == nil {
		f.WriteAt(pid, 0) // informative only: the lock is what counts
	}
	return &DirLock{f: f}, nil
}

// Unlock releases the lock (closing the file releases it).
func (l *DirLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
