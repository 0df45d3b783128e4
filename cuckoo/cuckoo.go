package cuckoo

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/bloomkit/bloomkit/internal/batch"
)

// Defaults and limits of Config's fields. The limits also bound what a
// decoder believes from a file.
const (
	// DefaultBucketSize is the number of slots a bucket has unless
	// Config.BucketSize says otherwise: 4 lets a table fill to about 95%.
	DefaultBucketSize = 4
	// DefaultFingerprintBits is the fingerprint length unless Config says
	// otherwise: with 4-slot buckets, a rate of about 3% at 95% load.
	DefaultFingerprintBits = 8
	// DefaultMaxKicks is how many fingerprints an insertion may move before
	// it fails (the paper's 500).
	DefaultMaxKicks = 500
	// DefaultExpansion is how many times larger each new table of a growing
	// filter is than the last.
	DefaultExpansion = 2

	// MaxBucketSize is the largest bucket size (RedisBloom's limit).
	MaxBucketSize = 255
	// MinFingerprintBits and MaxFingerprintBits bound the fingerprint length.
	MinFingerprintBits = 4
	MaxFingerprintBits = 32
	// MaxMaxKicks is the largest eviction limit (RedisBloom's limit).
	MaxMaxKicks = 65535
	// MaxExpansion is the largest expansion factor (RedisBloom's limit).
	MaxExpansion = 32768
	// MaxTables is the longest chain a filter grows to; an insertion that
	// would need one more table fails with ErrFull.
	MaxTables = 64
	// MaxBits is the largest total size of a filter's fingerprint tables,
	// in bits (2^43 bits, 1 TiB), as for the bloom package.
	MaxBits = 1 << 43
	// DefaultMaxBytes is how large a filter's tables may grow in all,
	// in bytes, when Config.MaxBytes is 0 and the first table is smaller
	// than a quarter of it (1 GiB).
	DefaultMaxBytes = 1 << 30
)

// ErrFull is returned (wrapped, with the reason) by Add when a key cannot be
// inserted: the filter may not grow (Config.NoGrow), or growing would pass
// MaxTables or MaxBits. The filter is unchanged: nothing already in it is
// lost.
var ErrFull = errors.New("cuckoo: filter is full")

// ErrTooManyCopies is returned (wrapped) by Add when the key's fingerprint
// already fills 2·BucketSize slots of its buckets (Count(key) ≥
// 2·BucketSize): the key was added that many times, or, rarely, other keys
// share its fingerprint and buckets. Each further copy could only go into
// a new table, so a key added in a loop would otherwise grow the filter
// without bound. The filter is unchanged.
var ErrTooManyCopies = errors.New("cuckoo: key stored too many times")

// ErrInvalidConfig is returned (wrapped) by NewWith for a Config
// outside the limits.
var ErrInvalidConfig = errors.New("cuckoo: invalid configuration")

