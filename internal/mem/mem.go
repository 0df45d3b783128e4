// Package mem allocates the large word arrays of the filter packages: zeroed
// like make, and on Linux backed by transparent huge pages when they are
// large enough for that to matter, so that a lookup in a big filter misses
// the TLB far less often.
package mem

// HugePageMin is the array size in bytes from which Words asks for huge
// pages: below it an array spans too few 2 MiB pages to gain anything.
const HugePageMin = 8 << 20

// Words returns n zeroed words. Arrays of HugePageMin bytes or more are
// advised to be backed by huge pages (Linux, madvise or always mode); a
// kernel that refuses changes nothing but speed.
func Words(n uint64) []uint64 {
	w := make([]uint64, n)
	if n*8 >= HugePageMin {
		adviseHugePages(w)
	}
	return w
}
