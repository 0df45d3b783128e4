package frozen

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"

	"github.com/bloomkit/bloomkit/internal/format"
)

// A ribbon filter (Dillinger and Walzer, "Ribbon filter: practically
// smaller than Bloom and Xor", 2021; the standard ribbon with 128-bit
// coefficient rows that RocksDB calls Standard128Ribbon) stores, for m
// slots, a matrix S of m rows of r bits. Each key gets a start s, a
// 128-bit coefficient row c (its lowest bit set) and an r-bit fingerprint
// f from its hash; the filter holds the key when the XOR of the rows
// s+i of S for every set bit i of c equals f. Building solves that linear
// system over GF(2) for every key at once: banding (Gaussian elimination
// as the keys arrive, each row kept at the slot of its first set bit)
// and back substitution from the last slot down. A key not in the set
// matches with probability 2^-r, so r bits a slot at m ≈ 1.03–1.05 n
// slots cost 1.03–1.05 × log2(1/p) bits a key for a rate p = 2^-r.
//
// Rates that are not a power of two mix two widths: the slots are cut
// into segments of 64, and the first segments hold r result bits a slot,
// the last ones r+1 (r = floor(log2(1/p))). A key uses the width of the
// segment its start falls in; the wider segments come last, so a key's
// 128 slots never reach a narrower one. The share of wide segments is
// chosen so the mixed rate is at most p.
//
// S is stored segment by segment, each segment column by column: column j
// of segment b is one 64-bit word holding bit j of its 64 slots (the
// "interleaved" layout of RocksDB's ribbon filters, with 64-slot rather
// than 128-slot segments). A lookup reads three segments' words, next to
// each other in memory: the 128 slots from its start and up to 63 before
// them in the first segment.

// Rate limits: a ribbon filter stores 1 to 32 result bits a slot.
const (
	// MinRibbonRate is the lowest false-positive rate of a ribbon filter,
	// 2^-32.
	MinRibbonRate = 1.0 / (1 << 32)
	// MaxRibbonRate is the highest, 1/2 (one result bit a slot).
	MaxRibbonRate = 0.5
)

// ribbonWidth is the coefficient row width w; ribbonSeg is the slots of a
// segment, the unit of the solution's layout and of its widths.
const (
	ribbonWidth = 128
	ribbonSeg   = 64
)

// ribbonParamsSize is the ribbon payload's fixed part: the hash remix
// seed and the first segment with r+1 result bits.
const ribbonParamsSize = 16

// maxRibbonSlots bounds the slots a file may announce (more than MaxKeys
// needs), so the payload size computed from it cannot overflow.
const maxRibbonSlots = 1 << 40

// Ribbon is an immutable set of keys stored as a standard ribbon filter:
// about 1.05 × log2(1/p) bits a key at a million keys, at a false-positive
// rate p chosen freely from MinRibbonRate to MaxRibbonRate (a binary fuse
// filter, Filter, costs 1.125 × its fingerprint bits and offers 8 or 16).
// Mixing two widths for a rate between 2^-(r+1) and 2^-r costs at most
// 0.09 bits a key above log2(1/p) (before the slots' overhead): at most 3%
// of the bound from 1e-1 down. A lookup costs more than Filter's: it
// reads up to 3×(r+1) 8-byte words, next to each other. Ribbon is safe for
// concurrent use.
type Ribbon struct {
	seed  uint64  // key hash seed
	rate  float64 // the rate asked for
	count uint64  // keys given to Build (duplicates included)
	r     int     // result bits of the narrow segments
	// Zero slots: an empty set (or a zero Ribbon, when r is 0).
	slots  uint64 // m, a multiple of 64, at least 128
	starts uint64 // m - 127: where a key's row may start
	upper  uint64 // the first segment with r+1 result bits
	rseed  uint64 // remix seed, chosen at build time so banding succeeds
	words  []uint64
}

