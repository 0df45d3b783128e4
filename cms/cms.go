package cms

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/bloomkit/bloomkit/internal/murmur2"
)

// MaxCells is the most counters a sketch may have (width × depth): 1 TiB
// of counters, the file format's payload limit.
const MaxCells = (format.MaxPayload - 8) / 4

// Errors returned, wrapped with details.
var (
	// ErrInvalidParams: a width, depth, error or probability out of range.
	ErrInvalidParams = errors.New("cms: invalid parameters")
	// ErrMismatch: sketches of different width or depth cannot merge.
	ErrMismatch = errors.New("cms: width/depth is not equal")
	// ErrOverflow: a weighted merge would take a counter, or the total
	// count, outside what it can hold; nothing was changed.
	ErrOverflow = errors.New("cms: merge overflow")
)

// Sketch is a Count-Min Sketch: depth rows of width 32-bit counters. An
// item adds to one counter in each row, the one its MurmurHash2 with the
// row number as seed picks; its estimate is the least of its counters.
// The methods are not safe for concurrent use.
type Sketch struct {
	width, depth uint64
	count        uint64   // sum of every increment (RedisBloom's "count")
	counters     []uint32 // row after row
	// Conservative makes IncrBy raise only the counters that must rise:
	// each of the item's counters becomes at least (old estimate + n),
	// and none goes up by more. Estimates are never below the truth and
	// usually much closer to it; a sketch written with it merges and
	// answers like any other. RedisBloom's CMS.INCRBY does not use it.
	Conservative bool
}

// New returns an empty sketch of depth rows of width counters each.
func New(width, depth uint64) (*Sketch, error) {
	if err := checkDims(width, depth); err != nil {
		return nil, err
	}
	return &Sketch{width: width, depth: depth, counters: make([]uint32, width*depth)}, nil
}

func checkDims(width, depth uint64) error {
	if width < 1 || depth < 1 {
		return fmt.Errorf("%w: width %d, depth %d (both at least 1)", ErrInvalidParams, width, depth)
	}
	if width > MaxCells/depth {
		return fmt.Errorf("%w: %d × %d counters, the limit is %d", format.ErrTooLarge, width, depth, uint64(MaxCells))
	}
	return nil
}

// Dimensions returns the width and depth RedisBloom's CMS.INITBYPROB
// chooses for an overestimate of at most errRate × the total count with
// probability at least 1 − prob: width ⌈2/errRate⌉ and depth
// ⌈log10(prob)/log10(0.5)⌉, the logarithms taken in single precision as
// RedisBloom takes them. Both arguments must lie in (0, 1).
func Dimensions(errRate, prob float64) (width, depth uint64, err error) {
	if !(errRate > 0 && errRate < 1) || !(prob > 0 && prob < 1) {
		return 0, 0, fmt.Errorf("%w: error %v and probability %v must lie in (0, 1)", ErrInvalidParams, errRate, prob)
	}
	w := math.Ceil(2 / errRate)
	if w >= 1<<63 {
		return 0, 0, fmt.Errorf("%w: error %v needs %v counters a row", format.ErrTooLarge, errRate, w)
	}
	lp := float32(math.Log10(float64(float32(prob))))
	lh := float32(math.Log10(0.5))
	return uint64(w), uint64(math.Ceil(float64(lp / lh))), nil
}

// NewWithEstimates returns an empty sketch sized by Dimensions.
func NewWithEstimates(errRate, prob float64) (*Sketch, error) {
	w, d, err := Dimensions(errRate, prob)
	if err != nil {
		return nil, err
	}
	return New(w, d)
}

// FromCounters returns a sketch over counters (row after row, width ×
// depth of them; the sketch keeps the slice) whose increments total count:
// a sketch restored from a saved form.
func FromCounters(width, depth, count uint64, counters []uint32) (*Sketch, error) {
	if err := checkDims(width, depth); err != nil {
		return nil, err
	}
	if uint64(len(counters)) != width*depth {
		return nil, fmt.Errorf("%w: %d counters for %d × %d", ErrInvalidParams, len(counters), width, depth)
	}
	return &Sketch{width: width, depth: depth, count: count, counters: counters}, nil
}

// Width is the number of counters in a row.
func (s *Sketch) Width() uint64 { return s.width }

// Depth is the number of rows.
func (s *Sketch) Depth() uint64 { return s.depth }

// Count is the sum of every increment (CMS.INFO's count); it wraps at
// 2^64 where RedisBloom's does.
func (s *Sketch) Count() uint64 { return s.count }

// Counters is the sketch's counters, row after row: the live slice, not a
// copy. A caller that writes to it changes the sketch.
func (s *Sketch) Counters() []uint32 { return s.counters }

