package batch

import "testing"

// PrefetchBits must accept any positions without faulting (it only hints
// the CPU) and read no more of pos than its length.
func TestPrefetchBits(t *testing.T) {
	w := make([]uint64, 4)
	PrefetchBits(w, nil)
	PrefetchBits(w, []uint64{0, 63, 64, 255})
	PrefetchBits(w, []uint64{256, 1 << 40, ^uint64(0)}) // beyond w
	pos := []uint64{0, 1, 2}
	PrefetchBits(w, pos[:0:0])
	PrefetchBits(nil, pos)
	Prefetch(&w[3])
}
