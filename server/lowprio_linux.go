//go:build linux

package server

import (
	"runtime"
	"syscall"
)

// inBackgroundThread runs f on an OS thread of its own with a lower CPU
// priority (nice +10), and returns its error. The snapshot writer copies
// and checksums the whole keyspace and pushes it through the page cache;
// on a machine with as many busy threads as CPUs, the scheduler would
// otherwise make the event loops wait for the writer's time slices, and
// clients would see it. The thread is discarded afterwards (its goroutine
// exits while locked to it), so no other goroutine inherits the priority.
func (s *Server) inBackgroundThread(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETPRIORITY, 0 /* PRIO_PROCESS */, uintptr(syscall.Gettid()), 10); e != 0 {
			s.log.Debug("could not lower the snapshot writer's priority", "err", e)
		}
		done <- f()
		// No unlock: the thread ends with this goroutine.
	}()
	return <-done
}
