module github.com/bloomkit/bloomkit/bench

go 1.26.0

require (
	github.com/FastFilter/xorfilter v0.4.1
	github.com/bits-and-blooms/bloom/v3 v3.7.1
	github.com/bloomkit/bloomkit v0.0.0-00010101000000-000000000000
	github.com/caio/go-tdigest/v4 v4.1.0
	github.com/influxdata/tdigest v0.0.1
	github.com/linvon/cuckoo-filter v0.4.0
	github.com/parquet-go/parquet-go v0.32.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/seiflotfy/cuckoofilter v0.0.0-20240715131351-a2f2c23f1771
	github.com/tylertreat/BoomFilters v0.0.0-20251001182300-5b3723cc64ae
	github.com/zeebo/xxh3 v1.1.0
)

require (
	github.com/andybalholm/brotli v1.1.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/d4l3k/messagediff v1.2.1 // indirect
	github.com/dgryski/go-metro v0.0.0-20200812162917-85c65e2d0165 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.20.1 // indirect
	github.com/parquet-go/bitpack v1.0.0 // indirect
	github.com/parquet-go/jsonlite v1.0.0 // indirect
	github.com/pierrec/lz4/v4 v4.1.21 // indirect
	github.com/twmb/murmur3 v1.2.2 // indirect
	github.com/twpayne/go-geom v1.6.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

require (
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/greatroar/blobloom v0.8.1
	github.com/klauspost/cpuid/v2 v2.4.0 // indirect
	golang.org/x/sys v0.49.0
)

replace github.com/bloomkit/bloomkit => ../
