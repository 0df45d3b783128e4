package mem

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// thpMadvise reports whether the kernel backs advised memory with huge
// pages (mode "always" or "madvise").
func thpMadvise(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(b), "[never]") {
		t.Skip("transparent huge pages are not available here")
	}
}

// recycle leaves freed, already-touched memory with the runtime, so that
// the next large allocation is likely to reuse pages it has zeroed itself.
func recycle() {
	junk := make([]uint64, 96<<20/8)
	for i := range junk {
		junk[i] = ^uint64(i)
	}
	runtime.KeepAlive(junk)
	junk = nil
	runtime.GC()
}

// TestWordsHugeOnRecycledMemory checks that a large array is zero and,
// once touched, backed by huge pages even when the runtime hands out memory
// it has recycled (and so already faulted in as small pages).
func TestWordsHugeOnRecycledMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 150 MiB")
	}
	thpMadvise(t)
	for round := range 2 {
		recycle()
		w := Words(32 << 20 / 8)
		for i := range w {
			if w[i] != 0 {
				t.Fatalf("round %d: word %d is %#x", round, i, w[i])
			}
			w[i] = uint64(i) // touch every page
		}
		huge, span, err := HugeBytes(w)
		if err != nil {
			t.Fatal(err)
		}
		if huge < span/2 {
			t.Errorf("round %d: %d of %d bytes on huge pages", round, huge, span)
		}
		runtime.KeepAlive(w)
	}
}

// TestWordsSmall checks that small arrays are plain zeroed slices.
func TestWordsSmall(t *testing.T) {
	for _, n := range []uint64{0, 1, 7, 1000} {
		w := Words(n)
		if uint64(len(w)) != n || uint64(cap(w)) != n {
			t.Fatalf("Words(%d): len %d cap %d", n, len(w), cap(w))
		}
		for _, x := range w {
			if x != 0 {
				t.Fatalf("Words(%d) is not zeroed", n)
			}
		}
	}
}
