// Package keyslot computes a key's Redis Cluster hash slot, as Redis does:
// CRC-16/XMODEM of the key, or of its first non-empty {hash tag}, mod
// 16384.
package keyslot

import "strings"

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// Of returns the hash slot of key.
func Of(key string) int {
	return int(crc16(HashTag(key)) % Slots)
}

// HashTag returns the part of key that decides its slot: what stands
// between the first '{' and the first '}' after it, if that is not empty;
// otherwise the whole key.
func HashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021), the cluster's key hash.
func crc16(s string) uint16 {
	var crc uint16
	for i := range len(s) {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
