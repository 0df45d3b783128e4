package rdb

import "errors"

// LZF is the compression Redis applies to strings longer than 20 bytes in
// RDB files (rdbcompression yes). The format: a control byte c; c < 32
// starts a literal run of c+1 bytes; otherwise a back reference of length
// (c>>5)+2 (c>>5 == 7: plus the next byte) at distance ((c&31)<<8 | next
// byte)+1 behind the output position.

var errLZF = errors.New("corrupt LZF data")

// lzfMaxRatio bounds how much an LZF stream can expand: a back reference
// of three input bytes yields at most 264 output bytes. A declared
// uncompressed length beyond ratio × compressed length cannot be right
// and is refused before anything is allocated for it.
const lzfMaxRatio = 88

// lzfDecompress expands in into out, which must be exactly the
// uncompressed size.
func lzfDecompress(in, out []byte) error {
	ip, op := 0, 0
	for ip < len(in) {
		c := int(in[ip])
		ip++
		if c < 32 {
			n := c + 1
			if ip+n > len(in) || op+n > len(out) {
				return errLZF
			}
			copy(out[op:], in[ip:ip+n])
			ip += n
			op += n
			continue
		}
		n := c >> 5
		if n == 7 {
			if ip >= len(in) {
				return errLZF
			}
			n += int(in[ip])
			ip++
		}
		if ip >= len(in) {
			return errLZF
		}
		ref := op - ((c&0x1f)<<8 | int(in[ip])) - 1
		ip++
		n += 2
		if ref < 0 || op+n > len(out) {
			return errLZF
		}
		// Byte by byte: the source may overlap the bytes being written.
		for i := range n {
			out[op+i] = out[ref+i]
		}
		op += n
	}
	if op != len(out) {
		return errLZF
	}
	return nil
}

const (
	lzfHashLog  = 14
	lzfMaxLit   = 32
	lzfMaxOff   = 1 << 13
	lzfMaxRef   = 264 // 2 + 7 + 255
	lzfHashSize = 1 << lzfHashLog
)

// lzfCompress compresses in into at most limit bytes and returns the
// output, or nil when it does not fit (the caller then stores in raw).
// Any output lzfDecompress accepts is valid LZF; this one is the plain
// hash-table compressor liblzf describes, without its tuning options.
func lzfCompress(in []byte, limit int) []byte {
	n := len(in)
	if n < 3 || limit <= 0 {
		return nil
	}
	out := make([]byte, limit+3)
	var htab [lzfHashSize]int32 // position+1; 0 is empty
	op := 1                     // out[0]: the first literal run's control byte
	lit := 0                    // literals in the current run, after its control byte
	ip := 0
	for ip < n-2 {
		h := ((uint32(in[ip])<<16 | uint32(in[ip+1])<<8 | uint32(in[ip+2])) * 2654435761) >> (32 - lzfHashLog)
		ref := int(htab[h]) - 1
		htab[h] = int32(ip + 1)
		if ref >= 0 && ip-ref-1 < lzfMaxOff &&
			in[ref] == in[ip] && in[ref+1] == in[ip+1] && in[ref+2] == in[ip+2] {
			m := 3 // bytes matched
			for maxM := min(n-ip, lzfMaxRef); m < maxM && in[ref+m] == in[ip+m]; m++ {
			}
			if lit > 0 {
				out[op-lit-1] = byte(lit - 1) // close the run
			} else {
				op-- // drop the empty run's control byte
			}
			if op+4 > limit {
				return nil
			}
			off, l := ip-ref-1, m-2 // l: the length field
			if l < 7 {
				out[op] = byte(off>>8) | byte(l<<5)
				op++
			} else {
				out[op], out[op+1] = byte(off>>8)|7<<5, byte(l-7)
				op += 2
			}
			out[op] = byte(off)
			op += 2 // and the next run's control byte
			ip += m
			lit = 0
			continue
		}
		if op >= limit {
			return nil
		}
		out[op] = in[ip]
		op++
		ip++
		if lit++; lit == lzfMaxLit {
			out[op-lit-1] = byte(lit - 1)
			lit = 0
			op++
		}
	}
	for ; ip < n; ip++ {
		if op >= limit {
			return nil
		}
		out[op] = in[ip]
		op++
		if lit++; lit == lzfMaxLit {
			out[op-lit-1] = byte(lit - 1)
			lit = 0
			op++
		}
	}
	if lit > 0 {
		out[op-lit-1] = byte(lit - 1)
	} else {
		op--
	}
	if op > limit {
		return nil
	}
	return out[:op]
}
