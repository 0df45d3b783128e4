package cuckoo

import (
	"syscall"
	"unsafe"
)

// hugePageMin is the table size from which a table's words are backed by
// transparent huge pages where the kernel allows it (madvise mode): a lookup
// in a large table then misses the TLB far less often.
const hugePageMin = 8 << 20

// adviseHugePages asks the kernel to back w with 2 MiB pages. It is called
// before the words are first touched, so the pages are faulted in huge. A
// refusal (old kernel, THP disabled) changes nothing but speed.
func adviseHugePages(w []uint64) {
	if len(w)*8 < hugePageMin {
		return
	}
	const huge = 2 << 20
	b := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8)
	start := uintptr(unsafe.Pointer(&w[0]))
	lo := int((huge - start%huge) % huge) // the first 2 MiB boundary
	hi := lo + (len(b)-lo)/huge*huge      // the last one
	if hi <= lo {
		return
	}
	_ = syscall.Madvise(b[lo:hi], 14 /* MADV_HUGEPAGE */)
}
