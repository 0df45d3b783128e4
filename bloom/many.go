package bloom

// Key is a key as the batch functions take it: bytes or a string, hashed
// where it lies, never copied.
type Key interface{ []byte | string }

// AddMany inserts every key into f, a *Filter, *Blocked or *SplitBlock. It
// hashes the
// keys ahead of probing them, asking the CPU to load their cache lines
// meanwhile, so that the cache misses of many keys overlap each other and
// the hashing; for a filter larger than the CPU's caches it is much faster
// than calling Add in a loop. The keys are []byte or string slices,
// neither copied.
//
// It is a function rather than a method because Go methods cannot take a
// type parameter: one AddMany serves both layouts and both key types,
// where methods took four per layout (AddMany, AddManyStrings, TestMany,
// TestManyStrings).
func AddMany[F *Filter | *Blocked | *SplitBlock, K Key](f F, keys []K) {
	addMany(f, keys)
}

// TestMany appends to dst, for each key in order, whether it may have been
// added to f, a *Filter, *Blocked or *SplitBlock, and returns the extended
// slice. Like
// AddMany it overlaps the cache misses of many keys with the hashing: at 100
// million keys it costs a quarter (Blocked) to a third (Filter) of a loop of
// Test calls. Pass dst[:0] of a reused slice to avoid allocating.
func TestMany[F *Filter | *Blocked | *SplitBlock, K Key](f F, keys []K, dst []bool) []bool {
	return testMany(f, keys, dst)
}
