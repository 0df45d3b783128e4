// Package bloom implements Bloom filters: compact sets that answer "have I
// seen this key?" with no false negatives and a false-positive rate chosen
// when the filter is sized.
//
// Three layouts share one API:
//
//   - Filter, the classic layout: m bits, k of them set per key. The fewest
//     bits for a given rate; a lookup touches up to k cache lines.
//   - Blocked: all k bits of a key in one 512-bit block (a cache line), so a
//     lookup costs one cache miss, for more bits: +3.5% at a 1% rate, +15%
//     at 0.01%, +35% at 0.0001%.
//   - SplitBlock: Parquet's split-block Bloom filter, bit for bit: eight
//     bits of a key in a 256-bit block, hashed with XXH64, so that its bits
//     are the bitset in a Parquet file and Parquet's are its.
//
// Three more types build on them:
//
//   - Counting: 4-bit counters instead of bits, so keys can be removed.
//   - Scalable: a chain of blocked filters that grows as keys arrive while
//     the compound false-positive rate stays at or below the one asked for.
//   - Window: "was this key added within the last T?", in rotating
//     generations driven by a clock that tests can fake.
//
// docs/filters.md has a table for choosing among them and the cuckoo
// package's filter.
//
// Size a filter from the number of distinct keys n you expect and the rate p
// you accept with New(n, p) or NewBlocked(n, p); Estimate and
// EstimateBlocked return the sizes without building anything, and
// NewFromParams(Params{M: m, K: k}) builds a filter of exactly m bits and k
// probes.
//
// Every key is hashed once, with XXH3-64 for a new Blocked and XXH3-128 for
// the other types (SplitBlock's hash is Parquet's, XXH64 with seed 0), and
// its k positions are derived from the hash. The hash, the derivation and
// the seed are part of the file format
// (docs/format.md), which WriteTo writes and ReadFrom and Read read as
// streams (a filter may be gigabytes; bytes.Buffer and bytes.Reader hold
// one in memory): a versioned header, the bits and a CRC-32C, so a filter saved today
// reads and answers identically in every later version, and damaged input is
// reported with a distinct error rather than half-used. Every type also
// implements encoding.BinaryMarshaler and Unmarshaler and json.Marshaler
// and Unmarshaler as thin wrappers over them (the binary form is the file;
// JSON holds it as a base64 string; gob uses the binary form), so a filter
// can be a field of a struct that is saved with encoding/json or gob.
//
// The zero value of a type is not a filter: it tests every key absent,
// reports zero Stats and fails to encode with ErrZero; an Add to it, which
// has no error to return, panics with a value wrapping ErrZero rather than
// drop the key. Make filters with the constructors or Read.
//
// The Test methods are safe for concurrent use. To add from many goroutines
// while others test, every goroutine uses the view f.Sync() of a Filter or
// Blocked (the same verbs, with atomic operations); other methods need
// exclusive access; see Filter (SplitBlock's view is a SplitBlockSync). Code
// that already holds a key's hash passes it to AddHash and TestHash
// (f.Params().HashKey computes it; SplitBlockHash for a SplitBlock); Locate
// and LocateBlock name the bits a key sets. A KeyHash remembers the hash
// function and seed that made it, and a filter of another kind refuses it
// (see KeyHash) rather than answer for bits the key never set. The cuckoo package uses the same names where it can:
// Test, Delete, Count(key) and Len() (uint64), Reset, Clone, WriteTo and
// ReadFrom; but its Add returns an error (a cuckoo filter can refuse a
// key), AddUnique takes the place of TestAndAdd and its Stats are its own,
// so a cuckoo.Filter is a Tester, not an Interface.
//
// # One verb set
//
// Every type has the same key methods: Add, Test and TestAndAdd take a
// []byte, and AddString, TestString and TestAndAddString a string, both
// hashed where they lie, never copied or allocated. Go has no generic
// methods, and f.Add([]byte(s)) copies a string longer than 32 bytes to
// the heap (Go elides the copy only for a callee it can prove leaves the
// bytes alone, which the XXH3 code is not), so the string forms stay
// methods. The batch forms, where a
// type parameter can do the work, are two generic functions for the three
// layouts and both key types: AddMany(f, keys) and TestMany(f, keys, dst).
// How full a filter is, in every figure, comes from one Stats call.
package bloom
