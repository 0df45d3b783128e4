package bloom

// prefetch asks the CPU to start loading the cache line at addr. Unlike a
// load it does not hold up the instructions after it, so a batch can start
// the cache misses of its keys while it is still hashing them.
//
//go:noescape
func prefetch(addr *uint64)

const hasPrefetch = true