// Config describes a cuckoo filter. Zero fields take their defaults.
type Config struct {
	// Capacity is the number of items the first table is sized for: it
	// gets ⌈Capacity / (BucketSize · TypicalLoad(BucketSize))⌉ buckets, so
	// that Capacity items usually fit without growing. 0 gives one bucket,
	// the smallest table.
	Capacity uint64
	// Buckets, when not 0, is the exact number of buckets of the first
	// table, overriding Capacity (for callers that must match another
	// implementation's sizing).
	Buckets uint64
	// BucketSize is the number of slots a bucket has, 1 to MaxBucketSize
	// (default 4). Larger buckets fill further before an insertion fails
	// (about 30%, 86%, 95% and 98.5% for 1, 2, 4 and 8 slots) but compare
	// more fingerprints, so the rate rises with them.
	BucketSize uint32
	// FingerprintBits is the length of a fingerprint, MinFingerprintBits
	// to MaxFingerprintBits (default 8, or chosen from Rate). A filter uses
	// this many bits a slot; each added bit halves the false-positive rate.
	FingerprintBits uint32
	// Rate, when not 0, is the false-positive rate wanted of a full
	// table. If FingerprintBits is 0 it is chosen for this rate with
	// BitsForRate. Rate is recorded as the filter's plan; when it is 0 the
	// plan is the rate of a full table, ExpectedRate(BucketSize,
	// FingerprintBits, 1).
	Rate float64
	// MaxKicks is how many fingerprints one insertion may move before it
	// gives up, 1 to MaxMaxKicks (default 500). Lower values make
	// insertions into a nearly full table faster and fail sooner.
	MaxKicks uint32
	// Expansion is how many times more buckets each new table has than the
	// last, 1 to MaxExpansion (default 2). It is rounded up to a power of
	// two, as RedisBloom does: table sizes that differ by powers of two
	// keep Delete from ever causing a false negative (see table.alt).
	Expansion uint32
	// NoGrow makes an insertion that finds no room fail with ErrFull
	// instead of chaining a new table.
	NoGrow bool
	// MaxBytes is how large the tables may grow in all, in bytes, rounded
	// up to a whole KiB: an insertion that would need a table past it
	// fails with ErrFull. 0 means DefaultMaxBytes, or four times the first
	// table when that is larger. It must be at least the first table's
	// size and at most MaxBits/8. It is kept in the file (a filter read
	// back has the same limit).
	MaxBytes uint64
	// Seed is mixed into the hash of every key (see bloom.RandomSeed).
	Seed uint64
}

// TypicalLoad returns the fraction of a table's slots that are filled when
// the first insertion fails, with the default MaxKicks and 8-bit
// fingerprints, as measured for tables of 1,000 to 2.6 million buckets
// (docs/cuckoo.md) and rounded down: 0.3, 0.84, 0.91, 0.94 and 0.98 for 1,
// 2, 3, 4 to 7, and 8 or more slots a bucket. Capacity is converted to
// buckets with it, so that Capacity items fit without growing.
func TypicalLoad(bucketSize uint32) float64 {
	switch {
	case bucketSize <= 1:
		return 0.3
	case bucketSize == 2:
		return 0.84
	case bucketSize == 3:
		return 0.91
	case bucketSize < 8:
		return 0.94
	default:
		return 0.98
	}
}

// ExpectedRate returns the false-positive rate of one table with
// bucketSize slots a bucket and fingerprints of fingerprintBits bits when
// the fraction load of its slots is filled: a lookup compares its
// fingerprint with the 2·bucketSize slots of two buckets, each occupied
// with probability load and then matching with probability 1/(2^f − 1):
// 1 − (1 − load/(2^f − 1))^(2·bucketSize).
func ExpectedRate(bucketSize, fingerprintBits uint32, load float64) float64 {
	if fingerprintBits == 0 || fingerprintBits > 64 {
		return 1
	}
	load = max(0, min(1, load))
	values := math.Ldexp(1, int(fingerprintBits)) - 1
	return -math.Expm1(2 * float64(bucketSize) * math.Log1p(-load/values))
}

// BitsForRate returns the fingerprint length that keeps a full table with
// bucketSize slots a bucket at or below rate p: the least f with
// ExpectedRate(bucketSize, f, 1) ≤ p, at least MinFingerprintBits. It
// returns 0 when p is not in (0, 1), and may return more than
// MaxFingerprintBits for rates too small to reach.
func BitsForRate(p float64, bucketSize uint32) uint32 {
	if !(p > 0 && p < 1) || bucketSize == 0 {
		return 0
	}
	for f := uint32(MinFingerprintBits); f < 64; f++ {
		if ExpectedRate(bucketSize, f, 1) <= p {
			return f
		}
	}
	return 64
}

// Filter is a cuckoo filter: a chain of one or more tables of fingerprints.
// See the package documentation.
//
// # Concurrency
//
// Test, Count and the statistics only read and may run in any number of
// goroutines at once. Add, AddUnique and Delete change the filter (and an
// insertion may move many fingerprints), so they must not run concurrently
// with any other method: guard a shared filter with a sync.RWMutex.
type Filter struct {
	cfg    Config // defaults applied; Buckets is the first table's
	shape  shape
	tables []table
	count  uint64
	rng    uint64
	path   []uint64 // scratch: the slots an insertion changed, for undoing
}

