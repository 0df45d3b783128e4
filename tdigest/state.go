package tdigest

import (
	"fmt"
	"math"
)

// State is a digest's exact contents, for encodings other than the
// bloomkit file (RedisBloom's RDB value, a server's snapshot): the first
// MergedNodes of Means and Weights are the merged centroids in ascending
// order, the rest the buffer in arrival order.
type State struct {
	Compression  float64
	Capacity     int // Capacity(int(Compression))
	Min, Max     float64
	MergedNodes  int
	Compressions int64
	Means        []float64
	Weights      []int64
}

// State returns a copy of the digest's contents.
func (d *Digest) State() State {
	n := d.merged + d.unmerged
	return State{
		Compression: d.compression, Capacity: d.capacity, Min: d.min, Max: d.max,
		MergedNodes: d.merged, Compressions: d.compressions,
		Means:   append([]float64(nil), d.mean[:n]...),
		Weights: append([]int64(nil), d.weight[:n]...),
	}
}

// FromState returns the digest of s after checking that its parts agree:
// compression and capacity, node counts within the capacity, weights of at
// least 1 whose sum fits an int64, finite means within [Min, Max]. Errors
// wrap ErrCorrupt or ErrTooLarge.
func FromState(s State) (*Digest, error) {
	if !(s.Compression >= 1 && s.Compression <= MaxCompression) {
		return nil, corrupt("compression %v", s.Compression)
	}
	if s.Capacity != Capacity(int(s.Compression)) {
		return nil, corrupt("capacity %d for compression %v", s.Capacity, s.Compression)
	}
	n := len(s.Means)
	if len(s.Weights) != n || n > s.Capacity || s.MergedNodes < 0 || s.MergedNodes > n {
		return nil, corrupt("%d means, %d weights, %d merged, capacity %d", n, len(s.Weights), s.MergedNodes, s.Capacity)
	}
	if s.Compressions < 0 || math.IsNaN(s.Min) || math.IsNaN(s.Max) {
		return nil, corrupt("counters or extremes")
	}
	d := &Digest{compression: s.Compression, capacity: s.Capacity, min: s.Min, max: s.Max,
		merged: s.MergedNodes, unmerged: n - s.MergedNodes, compressions: s.Compressions}
	size := max(n, min(d.capacity, Capacity(DefaultCompression)))
	d.mean, d.weight = make([]float64, size), make([]int64, size)
	var sums [2]int64
	for i := range n {
		m, w := s.Means[i], s.Weights[i]
		if math.IsNaN(m) || math.IsInf(m, 0) || m < s.Min || m > s.Max {
			return nil, corrupt("node %d has mean %v (extremes %v, %v)", i, m, s.Min, s.Max)
		}
		part := 0
		if i >= s.MergedNodes {
			part = 1
		}
		if w < 1 || sums[part] > math.MaxInt64-w {
			return nil, corrupt("node %d has weight %d", i, w)
		}
		sums[part] += w
		d.mean[i], d.weight[i] = m, w
	}
	if sums[0] > math.MaxInt64-sums[1] {
		return nil, corrupt("total weight overflows")
	}
	d.mergedW, d.unmergedW = sums[0], sums[1]
	if n == 0 && d.compressions == 0 && (s.Min != math.MaxFloat64 || s.Max != -math.MaxFloat64) {
		// Only an emptied digest has no nodes; its extremes are reset.
		return nil, fmt.Errorf("%w: empty digest with extremes %v, %v", ErrCorrupt, s.Min, s.Max)
	}
	return d, nil
}
