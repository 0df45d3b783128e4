package bloom

import (
	"syscall"
	"unsafe"
)

// hugePageMin is the size from which a filter's words are backed by
// transparent huge pages where the kernel allows it (madvise mode): a lookup
// in a large filter then misses the TLB far less often.
const hugePageMin = 8 << 20

// adviseHugePages asks the kernel to back w, which must be all zeros and
// not yet used, with 2 MiB pages. Memory the Go runtime takes fresh from the
// kernel is not yet faulted in, and the advice makes its first touch fault
// in huge pages. Memory the runtime recycles it has already zeroed, faulting
// it in as 4 KiB pages that the advice no longer changes (measured: 0 of 118
// MiB huge, and TestMany at 100 million keys 5–20 ns a key slower,
// bench/SPEED.md); those pages are handed back (MADV_DONTNEED), so that the
// range reads as zeros, as it is, and faults in huge on first touch too. A
// refusal (old kernel, THP disabled, no free huge pages) changes nothing but
// speed.
func adviseHugePages(w []uint64) {
	if len(w)*8 < hugePageMin {
		return
	}
	const huge = 2 << 20
	b := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8)
	start := uintptr(unsafe.Pointer(&w[0]))
	lo := int((huge - start%huge) % huge) // first 2 MiB boundary
	hi := lo + (len(b)-lo)/huge*huge      // last one
	if hi <= lo {
		return
	}
	r := b[lo:hi]
	if syscall.Madvise(r, 14 /* MADV_HUGEPAGE */) != nil || !resident(r) {
		return
	}
	_ = syscall.Madvise(r, syscall.MADV_DONTNEED)
}

// resident reports whether the first page of b (page-aligned) is in memory:
// whether the runtime has zeroed (touched) it already.
func resident(b []byte) bool {
	var vec [1]byte
	_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), 4096, uintptr(unsafe.Pointer(&vec[0])))
	return errno == 0 && vec[0]&1 != 0
}
