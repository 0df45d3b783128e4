package tdigest

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// DefaultCompression is RedisBloom's default compression.
const DefaultCompression = 100

// MaxCompression is the largest compression New accepts: a digest of it
// holds up to 6·MaxCompression + 10 centroids (16 bytes each).
const MaxCompression = 1 << 22

// exactSortLimit is the node count up to which the buffer is sorted in
// exactly RedisBloom's order (its quicksort, quadratic on repeated
// values); above it an O(n log n) sort is used.
const exactSortLimit = 4096

// Errors returned, wrapped with details, by the constructors and Add.
var (
	// ErrCompression: a compression below 1 or above MaxCompression.
	ErrCompression = errors.New("tdigest: compression out of range")
	// ErrValue: a NaN or infinite value.
	ErrValue = errors.New("tdigest: value is not a finite number")
	// ErrWeight: a weight below 1.
	ErrWeight = errors.New("tdigest: weight below 1")
	// ErrOverflow: the total weight would overflow a signed 64-bit count.
	ErrOverflow = errors.New("tdigest: total weight overflow")
)

// Digest is a merging t-digest. The zero value holds nothing; make digests
// with New or Read. A Digest is not safe for concurrent use: queries merge
// its buffer, so even they need exclusive access.
type Digest struct {
	compression  float64
	min, max     float64
	merged       int // merged centroids at the front of mean/weight
	unmerged     int // buffered values after them
	compressions int64
	mergedW      int64
	unmergedW    int64
	capacity     int // centroids the digest may hold; the arrays grow to it
	mean         []float64
	weight       []int64
}

// Capacity returns the number of centroids a digest of compression c
// holds: 6c + 10.
func Capacity(c int) int { return 6*c + 10 }

// New returns an empty digest of the given compression (1 to
// MaxCompression; DefaultCompression is RedisBloom's default).
func New(compression int) (*Digest, error) {
	if compression < 1 || compression > MaxCompression {
		return nil, fmt.Errorf("%w: %d, want 1 to %d", ErrCompression, compression, MaxCompression)
	}
	c := Capacity(compression)
	first := min(c, Capacity(DefaultCompression))
	d := &Digest{compression: float64(compression), capacity: c, mean: make([]float64, first), weight: make([]int64, first)}
	d.Reset()
	return d, nil
}

// Reset empties the digest, keeping its compression and memory.
func (d *Digest) Reset() {
	d.min = math.MaxFloat64
	d.max = -math.MaxFloat64
	d.merged, d.unmerged = 0, 0
	d.mergedW, d.unmergedW = 0, 0
	d.compressions = 0
}

// Compression returns the digest's compression.
func (d *Digest) Compression() float64 { return d.compression }

// Count returns the number of values added (the total weight).
func (d *Digest) Count() int64 { return d.mergedW + d.unmergedW }

// Min returns the smallest value added, or NaN if the digest is empty.
func (d *Digest) Min() float64 {
	if d.Count() == 0 {
		return math.NaN()
	}
	return d.min
}

// Max returns the largest value added, or NaN if the digest is empty.
func (d *Digest) Max() float64 {
	if d.Count() == 0 {
		return math.NaN()
	}
	return d.max
}

// Add adds one value.
func (d *Digest) Add(x float64) error { return d.AddWeighted(x, 1) }

// AddWeighted adds a value w times, as one centroid.
func (d *Digest) AddWeighted(x float64, w int64) error {
	if d.capacity == 0 {
		return errors.New("tdigest: the zero Digest holds nothing; make digests with New or Read")
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return fmt.Errorf("%w: %v", ErrValue, x)
	}
	if w < 1 {
		return fmt.Errorf("%w: %d", ErrWeight, w)
	}
	return d.add(x, w)
}

// add is td_add: buffer one centroid, merging first when the buffer is
// full.
func (d *Digest) add(x float64, w int64) error {
	if d.merged+d.unmerged >= d.capacity-1 {
		if err := d.compress(); err != nil {
			return err
		}
	}
	pos := d.merged + d.unmerged
	if pos >= d.capacity {
		return fmt.Errorf("%w: no room for a centroid", ErrOverflow)
	}
	if pos >= len(d.mean) {
		d.grow(pos + 1)
	}
	if d.unmergedW > math.MaxInt64-w {
		return ErrOverflow
	}
	nu := d.unmergedW + w
	if nu > math.MaxInt64-d.mergedW {
		return ErrOverflow
	}
	if x < d.min {
		d.min = x
	}
	if x > d.max {
		d.max = x
	}
	d.mean[pos] = x
	d.weight[pos] = w
	d.unmerged++
	d.unmergedW = nu
	return nil
}

