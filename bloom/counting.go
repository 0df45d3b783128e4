package bloom

import (
	"fmt"
	"io"
	"math/bits"

	"github.com/bloomkit/bloomkit/internal/format"
)

// TypeCounting is the file-format type of a Counting filter.
const TypeCounting = format.TypeCounting

// SaturatedCount is the value at which a Counting filter's 4-bit counters
// saturate, and the largest Count returns. A saturated counter is never
// incremented or decremented again.
const SaturatedCount = 15

// CounterMax is SaturatedCount.
//
// Deprecated: use SaturatedCount. CounterMax (a counter's largest value)
// and MaxCounters (the most counters a filter has) were easy to confuse.
const CounterMax = SaturatedCount

// MaxCounters is the largest number of counters a Counting filter may have
// (its m): at 4 bits each they take MaxBits bits. Like MaxBits, MaxK and
// the other Max limits, it bounds a size; a counter's largest value is
// SaturatedCount.
const MaxCounters = MaxBits / 4

// Counting is a counting Bloom filter: the classic filter with each bit
// replaced by a 4-bit counter, so that keys can be deleted. A key increments
// its k counters when added and decrements them when deleted; it tests
// present while all k are above zero. The counters are packed 16 to a 64-bit
// word: counter i is bits 4(i mod 16) to 4(i mod 16)+3 of word i/16.
//
// The k counters of a key are chosen exactly as the k bits of a classic
// Filter with the same m, k, seed and hash id (see HashXXH3Remix), so a Counting filter that was only added to answers
// every Test exactly as that Filter would, and its false-positive rate is
// FalsePositiveRate(m, n, k). Estimate sizes it; it takes four times the
// memory of the classic filter.
//
// # Why 4 bits
//
// With the optimal k = (m/n) ln 2, the probability that any of the m
// counters ever reaches 16 is at most about 1.37e-15 × m (Fan, Cao, Almeida
// and Broder, "Summary Cache", 2000): 4 bits are enough for any filter that
// fits in memory, and half of what 8-bit counters would cost. Overflow is
// still handled safely: a counter that reaches SaturatedCount (15) saturates and
// stays there, never incremented or decremented again. A saturated counter
// can only make keys test present, so it never causes a false negative; the
// price is that keys sharing it can no longer be fully removed.
//
// Delete must only be given keys that were added: removing a key that was
// never added but tests present (a false positive) decrements counters that
// belong to other keys and can make them test absent. Removing a key that
// tests absent changes nothing and returns false.
//
// # Concurrency
//
// The Test methods only read and may run concurrently with each other.
// Add, Delete and every other method that changes the filter must run alone.
type Counting struct {
	words  []uint64 // 16 counters a word
	params Params   // M counters, K probes
	items  uint64   // adds minus successful deletes
}

// NewCounting returns an empty counting filter sized for n items at
// false-positive rate p (see Estimate): the same number of counters and
// probes as a classic filter has bits and probes.
func NewCounting(n uint64, p float64) (*Counting, error) {
	if err := checkRate(p); err != nil {
		return nil, err
	}
	return NewCountingFromParams(Estimate(n, p))
}

// NewCountingFromParams returns an empty counting filter with p.M counters,
// p.K probes and p.Seed. N and P are kept as the filter's plan and only
// reported. p.M may be at most MaxCounters.
func NewCountingFromParams(p Params) (*Counting, error) {
	p, err := p.validate(false)
	if err != nil {
		return nil, err
	}
	if p.M > MaxCounters {
		return nil, fmt.Errorf("%w: m = %d counters is above the limit of %d", ErrInvalidParams, p.M, uint64(MaxCounters))
	}
	return &Counting{words: plainAlloc(countingWords(p.M)), params: p}, nil
}

func countingWords(m uint64) uint64 { return (m + 15) / 16 }

// Params returns the filter's number of counters (as M), probe count, seed
// and plan.
func (c *Counting) Params() Params { return c.params }

