package cuckoo

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/internal/mem"
)

// TestLargeTablesOnHugePages checks that a large table built from memory
// the runtime recycles (a large slice of non-zero words is freed first) is
// empty, and once touched is backed by huge pages: the runtime zeroes
// recycled memory itself, faulting it in as small pages, unless the
// allocator hands those pages back first.
func TestLargeTablesOnHugePages(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 150 MiB")
	}
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(b), "[never]") {
		t.Skip("transparent huge pages are not available here")
	}
	junk := make([]uint64, 96<<20/8)
	for i := range junk {
		junk[i] = ^uint64(i)
	}
	runtime.KeepAlive(junk)
	junk = nil
	runtime.GC()

	f, err := NewWith(Config{Buckets: 8 << 20}) // 4 slots of 8 bits: 32 MiB
	if err != nil {
		t.Fatal(err)
	}
	w := f.tables[0].words
	for i := range w {
		if w[i] != 0 {
			t.Fatalf("a new table's word %d is %#x", i, w[i])
		}
		w[i] = 0 // fault every page in
	}
	huge, span, err := mem.HugeBytes(w)
	if err != nil {
		t.Fatal(err)
	}
	if huge < span/2 {
		t.Errorf("%d of %d bytes of a new 32 MiB table on huge pages", huge, span)
	}
}