// grow makes room for at least n centroids, doubling up to the capacity.
func (d *Digest) grow(n int) {
	size := min(d.capacity, max(n, 2*len(d.mean)))
	m := make([]float64, size)
	w := make([]int64, size)
	copy(m, d.mean)
	copy(w, d.weight)
	d.mean, d.weight = m, w
}

// Compress merges the buffered values into the centroids. Queries do it
// themselves; it is exported for callers that want to choose the moment.
func (d *Digest) Compress() error {
	if d.capacity == 0 {
		return nil
	}
	return d.compress()
}

// Compressions returns how many times the buffer has been merged.
func (d *Digest) Compressions() int64 { return d.compressions }

func (d *Digest) compress() error {
	if d.unmerged == 0 {
		return nil
	}
	n := d.merged + d.unmerged
	sortNodes(d.mean[:n], d.weight[:n])
	total := float64(d.mergedW) + float64(d.unmergedW)
	if total <= 1 {
		// RedisBloom's library leaves a lone value in the buffer (and
		// so answers NaN to quantiles until a second one arrives).
		return nil
	}
	denom := 2 * math.Pi * total * math.Log(total)
	if math.IsInf(denom, 1) {
		return ErrOverflow
	}
	norm := d.compression / denom
	if math.IsInf(norm, 1) {
		return ErrOverflow
	}
	m, w := d.mean, d.weight
	cur := 0
	so := 0.0
	for i := 1; i < n; i++ {
		proposed := float64(w[cur]) + float64(w[i])
		z := proposed * norm
		q0 := so / total
		q2 := (so + proposed) / total
		if z <= q0*(1-q0) && z <= q2*(1-q2) {
			w[cur] += w[i]
			delta := m[i] - m[cur]
			m[cur] += (delta * float64(w[i])) / float64(w[cur])
		} else {
			so += float64(w[cur])
			cur++
			w[cur] = w[i]
			m[cur] = m[i]
		}
		if cur != i {
			w[i] = 0
			m[i] = 0
		}
	}
	d.merged = cur + 1
	d.mergedW = int64(total)
	d.unmerged = 0
	d.unmergedW = 0
	d.compressions++
	return nil
}

// sortNodes sorts the parallel arrays by mean in the order RedisBloom's
// library leaves them (a quicksort with a middle pivot, which places equal
// means in a particular order, and equal means of different weights merge
// differently), or with an O(n log n) sort for large digests.
func sortNodes(m []float64, w []int64) {
	if len(m) < 2 {
		return
	}
	if len(m) > exactSortLimit {
		sort.Sort(nodes{m, w})
		return
	}
	quicksort(m, w, 0, len(m)-1)
}

type nodes struct {
	m []float64
	w []int64
}

func (n nodes) Len() int           { return len(n.m) }
func (n nodes) Less(i, j int) bool { return n.m[i] < n.m[j] }
func (n nodes) Swap(i, j int) {
	n.m[i], n.m[j] = n.m[j], n.m[i]
	n.w[i], n.w[j] = n.w[j], n.w[i]
}

// quicksort sorts m[lo..hi] (inclusive): the middle element is the pivot,
// moved to the end; a Lomuto pass gathers the strictly smaller means in
// front of it.
func quicksort(m []float64, w []int64, lo, hi int) {
	for lo < hi {
		if hi-lo == 1 {
			if m[lo] > m[hi] {
				m[lo], m[hi] = m[hi], m[lo]
				w[lo], w[hi] = w[hi], w[lo]
			}
			return
		}
		p := (lo + hi) / 2
		pivot := m[p]
		m[p], m[hi] = m[hi], m[p]
		w[p], w[hi] = w[hi], w[p]
		i := lo - 1
		for j := lo; j < hi; j++ {
			if m[j] < pivot {
				i++
				m[i], m[j] = m[j], m[i]
				w[i], w[j] = w[j], w[i]
			}
		}
		i++
		m[i], m[hi] = m[hi], m[i]
		w[i], w[hi] = w[hi], w[i]
		if i > lo {
			quicksort(m, w, lo, i-1)
		}
		lo = i + 1
	}
}