// New returns an empty filter for capacity items with the default bucket
// size (4), fingerprint length (8 bits, a rate of about 3%), eviction limit
// and expansion.
func New(capacity uint64) (*Filter, error) {
	return NewWith(Config{Capacity: capacity})
}

// NewWith returns an empty filter as c describes. It fails, with an
// error wrapping ErrInvalidConfig, when a field is outside its limits.
func NewWith(c Config) (*Filter, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	f := &Filter{cfg: c, shape: newShape(uint64(c.BucketSize), uint64(c.FingerprintBits))}
	f.tables = []table{f.shape.newTable(c.Buckets, 0)}
	f.rng = rngStart(c.Seed)
	return f, nil
}

// withDefaults fills in zero fields, sizes the first table and checks the
// limits.
func (c Config) withDefaults() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	if c.BucketSize == 0 {
		c.BucketSize = DefaultBucketSize
	}
	if c.BucketSize > MaxBucketSize {
		return bad("bucket size %d, the limit is %d", c.BucketSize, MaxBucketSize)
	}
	if c.Rate != 0 && !(c.Rate > 0 && c.Rate < 1) {
		return bad("rate %v is not in (0, 1)", c.Rate)
	}
	if c.FingerprintBits == 0 {
		c.FingerprintBits = DefaultFingerprintBits
		if c.Rate != 0 {
			c.FingerprintBits = BitsForRate(c.Rate, c.BucketSize)
		}
	}
	if c.FingerprintBits < MinFingerprintBits || c.FingerprintBits > MaxFingerprintBits {
		return bad("fingerprints of %d bits, want %d to %d", c.FingerprintBits, MinFingerprintBits, MaxFingerprintBits)
	}
	if c.Rate == 0 {
		c.Rate = ExpectedRate(c.BucketSize, c.FingerprintBits, 1)
	}
	if c.MaxKicks == 0 {
		c.MaxKicks = DefaultMaxKicks
	}
	if c.MaxKicks > MaxMaxKicks {
		return bad("max kicks %d, the limit is %d", c.MaxKicks, MaxMaxKicks)
	}
	if c.Expansion == 0 {
		c.Expansion = DefaultExpansion
	}
	if c.Expansion > MaxExpansion {
		return bad("expansion %d, the limit is %d", c.Expansion, MaxExpansion)
	}
	c.Expansion = 1 << bits.Len32(c.Expansion-1)
	slotBits := uint64(c.BucketSize) * uint64(c.FingerprintBits)
	if c.Buckets == 0 {
		// Capacity 0 gives the smallest table, one bucket, as bloom.New(0,
		// p) gives the smallest filter.
		b := math.Ceil(float64(c.Capacity) / (float64(c.BucketSize) * TypicalLoad(c.BucketSize)))
		if b > MaxBits {
			return bad("%d items need more than %d bits", c.Capacity, uint64(MaxBits))
		}
		c.Buckets = max(1, uint64(b))
	}
	if c.Buckets > MaxBits/slotBits {
		return bad("%d buckets of %d bits exceed %d bits", c.Buckets, slotBits, uint64(MaxBits))
	}
	if c.MaxBytes != 0 {
		if c.MaxBytes > MaxBits/8 {
			return bad("MaxBytes %d, the limit is %d", c.MaxBytes, uint64(MaxBits/8))
		}
		c.MaxBytes = (c.MaxBytes + 1023) &^ 1023
		if first := tableBytes(c.Buckets, slotBits); first > c.MaxBytes {
			return bad("a first table of %d bytes is larger than MaxBytes %d", first, c.MaxBytes)
		}
	}
	return c, nil
}

// tableBytes is the size in bytes of a table of n buckets of bb bits.
func tableBytes(n, bb uint64) uint64 { return (n*bb + 63) / 64 * 8 }

