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
	if len(in) < 3 || limit <= 0 {
		return nil
	}
	out := make([]byte, 0, min(limit, len(in)))
	var htab [lzfHashSize]int32 // position+1; 0 is empty
	lit := 0                    // literals in the current run
	litStart := 0               // index in out of the current run's control byte
	out = append(out, 0)        // control byte of the first literal run
	ip := 0
	flushRun := func() {
		out[litStart] = byte(lit - 1)
	}
	for ip < len(in)-2 {
		h := ((uint32(in[ip])<<16 | uint32(in[ip+1])<<8 | uint32(in[ip+2])) * 2654435761) >> (32 - lzfHashLog)
		ref := int(htab[h]) - 1
		htab[h] = int32(ip + 1)
		off := ip - ref - 1
		if ref >= 0 && off < lzfMaxOff &&
			in[ref] == in[ip] && in[ref+1] == in[ip+1] && in[ref+2] == in[ip+2] {
			n := 3 // bytes matched
			for maxN := min(len(in)-ip, lzfMaxRef); n < maxN && in[ref+n] == in[ip+n]; n++ {
			}
			l := n - 2 // the length field
			if lit > 0 {
				flushRun()
			} else {
				out = out[:len(out)-1] // drop the empty run's control byte
			}
			if len(out)+3 > limit {
				return nil
			}
			if l < 7 {
				out = append(out, byte(off>>8)|byte(l<<5))
			} else {
				out = append(out, byte(off>>8)|7<<5, byte(l-7))
			}
			out = append(out, byte(off))
			ip += n
			lit = 0
			litStart = len(out)
			out = append(out, 0)
			continue
		}
		if len(out)+1 > limit {
			return nil
		}
		out = append(out, in[ip])
		lit++
		ip++
		if lit == lzfMaxLit {
			flushRun()
			lit = 0
			litStart = len(out)
			out = append(out, 0)
		}
	}
	for ip < len(in) {
		if len(out)+1 > limit {
			return nil
		}
		out = append(out, in[ip])
		lit++
		ip++
		if lit == lzfMaxLit {
			flushRun()
			lit = 0
			litStart = len(out)
			out = append(out, 0)
		}
	}
	if lit > 0 {
		flushRun()
	} else {
		out = out[:len(out)-1]
	}
	if len(out) > limit {
		return nil
	}
	return out
}