// Index is the position in Counters of item's counter in row i.
func (s *Sketch) Index(item []byte, i uint64) uint64 {
	return uint64(murmur2.Sum32(item, uint32(i)))%s.width + i*s.width
}

// rowsAtOnce is the depth up to which an item's row hashes are computed
// together (murmur2.SumRows).
const rowsAtOnce = 16

// cells calls fn with the position of item's counter in each row, row 0
// first.
func (s *Sketch) cells(item []byte, fn func(j uint64)) {
	if s.depth > rowsAtOnce {
		for i := range s.depth {
			fn(s.Index(item, i))
		}
		return
	}
	var buf [rowsAtOnce]uint32
	hs := buf[:s.depth]
	murmur2.SumRows(item, hs)
	if s.width <= math.MaxUint32 {
		w := uint32(s.width)
		for i, h := range hs {
			fn(uint64(h%w) + uint64(i)*s.width)
		}
		return
	}
	for i, h := range hs {
		fn(uint64(h)%s.width + uint64(i)*s.width)
	}
}

// IncrBy adds n to item's count and returns its new estimate. A counter
// that would pass 2^32 − 1 stays there; an estimate of math.MaxUint32
// means the item's counters are saturated (CMS.INCRBY's "overflow").
func (s *Sketch) IncrBy(item []byte, n uint64) uint32 {
	if s.counters == nil {
		return 0
	}
	if s.Conservative {
		return s.incrConservative(item, n)
	}
	est := uint32(math.MaxUint32)
	s.cells(item, func(j uint64) {
		c := &s.counters[j]
		v := *c + uint32(n)
		if uint64(v) < n {
			v = math.MaxUint32
		}
		*c = v
		est = min(est, v)
	})
	s.count += n
	return est
}

func (s *Sketch) incrConservative(item []byte, n uint64) uint32 {
	target := uint64(s.Query(item)) + n
	if target > math.MaxUint32 {
		target = math.MaxUint32
	}
	s.cells(item, func(j uint64) {
		if uint64(s.counters[j]) < target {
			s.counters[j] = uint32(target)
		}
	})
	s.count += n
	return uint32(target)
}

// IncrByString is IncrBy of a string's bytes.
func (s *Sketch) IncrByString(item string, n uint64) uint32 { return s.IncrBy(sbytes(item), n) }

// Add is IncrBy(item, 1).
func (s *Sketch) Add(item []byte) uint32 { return s.IncrBy(item, 1) }

// Query returns item's estimated count: never below the true count, and
// above it by at most 2 × Count / Width with probability at least
// 1 − 2^−Depth.
func (s *Sketch) Query(item []byte) uint32 {
	if s.counters == nil {
		return 0
	}
	est := uint32(math.MaxUint32)
	s.cells(item, func(j uint64) { est = min(est, s.counters[j]) })
	return est
}

// QueryString is Query of a string's bytes.
func (s *Sketch) QueryString(item string) uint32 { return s.Query(sbytes(item)) }

// Merge sets s to the weighted sum of srcs (s may be among them), as
// CMS.MERGE does: every counter becomes Σ weights[k] × srcs[k]'s, and the
// count Σ weights[k] × srcs[k].Count(). weights may be nil (all 1);
// negative weights subtract. Every source must have s's width and depth
// (ErrMismatch). A counter outside [0, 2^32 − 1], or a count outside
// [0, 2^63 − 1], at any step fails with ErrOverflow and changes nothing.
func (s *Sketch) Merge(srcs []*Sketch, weights []int64) error {
	m, err := s.PrepareMerge(srcs, weights)
	if err != nil {
		return err
	}
	m.Write(0, m.Cells())
	m.Finish()
	return nil
}

// A Merger is a Merge that passed its checks, done in steps: Write sets
// a range of counters, Finish the count. Until Finish, nothing may change
// the sketches involved, and no one may read the destination.
type Merger struct {
	s     *Sketch // the destination
	srcs  []*Sketch
	ws    []int64
	small bool // Σ |weights| below 2^31: no sum can leave int64
	count uint64
}

