//go:build !amd64

package batch

// Prefetch does nothing on this platform (see the amd64 version).
func Prefetch(*uint64) {}

// HasPrefetch reports whether Prefetch does anything on this platform.
const HasPrefetch = false

// PrefetchBits does nothing on this platform (see the amd64 version).
func PrefetchBits(w []uint64, pos []uint64) {}
