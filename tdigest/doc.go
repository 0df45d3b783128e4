// Package tdigest implements a merging t-digest (Dunning and Ertl,
// "Computing Extremely Accurate Quantiles Using t-Digests", 2019): a small
// summary of a stream of numbers that answers quantiles, ranks, the CDF and
// trimmed means, most accurately in the tails.
//
// The digest keeps at most Capacity = 6·compression + 10 centroids (a mean
// and a weight each). Added values go to a buffer after the merged
// centroids; when the buffer fills, or before any query, everything is
// sorted and merged left to right, a neighbour joining a centroid while the
// joint weight w satisfies w·c/(2π·W·ln W) ≤ q(1−q) at both of its ends
// (c the compression, W the total weight, q the quantile). Queries
// interpolate between centroid midpoints, treating the first and last
// centroids as anchored at the exact minimum and maximum and a centroid of
// weight one as a single sample.
//
// The algorithm, its constants and its corner cases follow the C t-digest
// that RedisBloom's TDIGEST.* commands use, closely enough that a digest fed
// the same values, queried at the same moments, gives the same answers bit
// for bit: queries merge the buffer first, as RedisBloom's do, so a query
// changes the digest's layout (not what it summarises). Two quirks of that
// library are kept on purpose: a digest of exactly one value answers NaN to
// quantile and CDF queries until a second value arrives, and a value
// repeated across buffers keeps RedisBloom's sort order (for digests of up
// to 4096 centroids; larger ones sort in O(n log n) and may order equal
// means differently).
//
//	d, _ := tdigest.New(tdigest.DefaultCompression)
//	for _, ms := range latencies { d.Add(ms) }
//	p99 := d.Quantile(0.99)
//	share := d.CDF(250)            // fraction of values ≤ 250
//	mean := d.TrimmedMean(0.1, 0.9)
//
// Accuracy (tested across sizes and inputs in accuracy_test.go): with the
// default compression of 100, for any q the true rank of Quantile(q) is
// within 0.02·n of q·n and within 0.003·n beyond the 1st and 99th
// percentiles, and CDF(x) is within 0.025 of the exact fraction. On values
// of a few distinct levels the digest interpolates between levels: a
// quantile falls between the levels around the exact answer, and CDF is
// within 0.04.
//
// Digests are written and read in the bloomkit file format (docs/format.md,
// type 11) with WriteTo, and ReadFrom or Read; the file holds the exact
// state, buffer included, so a digest read back answers and evolves exactly
// as the one written.
package tdigest