// maxBytes is the limit of the tables' total size (Config.MaxBytes).
func (c *Config) maxBytes() uint64 {
	if c.MaxBytes != 0 {
		return c.MaxBytes
	}
	return max(DefaultMaxBytes, min(4*tableBytes(c.Buckets, uint64(c.BucketSize)*uint64(c.FingerprintBits)), MaxBits/8))
}

// rngStart is the state of the generator that picks which fingerprint an
// insertion moves. It depends only on the seed, so that building a filter
// the same way gives the same bytes.
func rngStart(seed uint64) uint64 {
	if s := seed ^ 0x6375636b6f6f2121; s != 0 { // "cuckoo!!"
		return s
	}
	return 1
}

// rand is xorshift64*.
func (f *Filter) rand() uint64 {
	x := f.rng
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	f.rng = x
	return x * 0x2545f4914f6cdd1d
}

// Config returns the filter's configuration, defaults filled in and Buckets
// set to the size of the first table.
func (f *Filter) Config() Config { return f.cfg }

// Hashing: a key's bytes are hashed once with XXH3-128 and the filter's
// seed. The low half chooses the key's first bucket in every table,
// ⌊lo·buckets/2^64⌋; the high half its fingerprint, 1 + ⌊hi·(2^f−1)/2^64⌋
// (never 0, which marks a free slot). The second bucket is table.alt of
// the first. All of this is part of the file format.

func (f *Filter) fingerprint(hi uint64) uint64 {
	return mulHigh(hi, f.shape.fpMask) + 1
}

// Add inserts key. Keys may be added more than once: each addition takes
// a slot, and Count counts them, up to 2·BucketSize copies (then
// ErrTooManyCopies). It fails, wrapping ErrFull, when the filter has no
// room and may not grow (Config.NoGrow) or has reached MaxTables or
// Config.MaxBytes; nothing is lost then.
func (f *Filter) Add(key []byte) error {
	lo, hi := batch.Sum(key, f.cfg.Seed)
	return f.add(lo, hi)
}

// AddString is Add for a string key, without copying it.
func (f *Filter) AddString(key string) error {
	lo, hi := batch.Sum(key, f.cfg.Seed)
	return f.add(lo, hi)
}

// AddUnique inserts key unless it tests present (RedisBloom's CF.ADDNX),
// and reports whether it inserted it. A false positive makes it skip a key
// that was never added.
func (f *Filter) AddUnique(key []byte) (bool, error) {
	lo, hi := batch.Sum(key, f.cfg.Seed)
	return f.addUnique(lo, hi)
}

// AddUniqueString is AddUnique for a string key.
func (f *Filter) AddUniqueString(key string) (bool, error) {
	lo, hi := batch.Sum(key, f.cfg.Seed)
	return f.addUnique(lo, hi)
}

// Test reports whether key may have been added (and not deleted since).
// False means it certainly was not.
func (f *Filter) Test(key []byte) bool {
	lo, hi := batch.Sum(key, f.cfg.Seed)
	return f.test(lo, hi)
}

// TestString is Test for a string key, without copying it.
func (f *Filter) TestString(key string) bool {
	lo, hi := batch.Sum(key, f.cfg.Seed)
	return f.test(lo, hi)
}

// Count returns how many times key is in the filter: the number of added
// and not deleted occurrences, plus those of other keys with the same
// fingerprint in the same buckets. It never counts too few.
func (f *Filter) Count(key []byte) uint64 {
	lo, hi := batch.Sum(key, f.cfg.Seed)
	return f.countKey(lo, hi)
}

// CountString is Count for a string key.
func (f *Filter) CountString(key string) uint64 {
	lo, hi := batch.Sum(key, f.cfg.Seed)
	return f.countKey(lo, hi)
}

// Delete removes one occurrence of key and reports whether it found one.
// Delete only keys that were added: a key never added may share its
// fingerprint and a bucket with one that was, which would lose it.
func (f *Filter) Delete(key []byte) bool {
	lo, hi := batch.Sum(key, f.cfg.Seed)
	return f.delete(lo, hi)
}

// DeleteString is Delete for a string key.
func (f *Filter) DeleteString(key string) bool {
	lo, hi := batch.Sum(key, f.cfg.Seed)
	return f.delete(lo, hi)
}

