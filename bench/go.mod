module github.com/bloomkit/bloomkit/bench

go 1.26

require (
	github.com/FastFilter/xorfilter v0.4.1
	github.com/bits-and-blooms/bloom/v3 v3.7.1
	github.com/bloomkit/bloomkit v0.0.0-00010101000000-000000000000
	github.com/zeebo/xxh3 v1.1.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/greatroar/blobloom v0.8.1
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	golang.org/x/sys v0.30.0 // indirect
)

replace github.com/bloomkit/bloomkit => ../
