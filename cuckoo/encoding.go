package cuckoo

import (
	"fmt"
	"io"
	"math/bits"

	"github.com/bloomkit/bloomkit/internal/format"
)

// The file format is the bloomkit format of docs/format.md, filter type 6;
// docs/cuckoo.md gives the payload. In short: the 80-byte header (m =
// buckets of the first table, k = bucket size, n = Capacity, p = Rate,
// count = items), a payload of little-endian 64-bit words — three words of
// configuration, one (buckets, items) pair a table, then each table's
// packed slots — and a CRC-32C of everything before it.

// TypeCuckoo is the filter type of a cuckoo filter in the file header.
const TypeCuckoo = format.TypeCuckoo

// Errors returned, wrapped with details, by ReadFrom and Read:
// the same values as the bloom package's, so errors.Is works with either.
var (
	// ErrBadMagic: the data does not start with "bloomkit"; it is not a filter.
	ErrBadMagic = format.ErrBadMagic
	// ErrVersion: the file was written by a newer format version.
	ErrVersion = format.ErrVersion
	// ErrType: the file holds another type of filter.
	ErrType = format.ErrType
	// ErrHash: the file names a hash function this version does not know.
	ErrHash = format.ErrHash
	// ErrCorrupt: the checksums matched but fields contradict each other or
	// the payload.
	ErrCorrupt = format.ErrCorrupt
	// ErrChecksum: a CRC-32C did not match: the data was damaged.
	ErrChecksum = format.ErrChecksum
	// ErrTruncated: the data ended before the filter did.
	ErrTruncated = format.ErrTruncated
	// ErrTooLarge: the header declares tables above MaxBits.
	ErrTooLarge = format.ErrTooLarge
	// ErrZero: the Filter is a zero value, not made by New, NewWith or
	// Read; it tests every key absent but cannot store or be written.
	ErrZero = format.ErrZero
)

// metaWords is the number of configuration words before the table list.
const metaWords = 3

// flagNoGrow is bit 0 of the flags in word 0.
const flagNoGrow = 1

func (f *Filter) header() format.Header {
	return format.Header{
		Type:       TypeCuckoo,
		Seed:       f.cfg.Seed,
		M:          f.tables[0].buckets,
		K:          f.cfg.BucketSize,
		N:          f.cfg.Capacity,
		P:          f.cfg.Rate,
		Count:      f.count,
		PayloadLen: 8 * f.payloadWords(),
	}
}

func (f *Filter) payloadWords() uint64 {
	n := uint64(metaWords + 2*len(f.tables))
	for k := range f.tables {
		n += uint64(len(f.tables[k].words))
	}
	return n
}

func (f *Filter) meta() []uint64 {
	c := f.cfg
	var flags uint64
	if c.NoGrow {
		flags |= flagNoGrow
	}
	m := []uint64{
		uint64(c.FingerprintBits) | flags<<32,
		uint64(c.MaxKicks) | uint64(c.Expansion)<<32,
		uint64(len(f.tables)) | c.MaxBytes>>10<<32,
	}
	for _, t := range f.tables {
		m = append(m, t.buckets, t.count)
	}
	return m
}

// WriteTo writes the filter to w in the bloomkit file format, streaming
// the tables through a small buffer. It returns the number of bytes
// written.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	if len(f.tables) == 0 {
		return 0, ErrZero
	}
	cw := &format.CRCWriter{W: w}
	h := f.header()
	if _, err := cw.Write(h.Marshal()); err != nil {
		return cw.N, fmt.Errorf("cuckoo: writing header: %w", err)
	}
	if err := format.WriteWords(cw, f.meta()); err != nil {
		return cw.N, err
	}
	for k := range f.tables {
		if err := format.WriteWords(cw, f.tables[k].words); err != nil {
			return cw.N, err
		}
	}
	return cw.N, cw.WriteTrailer()
}