func (f *Filter) test(lo, hi uint64) bool {
	s, fp := &f.shape, f.fingerprint(hi)
	for k := len(f.tables) - 1; k >= 0; k-- {
		t := &f.tables[k]
		i1 := mulHigh(lo, t.buckets)
		i2 := t.alt(i1, fp)
		if s.fast {
			// Both buckets are loaded before either is looked at, so that
			// their cache misses overlap.
			x1, x2, p := s.bucket(t, i1), s.bucket(t, i2), fp*s.ones
			if s.zeroLanes(x1^p)|s.zeroLanes(x2^p) != 0 {
				return true
			}
			continue
		}
		if s.has(t, i1, fp) || s.has(t, i2, fp) {
			return true
		}
	}
	return false
}

func (f *Filter) countKey(lo, hi uint64) uint64 {
	s, fp := &f.shape, f.fingerprint(hi)
	var c uint64
	for k := range f.tables {
		t := &f.tables[k]
		i1 := mulHigh(lo, t.buckets)
		c += uint64(s.count(t, i1, fp))
		if i2 := t.alt(i1, fp); i2 != i1 {
			c += uint64(s.count(t, i2, fp))
		}
	}
	return c
}

// delete removes one copy of the key's fingerprint from its buckets in the
// newest table that has one. The copy may belong to another key y with the
// same fingerprint and buckets there, but that never loses y: if the key's
// own copy is in that table, the two keys are interchangeable in it; if it
// is in an older, smaller table, y shares the key's buckets there too (see
// table.alt), so the key's copy answers for y. By induction every key added
// and not deleted keeps a copy in its own buckets.
func (f *Filter) delete(lo, hi uint64) bool {
	s, fp := &f.shape, f.fingerprint(hi)
	for k := len(f.tables) - 1; k >= 0; k-- {
		t := &f.tables[k]
		i1 := mulHigh(lo, t.buckets)
		if s.remove(t, i1, fp) || s.remove(t, t.alt(i1, fp), fp) {
			f.count--
			return true
		}
	}
	return false
}

func (f *Filter) addUnique(lo, hi uint64) (bool, error) {
	if f.test(lo, hi) {
		return false, nil
	}
	if err := f.add(lo, hi); err != nil {
		return false, err
	}
	return true, nil
}

// add puts the fingerprint in a free slot of one of its buckets in any
// table, newest first; failing that, makes room in the newest table by
// moving fingerprints to their other buckets; failing that, grows.
func (f *Filter) add(lo, hi uint64) error {
	if len(f.tables) == 0 {
		return ErrZero
	}
	s, fp := &f.shape, f.fingerprint(hi)
	if c := f.countKey(lo, hi); c >= 2*s.b {
		return fmt.Errorf("%w: its fingerprint fills %d slots of its buckets, the limit is 2 × %d", ErrTooManyCopies, c, s.b)
	}
	for k := len(f.tables) - 1; k >= 0; k-- {
		t := &f.tables[k]
		i1 := mulHigh(lo, t.buckets)
		if s.put(t, i1, fp) || s.put(t, t.alt(i1, fp), fp) {
			f.count++
			return nil
		}
	}
	t := &f.tables[len(f.tables)-1]
	i := mulHigh(lo, t.buckets)
	if f.rand()&1 != 0 {
		i = t.alt(i, fp)
	}
	if f.kick(t, i, fp) {
		f.count++
		return nil
	}
	if err := f.grow(); err != nil {
		return err
	}
	t = &f.tables[len(f.tables)-1]
	i = mulHigh(lo, t.buckets)
	if !s.put(t, i, fp) && !s.put(t, t.alt(i, fp), fp) {
		// A new table is empty and a bucket has at least one slot.
		return fmt.Errorf("cuckoo: internal error: no free slot in a new table")
	}
	f.count++
	return nil
}

