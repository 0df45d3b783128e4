package batch

// Prefetch asks the CPU to start loading the cache line at addr. Unlike a
// load it does not hold up the instructions after it, so a batch loop can
// start the cache misses of some keys while it hashes others.
//
//go:noescape
func Prefetch(addr *uint64)

// HasPrefetch reports whether Prefetch does anything on this platform;
// where it does not, a layout may load the words instead.
const HasPrefetch = true
