// Package cuckoo implements a cuckoo filter: an approximate set (in fact a
// multiset) of keys that, unlike a Bloom filter, can delete keys and count
// them, in about as little memory as a Bloom filter of the same rate.
//
// A cuckoo filter keeps a short fingerprint of every key in one of two
// buckets that the key's hash chooses (Fan, Andersen, Kaminsky and
// Mitzenmacher, "Cuckoo Filter: Practically Better Than Bloom", 2014). A
// lookup compares the key's fingerprint with the slots of its two buckets;
// an insertion that finds both buckets full moves ("kicks") resident
// fingerprints to their other bucket until one lands in a free slot.
//
//	f, err := cuckoo.New(1_000_000)     // 1 million keys, ~3% false positives, 8.5 bits a key
//	f.AddString("alice")                // duplicates allowed (RedisBloom's CF.ADD)
//	f.AddUniqueString("alice")          // false: probably present already (CF.ADDNX)
//	f.TestString("alice")               // true
//	f.CountString("alice")              // 1 (an upper bound: fingerprints can collide)
//	f.DeleteString("alice")             // removes one occurrence
//
// When an insertion fails, because the kicks did not find a free slot
// within Config.MaxKicks moves, the filter grows by chaining a new table
// Config.Expansion times the size of the last one, unless Config.NoGrow is
// set, in which case Add returns an error wrapping ErrFull. Either way a
// failed insertion loses nothing: the moves it made are undone. With the
// default four slots a bucket, tables fill to about 95% before the first
// failure.
//
// Delete only keys that were added: deleting a key that was never added
// may remove the fingerprint of another key that shares it, and that key
// would then test absent. Deleting keys that were added never causes a
// false negative.
//
// Filters are written and read in the bloomkit file format
// (docs/format.md, docs/cuckoo.md) with WriteTo, and ReadFrom or Read.
package cuckoo
