package rdb

import "hash/crc64"

// Redis checksums RDB files and DUMP payloads with the CRC-64 it calls
// "Jones": polynomial 0xad93d23594c935a9, bits reflected, initial value 0
// and no final inversion. The table below is that polynomial reflected;
// Go's crc64 package inverts before and after, so Checksum undoes both.
var jonesTable = crc64.MakeTable(0x95ac9329ac4bc9b5)

// Checksum continues Redis's CRC-64 crc over p (start with 0).
func Checksum(crc uint64, p []byte) uint64 {
	return ^crc64.Update(^crc, jonesTable, p)
}