// kick inserts fp into table t, starting at its full bucket i: it swaps fp
// with a random slot's fingerprint, sends that one to its other bucket,
// and so on, up to MaxKicks times. If no move finds a free slot it undoes
// every swap, in reverse, so the table is exactly as before, and returns
// false.
func (f *Filter) kick(t *table, i, fp uint64) bool {
	s := &f.shape
	path := f.path[:0]
	cur := fp
	for n := uint32(0); n < f.cfg.MaxKicks; n++ {
		o := i*s.bb + mulHigh(f.rand(), s.b)*s.f
		victim := t.get(o, s.f)
		t.set(o, s.f, cur)
		path = append(path, o)
		cur = victim
		i = t.alt(i, cur)
		if s.put(t, i, cur) {
			f.path = path[:0]
			return true
		}
	}
	for k := len(path) - 1; k >= 0; k-- {
		o := path[k]
		prev := t.get(o, s.f)
		t.set(o, s.f, cur)
		cur = prev
	}
	f.path = path[:0]
	return false
}

// grow chains a new table Expansion times the size of the last.
func (f *Filter) grow() error {
	if f.cfg.NoGrow {
		return fmt.Errorf("%w: %d items in %d slots and growth is disabled", ErrFull, f.count, f.slots())
	}
	if len(f.tables) >= MaxTables {
		return fmt.Errorf("%w: %d items in %d tables, the limit", ErrFull, f.count, len(f.tables))
	}
	last := &f.tables[len(f.tables)-1]
	shift := last.shift + uint(bits.TrailingZeros32(f.cfg.Expansion))
	if shift >= 64 || last.nb0 > MaxBits>>shift || f.bits()+(last.nb0<<shift)*f.shape.bb > MaxBits {
		return fmt.Errorf("%w: a table of %d × 2^%d more buckets would pass %d bits", ErrFull, last.nb0, shift, uint64(MaxBits))
	}
	if now, next := f.bytes(), tableBytes(last.nb0<<shift, f.shape.bb); now+next > f.cfg.maxBytes() {
		return fmt.Errorf("%w: %d items in %d tables of %d bytes; one more table of %d bytes would pass the limit of %d bytes (Config.MaxBytes)",
			ErrFull, f.count, len(f.tables), now, next, f.cfg.maxBytes())
	}
	f.tables = append(f.tables, f.shape.newTable(last.nb0, shift))
	return nil
}

// bits is the total size of the tables in bits.
func (f *Filter) bits() uint64 {
	var b uint64
	for k := range f.tables {
		b += f.tables[k].buckets * f.shape.bb
	}
	return b
}

// bytes is the total size of the tables' words in bytes.
func (f *Filter) bytes() uint64 {
	var b uint64
	for k := range f.tables {
		b += uint64(len(f.tables[k].words)) * 8
	}
	return b
}

// Len returns the number of items in the filter: additions minus
// successful deletions.
func (f *Filter) Len() uint64 { return f.count }

// Stats is a cuckoo filter's size and fill, as Filter.Stats reports it.
type Stats struct {
	// Slots is the number of fingerprint slots in all tables.
	Slots uint64
	// LoadFactor is the fraction of the slots that are filled: Len/Slots.
	LoadFactor float64
	// Tables is the number of tables in the chain: 1 until the filter
	// first grows.
	Tables int
	// SizeBytes is the memory the fingerprint tables occupy.
	SizeBytes uint64
	// EstimatedFPR is the false-positive rate the filter has now: a key
	// that was never added tests present if any table matches it,
	// 1 − ∏ (1 − ExpectedRate(load of the table)).
	EstimatedFPR float64
}

// Stats returns the filter's size and fill (see Stats). It reads only the
// tables' counts, not their slots.
func (f *Filter) Stats() Stats {
	st := Stats{Slots: f.slots(), Tables: len(f.tables)}
	miss := 1.0
	for k := range f.tables {
		t := &f.tables[k]
		st.SizeBytes += uint64(len(t.words)) * 8
		load := float64(t.count) / float64(t.buckets*f.shape.b)
		miss *= 1 - ExpectedRate(f.cfg.BucketSize, f.cfg.FingerprintBits, load)
	}
	if st.Slots > 0 {
		st.LoadFactor = float64(f.count) / float64(st.Slots)
	}
	st.EstimatedFPR = 1 - miss
	return st
}

