package redisbloom

import (
	"errors"
	"fmt"
	"math"
)

// RedisBloom stores its filters in Redis's RDB files (and DUMP payloads)
// as module values: a list of typed fields that RedisBloom's rdb_save
// writes and rdb_load reads. The functions here read and write those
// fields through the two small interfaces below, which a Redis RDB codec
// implements; they know nothing of the RDB framing itself.
//
// A link's bit array (a cuckoo sub-filter's buckets) in the RDB is the
// same bytes as its SCANDUMP chunk, and a loaded filter is checked as
// LOADCHUNK checks one.

// Module type names and the encoding versions RedisBloom 2.2 to 8.x
// register and write.
const (
	BloomModuleType  = "MBbloom--"
	CuckooModuleType = "MBbloomCF"
	BloomEncVer      = 4
	CuckooEncVer     = 4
)

// Encoding versions of older RedisBloom releases, still read.
const (
	bloomMinOptionsEnc = 2 // options field (1.1.1 on)
	bloomMinGrowthEnc  = 4 // growth field (2.2 on); before it growth is 2
	cuckooMinExpEnc    = 4 // deletes, bucket size, iterations, expansion, per-filter buckets (2.2 on)
	cuckooDefaultBkt   = 2
	cuckooDefaultIter  = 20
	cuckooDefaultExp   = 1
)

// ErrRDB wraps every refusal of a module value.
var ErrRDB = errors.New("RedisBloom module value not loaded")

// FieldReader reads a module value's fields in order (a Redis RDB
// codec's module reader).
type FieldReader interface {
	LoadUnsigned() (uint64, error)
	LoadDouble() (float64, error)
	// LoadStringInto reads a string field into the slice alloc returns for
	// its length.
	LoadStringInto(alloc func(n uint64) ([]byte, error)) error
}

// FieldWriter writes a module value's fields in order.
type FieldWriter interface {
	SaveUnsigned(v uint64)
	SaveDouble(v float64)
	SaveString(b []byte)
}

func rdbErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrRDB, fmt.Sprintf(format, a...))
}

// EncodeRDB writes the chain as RedisBloom's BFRdbSave does (encoding
// version BloomEncVer).
func (b *Bloom) EncodeRDB(w FieldWriter) {
	var one [1]Link
	links := b.view(&one)
	w.SaveUnsigned(b.Size)
	w.SaveUnsigned(uint64(len(links)))
	w.SaveUnsigned(uint64(b.Options))
	w.SaveUnsigned(uint64(b.Growth))
	for i := range links {
		l := &links[i]
		w.SaveUnsigned(l.Entries)
		w.SaveDouble(l.Error)
		w.SaveUnsigned(uint64(l.Hashes))
		w.SaveDouble(l.BPE)
		w.SaveUnsigned(l.Bits)
		w.SaveUnsigned(uint64(l.N2))
		w.SaveString(l.Data)
		w.SaveUnsigned(l.Size)
	}
}

// DecodeBloomRDB reads a chain RedisBloom's BFRdbSave wrote with encoding
// version encver (0 to 4), checking every link as LOADCHUNK does. allow
// (may be nil) is asked for each bit array's size before it is
// allocated. Chains hashed with 32 bits (RedisBloom 1.x without the
// FORCE64 option) are refused: their answers would differ.
func DecodeBloomRDB(r FieldReader, encver int, allow func(uint64) error) (_ *Bloom, err error) {
	if encver < 0 || encver > BloomEncVer {
		return nil, rdbErr("%s encoding version %d (at most %d is read)", BloomModuleType, encver, BloomEncVer)
	}
	b := &Bloom{Growth: 2, ext: &bloomExt{}}
	defer func() {
		if err != nil {
			b.Free()
		}
	}()
	if b.Size, err = r.LoadUnsigned(); err != nil {
		return nil, err
	}
	nf, err := r.LoadUnsigned()
	if err != nil {
		return nil, err
	}
	if nf == 0 || nf > math.MaxUint32 {
		return nil, rdbErr("bloom chain of %d links", nf)
	}
	if encver >= bloomMinOptionsEnc {
		o, err := r.LoadUnsigned()
		if err != nil {
			return nil, err
		}
		if o > math.MaxUint32 || !validOptions(uint32(o)) {
			return nil, rdbErr("bloom options %#x", o)
		}
		b.Options = uint32(o)
	}
	if b.Options&OptForce64 == 0 {
		return nil, rdbErr("bloom chain hashed with 32 bits (RedisBloom 1.x); only 64-bit chains are served")
	}
	if encver >= bloomMinGrowthEnc {
		g, err := r.LoadUnsigned()
		if err != nil {
			return nil, err
		}
		if g > math.MaxUint32 {
			return nil, rdbErr("bloom growth %d", g)
		}
		b.Growth = uint32(g)
	}
	var sum, total uint64
	for i := uint64(0); i < nf; i++ {
		var l Link
		if l.Entries, err = r.LoadUnsigned(); err != nil {
			return nil, err
		}
		if l.Error, err = r.LoadDouble(); err != nil {
			return nil, err
		}
		h, err := r.LoadUnsigned()
		if err != nil {
			return nil, err
		}
		if h > maxHashes {
			return nil, rdbErr("bloom link with %d hashes", h)
		}
		l.Hashes = uint32(h)
		if l.BPE, err = r.LoadDouble(); err != nil {
			return nil, err
		}
		if encver == 0 {
			l.Bits = uint64(float64(l.Entries) * l.BPE)
		} else {
			if l.Bits, err = r.LoadUnsigned(); err != nil {
				return nil, err
			}
			n2, err := r.LoadUnsigned()
			if err != nil {
				return nil, err
			}
			if n2 > 63 {
				return nil, rdbErr("bloom link n2 %d", n2)
			}
			l.N2 = uint8(n2)
		}
		err = r.LoadStringInto(func(n uint64) ([]byte, error) {
			l.Bytes = n
			if !validLink(&l) || !addSizes(&sum, &total, &l) { // l.Size is 0 yet: bytes only
				return nil, rdbErr("bloom link %d: %d bytes for %d bits, %d hashes, error %g", i, n, l.Bits, l.Hashes, l.Error)
			}
			if allow != nil {
				if err := allow(n); err != nil {
					return nil, err
				}
			}
			d, err := safeMake(n)
			if err != nil {
				return nil, err
			}
			l.Data = d
			return d, nil
		})
		if l.Data != nil {
			b.ext.links = append(b.ext.links, l) // freed with b on error
		}
		if err != nil {
			return nil, err
		}
		size, err := r.LoadUnsigned()
		if err != nil {
			return nil, err
		}
		if size > math.MaxUint64-sum {
			return nil, rdbErr("bloom item counts overflow")
		}
		sum += size
		b.ext.links[len(b.ext.links)-1].Size = size
	}
	if sum != b.Size {
		return nil, rdbErr("bloom chain counts %d items, its links %d", b.Size, sum)
	}
	b.AllowAlloc = allow
	b.pack()
	return b, nil
}