// Merge adds every centroid of o to d, merging both buffers first (so o's
// layout changes, not what it summarises). d keeps its compression; o may
// be d itself (every value then counts twice).
func (d *Digest) Merge(o *Digest) error {
	if d.capacity == 0 || o.capacity == 0 {
		return errors.New("tdigest: merging the zero Digest")
	}
	if err := d.compress(); err != nil {
		return err
	}
	if err := o.compress(); err != nil {
		return err
	}
	if o == d {
		// Adding to d rearranges the nodes being read.
		o = d.Clone()
	}
	n := o.merged + o.unmerged
	for i := range n {
		if err := d.add(o.mean[i], o.weight[i]); err != nil {
			return err
		}
	}
	return nil
}

// CDF returns the estimated fraction of values ≤ x (values equal to x count
// half), or NaN if the digest holds fewer than two values.
func (d *Digest) CDF(x float64) float64 {
	_ = d.Compress()
	n := d.merged
	if n == 0 {
		return math.NaN()
	}
	if x < d.min {
		return 0
	}
	if x > d.max {
		return 1
	}
	if n == 1 {
		width := d.max - d.min
		if x-d.min <= width {
			return 0.5
		}
		return (x - d.min) / width
	}
	m, w := d.mean, d.weight
	total := float64(d.mergedW)
	if x < m[0] {
		width := m[0] - d.min
		if width > 0 {
			if x == d.min {
				return 0.5 / total
			}
			return (1 + (x-d.min)/width*(float64(w[0])/2-1)) / total
		}
		return 0
	}
	if x > m[n-1] {
		width := d.max - m[n-1]
		if width > 0 {
			if x == d.max {
				return 1 - 0.5/total
			}
			dq := (1 + (d.max-x)/width*(float64(w[n-1])/2-1)) / total
			return 1 - dq
		}
		return 1
	}
	so := 0.0
	for i := 0; i < n-1; i++ {
		if m[i] == x {
			dw := 0.0
			for ; i < n && m[i] == x; i++ {
				dw += float64(w[i])
			}
			return (so + dw/2) / total
		}
		if m[i] <= x && x < m[i+1] {
			wl, wr := float64(w[i]), float64(w[i+1])
			ml, mr := m[i], m[i+1]
			if mr-ml > 0 {
				var leftEx, rightEx float64
				if wl == 1 {
					if wr == 1 {
						return (so + 1) / total
					}
					leftEx = 0.5
				} else if wr == 1 {
					rightEx = 0.5
				}
				dw := (wl + wr) / 2
				dwNo := dw - leftEx - rightEx
				base := so + wl/2 + leftEx
				return (base + dwNo*(x-ml)/(mr-ml)) / total
			}
			return (so + (wl+wr)/2) / total
		}
		so += float64(w[i])
	}
	return 1 - 0.5/total
}

// walk finds the value at index (a weight from the left) between
// centroids, continuing from *so and *pos so that ascending indexes cost
// one pass.
func (d *Digest) walk(index, leftW float64, n int, so *float64, pos *int) float64 {
	m, w := d.mean, d.weight
	if leftW > 1 && index < leftW/2 {
		return d.min + (index-1)/(leftW/2-1)*(m[0]-d.min)
	}
	total := float64(d.mergedW)
	if index > total-1 {
		return d.max
	}
	rightW := float64(w[n-1])
	rightM := m[n-1]
	if rightW > 1 && total-index <= rightW/2 {
		return d.max - (total-index-1)/(rightW/2-1)*(d.max-rightM)
	}
	for ; *pos < n-1; *pos++ {
		i := *pos
		wl, wr := float64(w[i]), float64(w[i+1])
		ml, mr := m[i], m[i+1]
		dw := (wl + wr) / 2
		if *so+dw > index {
			leftUnit := 0.0
			if wl == 1 {
				if index-*so < 0.5 {
					return ml
				}
				leftUnit = 0.5
			}
			rightUnit := 0.0
			if wr == 1 {
				if *so+dw-index <= 0.5 {
					return mr
				}
				rightUnit = 0.5
			}
			z1 := index - *so - leftUnit
			z2 := *so + dw - index - rightUnit
			return weightedAverage(ml, z2, mr, z1)
		}
		*so += dw
	}
	z1 := index - total - rightW/2
	z2 := rightW/2 - z1
	return weightedAverage(rightM, z1, d.max, z2)
}

