package rdb

import (
	"encoding/binary"
	"hash/crc64"
)

// Redis checksums RDB files and DUMP payloads with the CRC-64 it calls
// "Jones": polynomial 0xad93d23594c935a9, bits reflected, initial value 0
// and no final inversion. The table below is that polynomial reflected.
var jonesTable = crc64.MakeTable(0x95ac9329ac4bc9b5)

// jonesSlicing extends jonesTable for eight bytes at a time (slicing by
// 8): jonesSlicing[k][b] is the CRC of byte b followed by k zero bytes.
// hash/crc64 slices by 8 only for its own two polynomials, or for a
// buffer of 2 KiB or more, and an RDB reader sums a few bytes at a time:
// byte by byte, the checksum cost a full sync an eighth of its CPU.
var jonesSlicing = func() *[8][256]uint64 {
	var t [8][256]uint64
	t[0] = *jonesTable
	for k := 1; k < 8; k++ {
		for i := range 256 {
			c := t[k-1][i]
			t[k][i] = t[0][byte(c)] ^ c>>8
		}
	}
	return &t
}()

// Checksum continues Redis's CRC-64 crc over p (start with 0).
func Checksum(crc uint64, p []byte) uint64 {
	t := jonesSlicing
	for len(p) >= 8 {
		crc ^= binary.LittleEndian.Uint64(p)
		crc = t[7][byte(crc)] ^ t[6][byte(crc>>8)] ^ t[5][byte(crc>>16)] ^ t[4][byte(crc>>24)] ^
			t[3][byte(crc>>32)] ^ t[2][byte(crc>>40)] ^ t[1][byte(crc>>48)] ^ t[0][byte(crc>>56)]
		p = p[8:]
	}
	for _, b := range p {
		crc = t[0][byte(crc)^b] ^ crc>>8
	}
	return crc
}