// slots returns the number of fingerprint slots in all tables.
func (f *Filter) slots() uint64 {
	var n uint64
	for k := range f.tables {
		n += f.tables[k].buckets
	}
	return n * f.shape.b
}

// Reset empties the filter and drops the tables it grew, keeping the
// configuration.
func (f *Filter) Reset() {
	if len(f.tables) == 0 {
		return
	}
	clear(f.tables[1:]) // let the grown tables' memory go
	f.tables = f.tables[:1]
	clear(f.tables[0].words)
	f.tables[0].count = 0
	f.count = 0
	f.rng = rngStart(f.cfg.Seed)
}

// Clone returns an independent copy of f.
func (f *Filter) Clone() *Filter {
	g := *f
	g.path = nil
	g.tables = make([]table, len(f.tables))
	for k, t := range f.tables {
		t.words = append([]uint64(nil), t.words...)
		g.tables[k] = t
	}
	return &g
}

// Equal reports whether f and g have the same configuration and the same
// fingerprints in the same slots, so that they answer every Test and Count
// alike.
func (f *Filter) Equal(g *Filter) bool {
	if f.cfg != g.cfg || f.count != g.count || len(f.tables) != len(g.tables) {
		return false
	}
	for k := range f.tables {
		a, b := &f.tables[k], &g.tables[k]
		if a.buckets != b.buckets || a.count != b.count || !slices.Equal(a.words, b.words) {
			return false
		}
	}
	return true
}

// Key is a key as the batch functions take it: bytes or a string, hashed
// where it lies, never copied.
type Key interface{ []byte | string }

// AddMany adds every key to f, in order, as Add does, and returns how many
// it added: len(keys), or fewer with the error of the first key it could
// not add (nothing after it is added). The keys are []byte or string
// slices; like bloom.AddMany it is a function because Go methods cannot
// take a type parameter.
func AddMany[K Key](f *Filter, keys []K) (int, error) {
	for i, k := range keys {
		if err := f.add(batch.Sum(k, f.cfg.Seed)); err != nil {
			return i, err
		}
	}
	return len(keys), nil
}

// TestMany appends to dst, for each key in order, whether it may be in f,
// and returns the extended slice. It hashes the keys a batch at a time
// and, for tables larger than 32 MiB, asks the CPU to load each batch's
// buckets while it hashes the next, so that their cache misses overlap;
// pass dst[:0] of a reused slice to avoid allocating.
func TestMany[K Key](f *Filter, keys []K, dst []bool) []bool {
	batch.Each(keys, f.cfg.Seed, f.prefetch, func(h [][2]uint64) { dst = f.testHashed(h, dst) })
	return dst
}

// prefetchMinWords is the table size from which TestMany prefetches: a
// table that fits in the last-level cache gains nothing and pays for the
// extra work (measured on a 32 MiB-L3 machine, 2M absent keys, medians of
// 7: at an 8.5 MB table TestMany of strings took 39 ns/key with prefetching, 31
// without, TestString 30; at a 42 MB table 45 ns/key against TestString's
// 151).
const prefetchMinWords = 32 << 20 / 8

// prefetch starts loading both buckets of each key hashed to h, in every
// table large enough to miss the cache.
func (f *Filter) prefetch(h [][2]uint64) {
	if !batch.HasPrefetch {
		return
	}
	s := &f.shape
	for k := range f.tables {
		t := &f.tables[k]
		if len(t.words) < prefetchMinWords {
			continue
		}
		for _, h := range h {
			i1 := mulHigh(h[0], t.buckets)
			i2 := t.alt(i1, f.fingerprint(h[1]))
			batch.Prefetch(&t.words[i1*s.bb/64])
			batch.Prefetch(&t.words[i2*s.bb/64])
		}
	}
}

func (f *Filter) testHashed(h [][2]uint64, dst []bool) []bool {
	for _, h := range h {
		dst = append(dst, f.test(h[0], h[1]))
	}
	return dst
}