// Len returns the number of keys added minus the number successfully
// removed. Adding a key twice counts twice.
func (c *Counting) Len() uint64 { return c.items }

// Add inserts key, incrementing each of its counters that is not saturated.
func (c *Counting) Add(key []byte) {
	lo, hi := hashBytes(key, c.params.Seed)
	c.add(lo, hi)
}

// AddString inserts key without copying it.
func (c *Counting) AddString(key string) {
	lo, hi := hashString(key, c.params.Seed)
	c.add(lo, hi)
}

// Test reports whether key may be in the filter. False means it certainly
// is not (it was never added, or removed as often as added); true means it
// probably is.
func (c *Counting) Test(key []byte) bool {
	lo, hi := hashBytes(key, c.params.Seed)
	return c.test(lo, hi)
}

// TestString is Test for a string key, without copying it.
func (c *Counting) TestString(key string) bool {
	lo, hi := hashString(key, c.params.Seed)
	return c.test(lo, hi)
}

// TestAndAdd inserts key and reports whether it tested present before.
func (c *Counting) TestAndAdd(key []byte) bool {
	lo, hi := hashBytes(key, c.params.Seed)
	present := c.test(lo, hi)
	c.add(lo, hi)
	return present
}

// TestAndAddString is TestAndAdd for a string key.
func (c *Counting) TestAndAddString(key string) bool {
	lo, hi := hashString(key, c.params.Seed)
	present := c.test(lo, hi)
	c.add(lo, hi)
	return present
}

// Delete removes one occurrence of key, which must have been added. If key
// tests absent, Delete changes nothing and returns false; otherwise it
// decrements each of the key's counters that is not saturated and returns
// true.
func (c *Counting) Delete(key []byte) bool {
	lo, hi := hashBytes(key, c.params.Seed)
	return c.remove(lo, hi)
}

// DeleteString is Delete for a string key.
func (c *Counting) DeleteString(key string) bool {
	lo, hi := hashString(key, c.params.Seed)
	return c.remove(lo, hi)
}

// Count estimates how many times key is in the filter: the smallest of its
// k counters. It is never below the true number of adds minus removes of
// key (unless keys that were never added were removed); it is above it when
// other keys share all of key's counters, and it is at most SaturatedCount.
func (c *Counting) Count(key []byte) uint64 {
	lo, hi := hashBytes(key, c.params.Seed)
	return uint64(c.count(lo, hi))
}

// CountString is Count for a string key.
func (c *Counting) CountString(key string) uint64 {
	lo, hi := hashString(key, c.params.Seed)
	return uint64(c.count(lo, hi))
}

// Probe positions are the classic filter's, for the same hash id.

func (c *Counting) add(x, y uint64) {
	if c.params.Hash == HashXXH3 {
		c.addV1(x, y)
		return
	}
	m, k, w, mul := c.params.M, c.params.K, c.words, probeMulVar
	if k == 0 {
		panicZero("Counting")
	}
	for i := uint32(0); i < k; i++ {
		pos, _ := bits.Mul64(x, m)
		shift := (pos & 15) * 4
		if (w[pos>>4]>>shift)&SaturatedCount != SaturatedCount {
			w[pos>>4] += 1 << shift
		}
		x = x*mul + y
	}
	c.items++
}

func (c *Counting) test(x, y uint64) bool {
	if c.params.Hash == HashXXH3 {
		return c.testV1(x, y)
	}
	m, k, w, mul := c.params.M, c.params.K, c.words, probeMulVar
	for i := uint32(0); i < k; i++ {
		pos, _ := bits.Mul64(x, m)
		if (w[pos>>4]>>((pos&15)*4))&SaturatedCount == 0 {
			return false
		}
		x = x*mul + y
	}
	return k != 0 // the zero Counting holds nothing
}

