package server

import "syscall"

// mapAnon maps n zero bytes outside the Go heap; pages become resident
// when first written.
func mapAnon(n int) ([]byte, bool) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	return b, err == nil
}

// discardAnon returns the whole pages of b to the kernel (they read as
// zeros afterwards). b starts on a chunk boundary of a page-aligned
// mapping, so only its tail can be a partial page; that stays resident
// until the mapping goes.
func discardAnon(b []byte) {
	page := syscall.Getpagesize()
	if len(b) < page {
		return
	}
	_ = syscall.Madvise(b[:len(b)/page*page], syscall.MADV_DONTNEED)
}

func unmapAnon(b []byte) { _ = syscall.Munmap(b) }
