// Package cms is a Count-Min Sketch: the frequency of each item in a
// stream, estimated in fixed memory, never below the truth.
//
// A sketch has depth rows of width 32-bit counters. IncrBy adds to one
// counter in each row, chosen by the item's MurmurHash2 with the row number
// as seed, and Query answers the least of the item's counters. The layout,
// hash and arithmetic (saturation at 2^32 − 1, weighted merge and its
// overflow rules, INITBYPROB's dimensions) are RedisBloom's, so a sketch fed
// the same items answers exactly what RedisBloom's CMS.QUERY answers.
//
// The promise: with N the sum of every increment, an item's estimate
// exceeds its true count by more than 2N/width with probability at most
// 2^−depth (each row overestimates by more than 2N/width with probability
// at most 1/2, by Markov's inequality, and rows hash independently). The
// tests check it on Zipf, uniform and adversarial streams across sizes.
// Dimensions(ε, δ) picks width ⌈2/ε⌉ and depth ⌈log₂(1/δ)⌉ for an
// overestimate of at most εN with probability 1 − δ. Conservative update
// (Sketch.Conservative) keeps the same bound and is usually much tighter.
//
// Sketches are written in the bloomkit file format (type 9, hash id 5):
// WriteTo and ReadFrom, with the standard encoders wrapping them. Readers
// check both CRC-32C checksums and every field, and never allocate more
// than the input holds.
package cms

import "unsafe"

func sbytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
