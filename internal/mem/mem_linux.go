package mem

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

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
	r := hugeRange(w)
	if r == nil {
		return
	}
	if syscall.Madvise(r, 14 /* MADV_HUGEPAGE */) != nil || !resident(r) {
		return
	}
	_ = syscall.Madvise(r, syscall.MADV_DONTNEED)
}

// hugeRange returns the part of w between its first and last 2 MiB
// boundaries, or nil when there is none.
func hugeRange(w []uint64) []byte {
	const huge = 2 << 20
	if len(w) == 0 {
		return nil
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8)
	start := uintptr(unsafe.Pointer(&w[0]))
	lo := int((huge - start%huge) % huge) // first 2 MiB boundary
	hi := lo + (len(b)-lo)/huge*huge      // last one
	if hi <= lo {
		return nil
	}
	return b[lo:hi]
}

// resident reports whether the first page of b (page-aligned) is in memory:
// whether the runtime has zeroed (touched) it already.
func resident(b []byte) bool {
	var vec [1]byte
	_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), 4096, uintptr(unsafe.Pointer(&vec[0])))
	return errno == 0 && vec[0]&1 != 0
}

// HugeBytes returns how many bytes of the memory mappings that hold w's
// huge-page range are backed by huge pages now (AnonHugePages in
// /proc/self/smaps), and the size of that range. It is for tests and
// diagnostics: a mapping may extend past w, so the count is an upper bound
// for w alone.
func HugeBytes(w []uint64) (huge, span int64, err error) {
	r := hugeRange(w)
	if r == nil {
		return 0, 0, nil
	}
	lo := uint64(uintptr(unsafe.Pointer(&r[0])))
	hi := lo + uint64(len(r))
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, int64(len(r)), err
	}
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		if a, b, ok := mappingRange(line); ok {
			in = a < hi && b > lo
			continue
		}
		if v, ok := strings.CutPrefix(line, "AnonHugePages:"); in && ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, int64(len(r)), fmt.Errorf("mem: smaps line %q: %w", line, err)
			}
			huge += kb << 10
		}
	}
	return huge, int64(len(r)), nil
}

// mappingRange parses the "start-end perms ..." line that opens a mapping
// in /proc/self/smaps.
func mappingRange(line string) (lo, hi uint64, ok bool) {
	addr, _, found := strings.Cut(line, " ")
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(addr, "-")
	if !found {
		return 0, 0, false
	}
	lo, err1 := strconv.ParseUint(a, 16, 64)
	hi, err2 := strconv.ParseUint(b, 16, 64)
	return lo, hi, err1 == nil && err2 == nil
}