// ribbonBits returns r = floor(log2(1/p)) and the share of keys that must
// see r+1 bits for the mix to give p: (1-f)·2^-r + f·2^-(r+1) = p.
func ribbonBits(p float64) (int, float64, error) {
	if !(p >= MinRibbonRate && p <= MaxRibbonRate) {
		return 0, 0, fmt.Errorf("%w: ribbon false-positive rate %g, want %g to %g", ErrParams, p, MinRibbonRate, MaxRibbonRate)
	}
	frac, exp := math.Frexp(p) // p = frac·2^exp, frac in [0.5, 1)
	r := -exp
	if frac == 0.5 {
		return r + 1, 0, nil
	}
	return r, 2 * (1 - frac), nil
}

// remix turns a key's Hash64 into the value its row comes from. It is a
// bijection, so distinct hashes stay distinct, and its order is the order
// of the rows' starts.
func remix(h, rseed uint64) uint64 {
	x := h ^ rseed
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// row derives a key's start, coefficients (lo: slots s..s+63, hi:
// s+64..s+127; bit 0 of lo set) and 32 fingerprint bits from its remixed
// hash x.
func row(x, starts uint64) (start, lo, hi uint64, fp uint32) {
	start, _ = bits.Mul64(x, starts)
	a := x * 0x9e3779b97f4a7c15
	b := x * 0xd6e8feb86659fd93
	lo = (a ^ a>>29) | 1
	hi = b ^ b>>32
	fp = uint32((x * 0xa0761d6478bd642f) >> 32)
	return
}

// base is the index in words of segment b's first column word.
func (f *Ribbon) base(b uint64) uint64 {
	if b < f.upper {
		return b * uint64(f.r)
	}
	return f.upper*uint64(f.r) + (b-f.upper)*uint64(f.r+1)
}

// ribbonWords is the number of 64-bit words of a solution.
func ribbonWords(slots, upper uint64, r int) uint64 {
	segs := slots / ribbonSeg
	return upper*uint64(r) + (segs-upper)*uint64(r+1)
}

// RibbonBuilder collects the keys of a ribbon filter: 8 bytes a key
// (their hashes). It keeps them across Build: more keys may be added and
// Build called again. Make one with NewRibbonBuilder: the zero value has
// no rate, and its Build returns ErrZero.
type RibbonBuilder struct {
	seed   uint64
	rate   float64
	hashes []uint64
	// slotsFor sizes the first banding of n keys (ribbonSlots when nil;
	// tests make it tight to force retries).
	slotsFor func(n int) uint64
}

// NewRibbonBuilder starts a ribbon filter with false-positive rate rate
// (MinRibbonRate to MaxRibbonRate) and the key hash seed seed
// (bloom.RandomSeed gives a secret one).
func NewRibbonBuilder(rate float64, seed uint64) (*RibbonBuilder, error) {
	if _, _, err := ribbonBits(rate); err != nil {
		return nil, err
	}
	return &RibbonBuilder{seed: seed, rate: rate}, nil
}

// Add adds key to the set being built.
func (b *RibbonBuilder) Add(key []byte) { b.hashes = append(b.hashes, Hash64(b.seed, key)) }

// AddString adds s.
func (b *RibbonBuilder) AddString(s string) { b.hashes = append(b.hashes, Hash64String(b.seed, s)) }

// AddHash adds a key by its Hash64 with the builder's seed.
func (b *RibbonBuilder) AddHash(h uint64) { b.hashes = append(b.hashes, h) }

// Len is the number of keys added so far (duplicates included).
func (b *RibbonBuilder) Len() int { return len(b.hashes) }

// BuildRibbon makes a ribbon filter of keys with false-positive rate rate
// and seed.
func BuildRibbon(keys [][]byte, rate float64, seed uint64) (*Ribbon, error) {
	b, err := NewRibbonBuilder(rate, seed)
	if err != nil {
		return nil, err
	}
	b.hashes = make([]uint64, 0, len(keys))
	for _, k := range keys {
		b.Add(k)
	}
	return b.Build()
}

// ribbonSlots is the number of slots tried first for n distinct keys,
// whole segments, at least 128: enough that banding fails about once in
// 20 builds (a failure costs a retry with another remix seed). The
// overhead m/n grows by about 0.4% each time n doubles (measured: 1.03 up
// to 2^16 keys, 1.04 at 2^18, 1.048 at 2^20).
func ribbonSlots(n int) uint64 {
	over := max(1.03, 1.04+0.0038*math.Log2(float64(n)/(1<<18)))
	m := uint64(math.Ceil(float64(n) * over))
	return max(ribbonWidth/ribbonSeg, (m+ribbonSeg-1)/ribbonSeg) * ribbonSeg
}

// Build makes the filter of every key added so far. Duplicate keys are
// allowed. The filter depends on the set of keys, not their order or
// repeats.
func (b *RibbonBuilder) Build() (*Ribbon, error) {
	if uint64(len(b.hashes)) > MaxKeys {
		return nil, fmt.Errorf("%w: %d keys, at most %d", ErrParams, len(b.hashes), uint64(MaxKeys))
	}
	if b.rate == 0 {
		return nil, ErrZero
	}
	r, frac, err := ribbonBits(b.rate)
	if err != nil {
		return nil, err
	}
	f := &Ribbon{seed: b.seed, rate: b.rate, count: uint64(len(b.hashes)), r: r}
	if len(b.hashes) == 0 {
		return f, nil
	}
	// The rows are banded in the order of their starts (for locality),
	// sorted only by the starts' leading bits: the solution does not
	// depend on the order (its pivots are the row space's leading
	// positions, and the free slots are filled in slot order).
	var bd bander
	xs, tmp := make([]uint64, len(b.hashes)), make([]uint64, len(b.hashes))
	slotsFor := b.slotsFor
	if slotsFor == nil {
		slotsFor = ribbonSlots
	}
	distinct, resized := len(b.hashes), false
	slots := slotsFor(distinct)
	for attempt := uint64(0); ; attempt++ {
		if attempt == 64 {
			return nil, fmt.Errorf("frozen: the ribbon of %d keys did not band in %d attempts", distinct, attempt)
		}
		if attempt > 0 && attempt%4 == 0 {
			// Four failures in a row: the size is too tight for
			// these keys; 1% more slots.
			slots = (slots + slots/100 + 2*ribbonSeg - 1) / ribbonSeg * ribbonSeg
		}
		f.slots, f.starts = slots, slots-ribbonWidth+1
		f.rseed = remix(attempt+1, 0x6a09e667f3bcc909)
		for i, h := range b.hashes {
			tmp[i] = remix(h, f.rseed)
		}
		bucketSort(xs, tmp)
		ok, redundant := bd.band(xs, f.slots, f.starts)
		if !ok {
			continue
		}
		if redundant > 0 && !resized {
			// Repeated keys (or, rarely, rows that are sums of
			// others): size again for the distinct ones, from the
			// first remix seed, as a list without repeats is.
			resized, distinct = true, distinct-redundant
			slots, attempt = slotsFor(distinct), ^uint64(0)
			continue
		}
		break
	}
	segs := f.slots / ribbonSeg
	// Whole segments of r+1 bits, enough that the rate is at most p (the
	// last two segments hold one start: w wide ones hold 64w-127).
	wide := uint64(0)
	if frac > 0 {
		wide = uint64(math.Ceil((frac*float64(f.starts) + ribbonWidth - 1) / ribbonSeg))
	}
	f.upper = segs - min(wide, segs)
	f.words = make([]uint64, ribbonWords(f.slots, f.upper, f.r))
	bd.solve(f)
	return f, nil
}

// bucketSort sorts src into dst by their leading bits, about 16 values a
// bucket: enough order for banding to walk the slots from first to last.
func bucketSort(dst, src []uint64) {
	shift := 64 - min(max(bits.Len(uint(len(src)/16)), 1), 22)
	counts := make([]uint32, 1<<(64-shift)+1)
	for _, x := range src {
		counts[x>>shift+1]++
	}
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	for _, x := range src {
		dst[counts[x>>shift]] = x
		counts[x>>shift]++
	}
}

// bander holds the rows of a banding in progress: slot i holds the row
// whose first set coefficient is i (zero coefficients: none yet).
type bander struct {
	lo, hi []uint64
	res    []uint32
}

// band adds the rows of xs (remixed hashes) and reports whether every one
// found a slot or reduced to nothing (a repeated key); it fails when a row
// reduces to zero coefficients with a nonzero result: the system has no
// solution. redundant counts the rows that reduced to nothing.
func (d *bander) band(xs []uint64, slots, starts uint64) (ok bool, redundant int) {
	if uint64(cap(d.lo)) < slots {
		d.lo, d.hi, d.res = make([]uint64, slots), make([]uint64, slots), make([]uint32, slots)
	}
	d.lo, d.hi, d.res = d.lo[:slots], d.hi[:slots], d.res[:slots]
	clear(d.lo)
	clear(d.hi)
	clear(d.res)
	lo, hi, res := d.lo, d.hi, d.res
	for _, x := range xs {
		i, cl, ch, fp := row(x, starts)
		for {
			if lo[i]|hi[i] == 0 {
				lo[i], hi[i], res[i] = cl, ch, fp
				break
			}
			cl ^= lo[i]
			ch ^= hi[i]
			fp ^= res[i]
			var tz int
			switch {
			case cl != 0:
				tz = bits.TrailingZeros64(cl)
				cl = cl>>tz | ch<<(64-tz)
				ch >>= tz
			case ch != 0:
				tz = 64 + bits.TrailingZeros64(ch)
				cl, ch = ch>>(tz-64), 0
			default:
				if fp != 0 {
					return false, redundant
				}
				// The row was a sum of others: nothing to add.
				redundant++
				tz = -1
			}
			if tz < 0 {
				break
			}
			i += uint64(tz)
		}
	}
	return true, redundant
}

// solve back-substitutes the banded rows into f.words, from the last slot
// down: bit j of slot i is bit j of the row's result XOR the parity of
// the row's other coefficients with bit j of the slots after i. Slots
// without a row take pseudo-random bits, so no key outside the set is
// more likely to match than 2^-bits.
func (d *bander) solve(f *Ribbon) {
	cols := f.r + 1
	// state[j] holds bit j of slots i..i+127 (bit 0: slot i).
	var stLo, stHi [33]uint64
	fill := f.rseed
	for i := f.slots; i > 0; {
		i--
		lo, hi, res := d.lo[i], d.hi[i], uint32(0)
		if lo|hi == 0 {
			fill = fill*6364136223846793005 + 1442695040888963407
			res = uint32(fill >> 32)
		} else {
			res = d.res[i]
		}
		// The coefficients after the pivot.
		cl, ch := lo>>1|hi<<63, hi>>1
		b := i / ribbonSeg
		if b < f.upper {
			cols = f.r
		}
		for j := range cols {
			bit := (uint64(res>>j) ^ uint64(bits.OnesCount64(cl&stLo[j]^ch&stHi[j]))) & 1
			stHi[j] = stHi[j]<<1 | stLo[j]>>63
			stLo[j] = stLo[j]<<1 | bit
		}
		if i%ribbonSeg == 0 {
			w := f.words[f.base(b):]
			for j := range cols {
				w[j] = stLo[j]
			}
		}
	}
}

// Test reports whether key is (probably) in the set: always true for a key
// it was built with, true for another key with probability EstimatedFPR.
func (f *Ribbon) Test(key []byte) bool { return f.TestHash(Hash64(f.seed, key)) }

// TestString reports whether s is (probably) in the set.
func (f *Ribbon) TestString(s string) bool { return f.TestHash(Hash64String(f.seed, s)) }

// TestHash tests a key by its Hash64.
func (f *Ribbon) TestHash(h uint64) bool {
	if f.slots == 0 {
		return false
	}
	s, lo, hi, fp := row(remix(h, f.rseed), f.starts)
	// The coefficients shifted to the key's offset in its segment b: q0
	// against segment b's column words, q1 against b+1's, q2 against
	// b+2's (none when the offset is 0).
	b, o := s/ribbonSeg, s%ribbonSeg
	q0, q1, q2 := lo<<o, hi<<o|lo>>(64-o), hi>>(64-o)
	// Segments from f.upper on have r+1 result bits.
	r := uint64(f.r)
	var wide0, wide1 uint64
	if b >= f.upper {
		wide0 = 1
	}
	if b+1 >= f.upper {
		wide1 = 1
	}
	cols := r + wide0
	w0 := b*r + (b-f.upper)*wide0
	w1 := w0 + cols
	w2 := w1 + r + wide1
	if o == 0 {
		w2 = w0
	}
	w := f.words[:max(w1, w2)+cols]
	// The first 8 result bits (a cache line of each segment's columns)
	// without a branch, then, if the key may still be there, the rest: a
	// key absent from a filter of more result bits stops after one line
	// in all but 1/256 of cases.
	var got uint32
	first := min(cols, 8)
	for j := range first {
		x := q0&w[w0+j] ^ q1&w[w1+j] ^ q2&w[w2+j]
		got |= uint32(bits.OnesCount64(x)&1) << j
	}
	if got != fp&(1<<first-1) {
		return false
	}
	for j := first; j < cols; j++ {
		x := q0&w[w0+j] ^ q1&w[w1+j] ^ q2&w[w2+j]
		got |= uint32(bits.OnesCount64(x)&1) << j
	}
	return got == fp&(1<<cols-1) // 1<<32 is 0 in uint32: all 32 bits
}

// Seed is the key hash seed.
func (f *Ribbon) Seed() uint64 { return f.seed }

// Rate is the false-positive rate the filter was built for.
func (f *Ribbon) Rate() float64 { return f.rate }

// Len is the number of keys the filter was built from (duplicates
// included).
func (f *Ribbon) Len() uint64 { return f.count }

// ApproxCount is the number of keys the filter was built from: exact, for
// a frozen set.
func (f *Ribbon) ApproxCount() uint64 { return f.count }

// Slots is the number of rows of the solution, m: a multiple of 64, at
// least 128.
func (f *Ribbon) Slots() uint64 { return f.slots }

// EstimatedFPR is the false-positive rate of the filter as built (0 when
// empty): 2^-r for the keys that start in a segment of r result bits,
// 2^-(r+1) for the others. It is at most Rate: within a fraction of a
// percent from about 100,000 keys, lower for small sets, whose few
// segments mix the two widths coarsely.
func (f *Ribbon) EstimatedFPR() float64 {
	if f.slots == 0 {
		return 0
	}
	wideStarts := f.starts - min(f.starts, f.upper*ribbonSeg)
	share := float64(wideStarts) / float64(f.starts)
	return math.Ldexp(1, -f.r) * (1 - share/2)
}

// SizeBits is the memory of the solution in bits; SizeBits/Len is the cost
// a key.
func (f *Ribbon) SizeBits() uint64 { return uint64(len(f.words)) * 64 }

// header is the envelope header: M the slots, K the narrow segments' result
// bits, N the keys, P the rate asked for.
func (f *Ribbon) header() format.Header {
	var payload uint64
	if f.slots > 0 {
		payload = ribbonParamsSize + 8*uint64(len(f.words))
	}
	return format.Header{Type: format.TypeRibbon, Seed: f.seed, M: f.slots, K: uint32(f.r),
		N: f.count, P: f.rate, Count: f.count, PayloadLen: payload}
}

// WriteTo writes the filter as a bloomkit file of type ribbon
// (docs/format.md).
func (f *Ribbon) WriteTo(w io.Writer) (int64, error) {
	if f.r == 0 {
		return 0, ErrZero
	}
	cw := &format.CRCWriter{W: w}
	h := f.header()
	if _, err := cw.Write(h.Marshal()); err != nil {
		return cw.N, fmt.Errorf("frozen: writing header: %w", err)
	}
	if f.slots > 0 {
		var p [ribbonParamsSize]byte
		binary.LittleEndian.PutUint64(p[0:], f.rseed)
		binary.LittleEndian.PutUint64(p[8:], f.upper)
		if _, err := cw.Write(p[:]); err != nil {
			return cw.N, fmt.Errorf("frozen: writing payload: %w", err)
		}
		if err := format.WriteWords(cw, f.words); err != nil {
			return cw.N, err
		}
	}
	return cw.N, cw.WriteTrailer()
}

// ReadFrom replaces f with the ribbon filter file read from r. Errors are
// the envelope's (bloom.ErrBadMagic, ErrChecksum, ErrTruncated, ...), and
// ErrCorrupt for parameters that do not fit the payload. A header that
// announces more than the input holds fails before the payload is
// allocated when r tells its length (bytes.Reader, *os.File); otherwise
// memory grows with the data that arrives.
func (f *Ribbon) ReadFrom(r io.Reader) (int64, error) {
	avail, known := format.Remaining(r)
	cr := &format.CRCReader{R: r}
	h, err := format.ReadHeader(cr, format.TypeRibbon)
	if err != nil {
		return cr.N, err
	}
	rb, _, err := ribbonBits(h.P)
	if err != nil || uint32(rb) != h.K {
		return cr.N, fmt.Errorf("%w: a ribbon of %d result bits at rate %g", ErrCorrupt, h.K, h.P)
	}
	if h.M%ribbonSeg != 0 || h.M > maxRibbonSlots || (h.M == 0) != (h.PayloadLen == 0) || (h.M != 0 && h.M < ribbonWidth) {
		return cr.N, fmt.Errorf("%w: a ribbon of %d slots in a payload of %d bytes", ErrCorrupt, h.M, h.PayloadLen)
	}
	if h.Count > MaxKeys || h.N != h.Count {
		return cr.N, fmt.Errorf("%w: a ribbon of %d keys (header n %d)", ErrCorrupt, h.Count, h.N)
	}
	g := Ribbon{seed: h.Seed, rate: h.P, count: h.Count, r: rb, slots: h.M}
	if h.M == 0 {
		if err := cr.ReadTrailer(); err != nil {
			return cr.N, err
		}
		*f = g
		return cr.N, nil
	}
	if err := format.CheckAvailable(h, avail-format.HeaderSize, known); err != nil {
		return cr.N, err
	}
	var p [ribbonParamsSize]byte
	if _, err := io.ReadFull(cr, p[:]); err != nil {
		return cr.N, format.Truncated(err, "payload")
	}
	g.rseed, g.upper = binary.LittleEndian.Uint64(p[0:]), binary.LittleEndian.Uint64(p[8:])
	g.starts = g.slots - ribbonWidth + 1
	segs := g.slots / ribbonSeg
	if g.upper > segs || (g.r == 32 && g.upper != segs) {
		return cr.N, fmt.Errorf("%w: ribbon segments of %d result bits from segment %d of %d", ErrCorrupt, g.r+1, g.upper, segs)
	}
	n := ribbonWords(g.slots, g.upper, g.r)
	if h.PayloadLen != ribbonParamsSize+8*n {
		return cr.N, fmt.Errorf("%w: a ribbon of %d slots in a payload of %d bytes, want %d", ErrCorrupt, h.M, h.PayloadLen, ribbonParamsSize+8*n)
	}
	g.words, err = format.ReadWords(cr, n, known, func(k uint64) []uint64 { return make([]uint64, k) })
	if err != nil {
		return cr.N, err
	}
	if err := cr.ReadTrailer(); err != nil {
		return cr.N, err
	}
	*f = g
	return cr.N, nil
}

// ReadRibbon reads a ribbon filter file.
func ReadRibbon(r io.Reader) (*Ribbon, error) {
	f := new(Ribbon)
	if _, err := f.ReadFrom(r); err != nil {
		return nil, err
	}
	return f, nil
}

// MarshalBinary returns the filter in the bloomkit file format
// (encoding.BinaryMarshaler; gob uses it too). A zero Ribbon gives
// ErrZero.
func (f *Ribbon) MarshalBinary() ([]byte, error) { return format.MarshalBinary(f) }

// UnmarshalBinary replaces f with the ribbon filter encoded in data, which
// must hold exactly one filter (encoding.BinaryUnmarshaler). Errors are as
// for ReadFrom; on error f is unchanged.
func (f *Ribbon) UnmarshalBinary(data []byte) error {
	return format.UnmarshalBinary(f, new(Ribbon), data)
}

// MarshalJSON returns the filter file as a JSON string in base64
// (json.Marshaler).
func (f *Ribbon) MarshalJSON() ([]byte, error) { return format.MarshalJSON(f.MarshalBinary) }

// UnmarshalJSON replaces f with the filter in a string MarshalJSON wrote
// (json.Unmarshaler).
func (f *Ribbon) UnmarshalJSON(data []byte) error {
	return format.UnmarshalJSON("frozen", data, f.UnmarshalBinary)
}
