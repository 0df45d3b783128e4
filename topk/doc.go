// Package topk keeps the k heaviest items of a stream in fixed memory with
// HeavyKeeper, exactly as RedisBloom's TOPK does: the same buckets, hash
// (MurmurHash2, row number as seed, fingerprint seed 1919), decay table,
// min-heap and its sift-down, so a TopK answers TOPK.ADD, INCRBY, QUERY,
// COUNT and LIST as RedisBloom does wherever RedisBloom's answer does not
// depend on its random draws (an item alone in its buckets, or a decay of
// 1); where it does, the draws come from the TopK's own generator, whose
// state is saved with it, so a TopK replays identically.
//
// The promise, tested on Zipf, uniform and adversarial streams across
// sizes: an item's count is never overestimated while it shares no bucket
// (HeavyKeeper only decays other items' buckets), and with width ≥ 4k and
// depth ≥ 3, on a skewed stream, the reported list holds nearly all of the
// true k heaviest items (the tests require ≥ 90% recall for Zipf 1.1+) and
// each reported count is within 10% of the truth for the top items.
//
// A TopK is written in the bloomkit file format (type 10, hash id 5):
// WriteTo and ReadFrom, with the standard encoders wrapping them. Readers
// check both CRC-32C checksums and every field, and never allocate more
// than the input holds.
package topk

import "unsafe"

func sbytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