// Read reads one cuckoo filter from r (see ReadFrom).
func Read(r io.Reader) (*Filter, error) {
	f := new(Filter)
	if _, err := f.ReadFrom(r); err != nil {
		return nil, err
	}
	return f, nil
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

func plainAlloc(n uint64) []uint64 { return make([]uint64, n) }

// ReadFrom replaces f with the cuckoo filter read from r, reading exactly
// the filter's bytes. On error f is unchanged and the error wraps one of
// ErrBadMagic, ErrVersion, ErrType, ErrHash, ErrCorrupt, ErrChecksum,
// ErrTruncated or ErrTooLarge, or the reader's own error. It never
// allocates much more than the input holds.
func (f *Filter) ReadFrom(r io.Reader) (int64, error) {
	avail, known := format.Remaining(r)
	cr := &format.CRCReader{R: r}
	g, err := readFilter(cr, avail, known)
	if err != nil {
		return cr.N, err
	}
	*f = *g
	return cr.N, nil
}

func readFilter(cr *format.CRCReader, avail int64, known bool) (*Filter, error) {
	h, err := format.ReadHeader(cr, TypeCuckoo)
	if err != nil {
		return nil, err
	}
	if h.K < 1 || h.K > MaxBucketSize {
		return nil, corrupt("bucket size %d", h.K)
	}
	if h.M < 1 {
		return nil, corrupt("a first table of 0 buckets")
	}
	if h.M > MaxBits/uint64(h.K) {
		return nil, fmt.Errorf("%w: a first table of %d buckets of %d slots, the limit is %d bits", ErrTooLarge, h.M, h.K, uint64(MaxBits))
	}
	if !(h.P >= 0 && h.P < 1) {
		return nil, corrupt("planned rate %v is not in [0, 1)", h.P)
	}
	if h.PayloadLen%8 != 0 || h.PayloadLen < 8*metaWords {
		return nil, corrupt("payload of %d bytes", h.PayloadLen)
	}
	if err := format.CheckAvailable(h, avail-format.HeaderSize, known); err != nil {
		return nil, err
	}
	m, err := format.ReadWords(cr, metaWords, true, plainAlloc)
	if err != nil {
		return nil, err
	}
	c := Config{
		Capacity:        h.N,
		Rate:            h.P,
		Seed:            h.Seed,
		Buckets:         h.M,
		BucketSize:      h.K,
		FingerprintBits: uint32(m[0] & 0xffffffff),
		NoGrow:          m[0]>>32&flagNoGrow != 0,
		MaxKicks:        uint32(m[1]),
		Expansion:       uint32(m[1] >> 32),
		MaxBytes:        m[2] >> 32 << 10,
	}
	switch {
	case m[0]>>32&^flagNoGrow != 0:
		return nil, corrupt("unknown flags %#x", m[0]>>32)
	case c.FingerprintBits < MinFingerprintBits || c.FingerprintBits > MaxFingerprintBits:
		return nil, corrupt("fingerprints of %d bits", c.FingerprintBits)
	case c.MaxKicks < 1 || c.MaxKicks > MaxMaxKicks:
		return nil, corrupt("max kicks %d", c.MaxKicks)
	case c.Expansion < 1 || c.Expansion > MaxExpansion || c.Expansion&(c.Expansion-1) != 0:
		return nil, corrupt("expansion %d (a power of two up to %d)", c.Expansion, MaxExpansion)
	case uint32(m[2]) < 1 || uint32(m[2]) > MaxTables:
		return nil, corrupt("%d tables", uint32(m[2]))
	case c.NoGrow && uint32(m[2]) != 1:
		return nil, corrupt("%d tables in a filter that does not grow", uint32(m[2]))
	case c.MaxBytes > MaxBits/8:
		return nil, corrupt("a size limit of %d bytes, above %d", c.MaxBytes, uint64(MaxBits/8))
	}
	nt := int(uint32(m[2]))
	if h.PayloadLen < 8*uint64(metaWords+2*nt) {
		return nil, corrupt("payload of %d bytes for %d tables", h.PayloadLen, nt)
	}
	list, err := format.ReadWords(cr, uint64(2*nt), true, plainAlloc)
	if err != nil {
		return nil, err
	}
	s := newShape(uint64(c.BucketSize), uint64(c.FingerprintBits))
	f := &Filter{shape: s, tables: make([]table, nt)}
	step := uint(bits.TrailingZeros32(c.Expansion))
	var totalBits, words, count uint64
	for k := range nt {
		n, items := list[2*k], list[2*k+1]
		shift := uint(k) * step
		if shift >= 64 || h.M > MaxBits>>shift || n != h.M<<shift {
			return nil, corrupt("table %d has %d buckets, want %d × %d^%d", k, n, h.M, c.Expansion, k)
		}
		if items > n*s.b {
			return nil, corrupt("table %d holds %d items in %d slots", k, items, n*s.b)
		}
		totalBits += n * s.bb // at most 64 terms below 2^43 each
		if totalBits > MaxBits {
			return nil, fmt.Errorf("%w: tables of more than %d bits", ErrTooLarge, uint64(MaxBits))
		}
		words += s.tableWords(n)
		count += items
		f.tables[k] = table{buckets: n, count: items, nb0: h.M, shift: shift}
	}
	if c.MaxBytes != 0 && 8*words > c.MaxBytes {
		return nil, corrupt("tables of %d bytes, above the filter's limit of %d", 8*words, c.MaxBytes)
	}
	if count != h.Count {
		return nil, corrupt("tables hold %d items, the header says %d", count, h.Count)
	}
	if want := 8 * (uint64(metaWords+2*nt) + words); h.PayloadLen != want {
		return nil, corrupt("payload of %d bytes, the tables call for %d", h.PayloadLen, want)
	}
	for k := range f.tables {
		t := &f.tables[k]
		t.words, err = format.ReadWords(cr, s.tableWords(t.buckets), known, allocWords)
		if err != nil {
			return nil, err
		}
	}
	if err := cr.ReadTrailer(); err != nil {
		return nil, err
	}
	// Checked after the checksum, so that damage reads as ErrChecksum and
	// only a forged (re-checksummed) file as ErrCorrupt.
	for k := range f.tables {
		t := &f.tables[k]
		if extra := t.buckets * s.bb % 64; extra != 0 && t.words[len(t.words)-1]>>extra != 0 {
			return nil, corrupt("table %d has bits set after its last bucket", k)
		}
		if occ := s.occupied(t); occ != t.count {
			return nil, corrupt("table %d holds %d fingerprints, its count says %d", k, occ, t.count)
		}
	}
	f.cfg, f.count, f.rng = c, count, rngStart(c.Seed^count)
	return f, nil
}