// EncodeRDB writes the filter as RedisBloom's CFRdbSave does (encoding
// version CuckooEncVer).
func (c *Cuckoo) EncodeRDB(w FieldWriter) {
	w.SaveUnsigned(uint64(len(c.Filters)))
	w.SaveUnsigned(c.NumBuckets)
	w.SaveUnsigned(c.NumItems)
	w.SaveUnsigned(c.NumDeletes)
	w.SaveUnsigned(uint64(c.BucketSize))
	w.SaveUnsigned(uint64(c.MaxIterations))
	w.SaveUnsigned(uint64(c.Expansion))
	for _, f := range c.Filters {
		w.SaveUnsigned(uint64(len(f)) / uint64(c.BucketSize))
		w.SaveString(f)
	}
}

// DecodeCuckooRDB reads a filter RedisBloom's CFRdbSave wrote with
// encoding version encver (up to 4; before 4 the bucket size, iterations
// and expansion are RedisBloom's defaults and deletions are not counted).
// The filter is checked as CF.LOADCHUNK's header is (at most maxFilters
// sub-filters, allow asked for the total size), and each sub-filter's
// buckets must be the size its position implies.
func DecodeCuckooRDB(r FieldReader, encver int, maxFilters uint64, allow func(uint64) error) (_ *Cuckoo, err error) {
	if encver < 0 || encver > CuckooEncVer {
		return nil, rdbErr("%s encoding version %d (at most %d is read)", CuckooModuleType, encver, CuckooEncVer)
	}
	var f [7]uint64 // numFilters, numBuckets, numItems, numDeletes, bucketSize, maxIterations, expansion
	f[3], f[4], f[5], f[6] = 0, cuckooDefaultBkt, cuckooDefaultIter, cuckooDefaultExp
	n := 3
	if encver >= cuckooMinExpEnc {
		n = 7
	}
	for i := range n {
		if f[i], err = r.LoadUnsigned(); err != nil {
			return nil, err
		}
	}
	if f[0] == 0 || f[0] > maxFilters || f[0] > math.MaxUint16 || f[4] > math.MaxUint16 || f[5] > math.MaxUint16 || f[6] > math.MaxUint16 {
		return nil, rdbErr("cuckoo filter of %d sub-filters, bucket size %d, %d iterations, expansion %d", f[0], f[4], f[5], f[6])
	}
	c := &Cuckoo{NumBuckets: f[1], NumItems: f[2], NumDeletes: f[3], BucketSize: uint16(f[4]),
		MaxIterations: uint16(f[5]), Expansion: uint16(f[6])}
	// The same bytes as CF.SCANDUMP's header: the same checks and sizes.
	hdr := c.Header()
	for i := range 8 {
		hdr[24+i] = byte(f[0] >> (8 * i))
	}
	c, err = LoadCuckooHeader(hdr, maxFilters, allow)
	if err != nil {
		return nil, rdbErr("cuckoo filter of %d sub-filters of %d buckets of %d: %v", f[0], f[1], f[4], err)
	}
	defer func() {
		if err != nil {
			c.Free()
		}
	}()
	for i, sub := range c.Filters {
		nb := c.NumBuckets
		if encver >= cuckooMinExpEnc {
			if nb, err = r.LoadUnsigned(); err != nil {
				return nil, err
			}
		}
		if nb*uint64(c.BucketSize) != uint64(len(sub)) || nb > uint64(len(sub)) {
			return nil, rdbErr("cuckoo sub-filter %d of %d buckets, expected %d", i, nb, len(sub)/int(c.BucketSize))
		}
		err = r.LoadStringInto(func(n uint64) ([]byte, error) {
			if n != uint64(len(sub)) {
				return nil, rdbErr("cuckoo sub-filter %d of %d bytes, expected %d", i, n, len(sub))
			}
			return sub, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}