func (c *Counting) count(x, y uint64) int {
	if c.params.Hash == HashXXH3 {
		return c.countV1(x, y)
	}
	m, k, w, mul := c.params.M, c.params.K, c.words, probeMulVar
	if k == 0 {
		return 0
	}
	least := uint64(SaturatedCount)
	for i := uint32(0); i < k; i++ {
		pos, _ := bits.Mul64(x, m)
		least = min(least, (w[pos>>4]>>((pos&15)*4))&SaturatedCount)
		x = x*mul + y
	}
	return int(least)
}

func (c *Counting) remove(x, y uint64) bool {
	if c.params.Hash == HashXXH3 {
		return c.removeV1(x, y)
	}
	if !c.test(x, y) {
		return false
	}
	m, k, w, mul := c.params.M, c.params.K, c.words, probeMulVar
	for i := uint32(0); i < k; i++ {
		pos, _ := bits.Mul64(x, m)
		shift := (pos & 15) * 4
		// A key whose probes repeat a counter decrements it as often as it
		// incremented it; the test for zero only matters for keys that were
		// never added.
		if v := (w[pos>>4] >> shift) & SaturatedCount; v != SaturatedCount && v != 0 {
			w[pos>>4] -= 1 << shift
		}
		x = x*mul + y
	}
	if c.items > 0 {
		c.items--
	}
	return true
}

// Reset removes every key.
func (c *Counting) Reset() {
	clear(c.words)
	c.items = 0
}

// Clone returns an independent copy of c.
func (c *Counting) Clone() *Counting {
	return &Counting{words: append([]uint64(nil), c.words...), params: c.params, items: c.items}
}

// Equal reports whether c and d have the same parameters and counters, so
// that they answer every Test, Count and Delete alike.
func (c *Counting) Equal(d *Counting) bool {
	return compatible(c.params, d.params) == nil && equalWords(c.words, d.words)
}

// Stats returns the filter's size and fill (see Stats), counting a counter
// above zero as a bit set.
func (c *Counting) Stats() Stats {
	var nonzero, saturated uint64
	for _, w := range c.words {
		// Fold each 4-bit counter to its lowest bit: set if any bit is
		// (nonzero), or if all are (saturated).
		or, and := w|w>>2, w&(w>>2)
		or |= or >> 1
		and &= and >> 1
		nonzero += uint64(bits.OnesCount64(or & 0x1111111111111111))
		saturated += uint64(bits.OnesCount64(and & 0x1111111111111111))
	}
	st := classicStats(nonzero, c.params)
	st.Saturated = saturated
	return st
}

// WriteTo writes the filter to w in the bloomkit file format (type 3,
// docs/filters.md), streaming. The header's count is Len.
func (c *Counting) WriteTo(w io.Writer) (int64, error) {
	if c.words == nil {
		return 0, ErrZero
	}
	h := paramsHeader(TypeCounting, c.params)
	h.Count = c.items
	return format.WriteWordsFile(w, h, c.words)
}

func countingPayload(h format.Header) (uint64, error) {
	p, err := headerParams(h)
	if err != nil {
		return 0, err
	}
	if p.M > MaxCounters {
		return 0, fmt.Errorf("%w: m = %d counters, the limit is %d", ErrTooLarge, p.M, uint64(MaxCounters))
	}
	if _, err := p.validate(false); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return countingWords(p.M), nil
}

// ReadFrom replaces c with the counting filter read from r, reading exactly
// the filter's bytes. On error c is unchanged; errors are as for
// Filter.ReadFrom.
func (c *Counting) ReadFrom(r io.Reader) (int64, error) {
	h, words, n, err := format.ReadWordsFile(r, TypeCounting, countingPayload, plainAlloc)
	if err != nil {
		return n, err
	}
	p, _ := headerParams(h)
	if extra := p.M % 16; extra != 0 && words[len(words)-1]>>(4*extra) != 0 {
		return n, fmt.Errorf("%w: counters set beyond m = %d", ErrCorrupt, p.M)
	}
	c.words, c.params, c.items = words, p, h.Count
	return n, nil
}
