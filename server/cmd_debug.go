package server

import (
	"strconv"

	"github.com/bloomkit/bloomkit/redisbloom"
	"github.com/bloomkit/bloomkit/server/internal/keyspace"
)

// BF.DEBUG and CF.DEBUG answer with RedisBloom's text byte for byte
// (rebloom.c, BFDebug_RedisCommand and CFDebug_RedisCommand): RedisBloom's
// own test suite and redis-py's bloom tests parse it.

// cFormatG formats f as C's printf("%g") does: six significant digits,
// trailing zeros removed, an exponent of at least two digits when it is
// below -4 or at least 6. Go's 'g' with precision 6 follows the same rules.
func cFormatG(f float64) string {
	return strconv.FormatFloat(f, 'g', 6, 64)
}

// bloomDebugLink is one link's line of BF.DEBUG.
func bloomDebugLink(b *redisbloom.Bloom, l *redisbloom.Link) string {
	bits := l.Bits
	if bits == 0 {
		bits = 1 << l.N2
	}
	width := 32
	if b.Options&redisbloom.OptForce64 != 0 {
		width = 64
	}
	buf := make([]byte, 0, 96)
	buf = append(buf, "bytes:"...)
	buf = strconv.AppendUint(buf, l.Bytes, 10)
	buf = append(buf, " bits:"...)
	buf = strconv.AppendUint(buf, bits, 10)
	buf = append(buf, " hashes:"...)
	buf = strconv.AppendUint(buf, uint64(l.Hashes), 10)
	buf = append(buf, " hashwidth:"...)
	buf = strconv.AppendInt(buf, int64(width), 10)
	buf = append(buf, " capacity:"...)
	buf = strconv.AppendUint(buf, l.Entries, 10)
	buf = append(buf, " size:"...)
	buf = strconv.AppendUint(buf, l.Size, 10)
	buf = append(buf, " ratio:"...)
	buf = append(buf, cFormatG(l.Error)...)
	return string(buf)
}

// BF.DEBUG key: "size:<items>", then one line per link.
func cmdBFDebug(s *Server, c *Session, args [][]byte, r *Reply) {
	e, st := s.bloomEntry(args[1])
	if st != stOK {
		r.Error(statusErr(st))
		return
	}
	if e.Kind == keyspace.KindNative {
		s.nativeDebug(e.NF, r)
		return
	}
	b := e.BF
	r.Array(1 + b.NumLinks())
	r.BulkString("size:" + strconv.FormatUint(b.Size, 10))
	for i := range b.NumLinks() {
		l := b.Link(i)
		r.BulkString(bloomDebugLink(b, &l))
	}
}

// cuckooDebug is CF.DEBUG's line.
func cuckooDebug(cf *redisbloom.Cuckoo) string {
	buf := make([]byte, 0, 112)
	buf = append(buf, "bktsize:"...)
	buf = strconv.AppendUint(buf, uint64(cf.BucketSize), 10)
	buf = append(buf, " buckets:"...)
	buf = strconv.AppendUint(buf, cf.NumBuckets, 10)
	buf = append(buf, " items:"...)
	buf = strconv.AppendUint(buf, cf.NumItems, 10)
	buf = append(buf, " deletes:"...)
	buf = strconv.AppendUint(buf, cf.NumDeletes, 10)
	buf = append(buf, " filters:"...)
	buf = strconv.AppendInt(buf, int64(len(cf.Filters)), 10)
	buf = append(buf, " max_iterations:"...)
	buf = strconv.AppendUint(buf, uint64(cf.MaxIterations), 10)
	buf = append(buf, " expansion:"...)
	buf = strconv.AppendUint(buf, uint64(cf.Expansion), 10)
	return string(buf)
}

// CF.DEBUG key: one bulk string.
func cmdCFDebug(s *Server, c *Session, args [][]byte, r *Reply) {
	cf, st := s.cuckooKey(args[1])
	if st != stOK {
		r.Error(statusErr(st))
		return
	}
	r.BulkString(cuckooDebug(cf))
}
