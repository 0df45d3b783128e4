#!/usr/bin/python3
# Writes vectors.txt: XXH3-128 of keys in every XXH3 length class, computed
# by the reference C implementation (libxxhash 0.8.1, through Debian's
# python3-xxhash 3.2.0), independent of the Go package bloom uses.
#
#   apt-get install python3-xxhash xxhash
#   /usr/bin/python3 gen.py > vectors.txt
#
# The unseeded lines were also checked against the xxhsum CLI from the same
# C library: head -c LEN of the key | xxhsum -H2 (see TestXXH3Vectors).
# Each line: key length, variant, seed (hex), key (hex), then the 128-bit
# hash as XXH128_canonical (high 64 bits first) in hex.
import xxhash

LENGTHS = [0, 1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17, 31, 64, 100, 128, 129, 160,
           200, 240, 241, 256, 500, 1024, 4096]
SEEDS = [0, 0x0123456789ABCDEF]

def key(length, variant):
    return bytes((i * 131 + length * 7 + variant * 29) & 0xFF for i in range(length))

print("# length variant seed key xxh3-128 (see gen.py)")
for seed in SEEDS:
    for length in LENGTHS:
        for variant in range(2):
            k = key(length, variant)
            print(length, variant, "%016x" % seed, k.hex() or "-", xxhash.xxh3_128_hexdigest(k, seed=seed))