func weightedAverage(x1, w1, x2, w2 float64) float64 {
	if !(x1 <= x2) {
		x1, w1, x2, w2 = x2, w2, x1, w1
	}
	x := (x1*w1 + x2*w2) / (w1 + w2)
	return cmax(x1, cmin(x, x2))
}

// cmax and cmin are C's ((x) > (y) ? (x) : (y)) and its mirror, which
// differ from math.Max and math.Min for NaN and signed zeros.
func cmax(x, y float64) float64 {
	if x > y {
		return x
	}
	return y
}

func cmin(x, y float64) float64 {
	if x < y {
		return x
	}
	return y
}

// Quantile returns the estimated value below which a fraction q of the
// values lie: the minimum for q·n < 1, the maximum near q = 1, NaN for q
// outside [0, 1] or a digest of fewer than two values (see the package
// doc).
func (d *Digest) Quantile(q float64) float64 {
	_ = d.Compress()
	if q < 0 || q > 1 || d.merged == 0 || math.IsNaN(q) {
		return math.NaN()
	}
	if d.merged == 1 {
		return d.mean[0]
	}
	index := q * float64(d.mergedW)
	if index < 1 {
		return d.min
	}
	leftW := float64(d.weight[0])
	so := leftW / 2
	pos := 0
	return d.walk(index, leftW, d.merged, &so, &pos)
}

// Quantiles answers many quantiles as RedisBloom's TDIGEST.QUANTILE does:
// each ascending run of qs in one pass over the centroids, without
// Quantile's special case for q·n < 1. The caller checks that every q is
// in [0, 1]. It returns out, grown to len(qs).
func (d *Digest) Quantiles(qs, out []float64) []float64 {
	_ = d.Compress()
	out = append(out[:0], make([]float64, len(qs))...)
	for i := 0; i < len(qs); i++ {
		start := i
		for i < len(qs)-1 && qs[i] <= qs[i+1] {
			i++
		}
		d.quantileRun(qs[start:i+1], out[start:i+1])
	}
	return out
}

func (d *Digest) quantileRun(qs, out []float64) {
	n := d.merged
	switch n {
	case 0:
		for i := range qs {
			out[i] = math.NaN()
		}
		return
	case 1:
		for i, q := range qs {
			if q < 0 || q > 1 {
				out[i] = math.NaN()
			} else {
				out[i] = d.mean[0]
			}
		}
		return
	}
	leftW := float64(d.weight[0])
	so := leftW / 2
	pos := 0
	for i, q := range qs {
		out[i] = d.walk(q*float64(d.mergedW), leftW, n, &so, &pos)
	}
}

// TrimmedMean returns the mean of the values between the lo and hi
// quantiles (0 ≤ lo < hi ≤ 1), NaN for an empty digest or cuts outside
// [0, 1].
func (d *Digest) TrimmedMean(lo, hi float64) float64 {
	_ = d.Compress()
	if d.merged == 0 || !(lo >= 0 && lo <= 1 && hi >= 0 && hi <= 1) {
		return math.NaN()
	}
	if d.merged == 1 {
		return d.mean[0]
	}
	total := float64(d.mergedW)
	left := math.Floor(total * lo)
	right := math.Ceil(total * hi)
	var done, sum, count float64
	for i := 0; i < d.merged; i++ {
		nw := float64(d.weight[i])
		add := nw
		add -= cmin(cmax(0, left-done), add)
		add = cmin(cmax(0, right-done), add)
		done += nw
		sum += d.mean[i] * add
		count += add
		if done >= right {
			break
		}
	}
	return sum / count
}

// Rank returns the estimated number of values below x plus half of those
// equal to it, rounded, as TDIGEST.RANK answers: -1 below the minimum,
// Count() above the maximum, -2 for an empty digest.
func (d *Digest) Rank(x float64) int64 { return d.rank(x, false) }

