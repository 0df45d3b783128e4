package bloom

import (
	"testing"
	"unsafe"
)

func unsafePointer(p *uint64) unsafe.Pointer { return unsafe.Pointer(p) }

// statistical marks a test that measures rates over millions of keys in
// one goroutine: the race detector has nothing to check in it and makes it
// 10-20 times slower, so it runs only without -race. The skip message says
// "without -race": make test's reporter (internal/testrun) runs exactly
// the tests that skipped so again, without the race detector.
func statistical(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("statistical test in one goroutine: runs without -race (make test reruns it so)")
	}
}