// PrepareMerge makes every check Merge makes, changing nothing, and
// returns the Merger that does the merge.
func (s *Sketch) PrepareMerge(srcs []*Sketch, weights []int64) (*Merger, error) {
	if s.counters == nil {
		return nil, format.ErrZero
	}
	if weights != nil && len(weights) != len(srcs) {
		return nil, fmt.Errorf("%w: %d weights for %d sketches", ErrInvalidParams, len(weights), len(srcs))
	}
	for _, src := range srcs {
		if src.width != s.width || src.depth != s.depth {
			return nil, fmt.Errorf("%w: %d × %d into %d × %d", ErrMismatch, src.width, src.depth, s.width, s.depth)
		}
	}
	m := &Merger{s: s, srcs: srcs, ws: make([]int64, len(srcs))}
	var sumW uint64 // Σ |weights[k]|, capped
	for k := range srcs {
		m.ws[k] = 1
		if weights != nil {
			m.ws[k] = weights[k]
		}
		a := uint64(m.ws[k])
		if m.ws[k] < 0 {
			a = -a
		}
		sumW = min(sumW+min(a, 1<<32), 1<<32)
	}
	total, err := mergedCount(srcs, m.ws)
	if err != nil {
		return nil, err
	}
	m.count = uint64(total)
	// Check every counter first, as RedisBloom does, so that a failure
	// changes nothing.
	m.small = sumW < 1<<31
	if m.small {
		// No partial sum can leave int64 (each counter is below 2^32 and
		// Σ |weights| below 2^31): only the result's range needs checking,
		// a block of counters at a time, every source's row read in order.
		if !m.blocks(0, len(s.counters), false) {
			return nil, ErrOverflow
		}
		return m, nil
	}
	for j := range s.counters {
		var sum int64
		for k, src := range srcs {
			p, ok := mul64(int64(src.counters[j]), m.ws[k])
			if !ok {
				return nil, ErrOverflow
			}
			if sum, ok = add64(sum, p); !ok {
				return nil, ErrOverflow
			}
		}
		if sum < 0 || sum > math.MaxUint32 {
			return nil, ErrOverflow
		}
	}
	return m, nil
}

// Cells is the number of counters the merge sets.
func (m *Merger) Cells() int { return len(m.s.counters) }

// Write sets the destination's counters from to to (exclusive) to their
// weighted sums. Each counter must be written once.
func (m *Merger) Write(from, to int) {
	if m.small {
		m.blocks(from, to, true)
		return
	}
	for j := from; j < to; j++ {
		var sum int64
		for k, src := range m.srcs {
			sum += int64(src.counters[j]) * m.ws[k]
		}
		m.s.counters[j] = uint32(sum)
	}
}

// Finish sets the destination's count, once every counter is written.
func (m *Merger) Finish() { m.s.count = m.count }

// mergedCount is Σ weights[k] × srcs[k].Count(), or ErrOverflow outside
// [0, 2^63 − 1] at any step.
func mergedCount(srcs []*Sketch, ws []int64) (int64, error) {
	var total int64
	for k, src := range srcs {
		p, ok := mulCount(src.count, ws[k])
		if !ok {
			return 0, ErrOverflow
		}
		if total, ok = add64(total, p); !ok {
			return 0, ErrOverflow
		}
	}
	if total < 0 {
		return 0, ErrOverflow
	}
	return total, nil
}

// blocks computes the weighted sums of the sources' counters from to to
// (exclusive), a block at a time (m.small: no sum leaves int64). Without
// write it reports whether every sum fits a counter; with write it stores
// them, each block after reading it from every source (the destination
// may be among them).
func (m *Merger) blocks(from, to int, write bool) bool {
	var acc [2048]int64
	for j0 := from; j0 < to; j0 += len(acc) {
		a := acc[:min(len(acc), to-j0)]
		clear(a)
		for k, src := range m.srcs {
			c, wk := src.counters[j0:j0+len(a)], m.ws[k]
			for i, v := range c {
				a[i] += int64(v) * wk
			}
		}
		if !write {
			for _, v := range a {
				if uint64(v) > math.MaxUint32 { // negative or too large
					return false
				}
			}
			continue
		}
		d := m.s.counters[j0 : j0+len(a)]
		for i, v := range a {
			d[i] = uint32(v)
		}
	}
	return true
}

func mul64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	p := a * b
	if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, false
	}
	return p, true
}

// mulCount is count × w when the exact product fits an int64 (C's
// __builtin_mul_overflow of RedisBloom's unsigned count and signed weight).
func mulCount(count uint64, w int64) (int64, bool) {
	if w >= 0 {
		hi, lo := bits.Mul64(count, uint64(w))
		return int64(lo), hi == 0 && lo <= math.MaxInt64
	}
	hi, lo := bits.Mul64(count, uint64(-w))
	return -int64(lo), hi == 0 && lo <= 1<<63
}

func add64(a, b int64) (int64, bool) {
	s := a + b
	if (a > 0 && b > 0 && s < 0) || (a < 0 && b < 0 && s >= 0) {
		return 0, false
	}
	return s, true
}

// Clone returns an independent copy of s.
func (s *Sketch) Clone() *Sketch {
	c := *s
	c.counters = append([]uint32(nil), s.counters...)
	return &c
}

// Reset sets every counter and the count to zero.
func (s *Sketch) Reset() {
	clear(s.counters)
	s.count = 0
}

// MemUsage is the sketch's size in memory: the counters and the struct.
func (s *Sketch) MemUsage() uint64 { return 4*uint64(len(s.counters)) + 48 }