// RevRank returns the estimated number of values above x plus half of
// those equal to it, rounded, as TDIGEST.REVRANK answers: Count() below
// the minimum, -1 above the maximum, -2 for an empty digest.
func (d *Digest) RevRank(x float64) int64 { return d.rank(x, true) }

func (d *Digest) rank(x float64, rev bool) int64 {
	size := float64(d.Count())
	switch {
	case size == 0:
		return -2
	case x < d.min:
		if rev {
			return int64(size)
		}
		return -1
	case x > d.max:
		if rev {
			return -1
		}
		return int64(size)
	}
	abs := d.CDF(x) * size
	if rev {
		return cInt64(math.Round(size - math.Round(abs)))
	}
	return cInt64(halfRoundDown(abs))
}

// halfRoundDown rounds to the nearest integer, halves towards zero.
func halfRoundDown(f float64) float64 {
	ip, frac := math.Modf(f)
	if math.Abs(frac) <= 0.5 {
		return ip
	}
	if ip >= 0 {
		return ip + 1
	}
	return ip - 1
}

// cInt64 converts as x86-64 C does: NaN and out-of-range values become
// the minimum int64 (RedisBloom answers that for the rank of a digest of
// one value).
func cInt64(f float64) int64 {
	if math.IsNaN(f) || f >= 1<<63 || f < -(1<<63) {
		return math.MinInt64
	}
	return int64(f)
}

// ByRank returns the estimated value of rank r (0 is the minimum), as
// TDIGEST.BYRANK answers: +Inf for r ≥ Count(), NaN for an empty digest
// or a negative r.
func (d *Digest) ByRank(r int64) float64 { return d.byRank(r, false) }

// ByRevRank returns the estimated value of reverse rank r (0 is the
// maximum), as TDIGEST.BYREVRANK answers: -Inf for r ≥ Count(), NaN for an
// empty digest or a negative r.
func (d *Digest) ByRevRank(r int64) float64 { return d.byRank(r, true) }

func (d *Digest) byRank(r int64, rev bool) float64 {
	size := float64(d.Count())
	rf := float64(r)
	switch {
	case size == 0 || r < 0:
		return math.NaN()
	case r == 0:
		if rev {
			return d.max
		}
		return d.min
	case rf >= size:
		if rev {
			return math.Inf(-1)
		}
		return math.Inf(1)
	}
	if rev {
		rf = size - rf - 1
	}
	return d.Quantile(rf / size)
}

// Info describes a digest's layout, as TDIGEST.INFO reports it.
type Info struct {
	Compression       float64
	Capacity          int
	MergedNodes       int
	UnmergedNodes     int
	MergedWeight      int64
	UnmergedWeight    int64
	TotalCompressions int64
}

// Info returns the digest's layout without changing it.
func (d *Digest) Info() Info {
	return Info{d.compression, d.capacity, d.merged, d.unmerged, d.mergedW, d.unmergedW, d.compressions}
}

// MemoryUsage returns the bytes RedisBloom reports for a digest of this
// capacity (its two arrays and a pointer).
func (d *Digest) MemoryUsage() int { return 8 + 16*d.capacity }

// Clone returns an independent copy.
func (d *Digest) Clone() *Digest {
	c := *d
	c.mean = append([]float64(nil), d.mean...)
	c.weight = append([]int64(nil), d.weight...)
	return &c
}

// Equal reports whether two digests have the same state, bit for bit:
// compression, extremes, counters, and every centroid and buffered value.
func (d *Digest) Equal(o *Digest) bool {
	if math.Float64bits(d.compression) != math.Float64bits(o.compression) ||
		math.Float64bits(d.min) != math.Float64bits(o.min) || math.Float64bits(d.max) != math.Float64bits(o.max) ||
		d.merged != o.merged || d.unmerged != o.unmerged || d.compressions != o.compressions ||
		d.mergedW != o.mergedW || d.unmergedW != o.unmergedW || d.capacity != o.capacity {
		return false
	}
	for i := range d.merged + d.unmerged {
		if math.Float64bits(d.mean[i]) != math.Float64bits(o.mean[i]) || d.weight[i] != o.weight[i] {
			return false
		}
	}
	return true
}
