package rdb

import "github.com/bloomkit/bloomkit/redisbloom"

// RedisBloom's module types, MBbloom-- (scalable Bloom chain) and
// MBbloomCF (cuckoo filter), as the redisbloom package lays them out.

// MaxCuckooFilters bounds a loaded cuckoo filter's sub-filters, as
// CF.LOADCHUNK does.
const MaxCuckooFilters = 65536

type bloomDecoder struct{ allow func(uint64) error }

func (d bloomDecoder) DecodeModule(m *ModuleReader, encver int) (any, error) {
	return redisbloom.DecodeBloomRDB(m, encver, d.allow)
}

type cuckooDecoder struct{ allow func(uint64) error }

func (d cuckooDecoder) DecodeModule(m *ModuleReader, encver int) (any, error) {
	return redisbloom.DecodeCuckooRDB(m, encver, MaxCuckooFilters, d.allow)
}

// RedisBloomDecoders returns decoders for RedisBloom's two filter types
// and its t-digest, for Options.Modules: values decode to
// *redisbloom.Bloom, *redisbloom.Cuckoo and *tdigest.Digest. allow (may be nil) is asked before each bit array
// is allocated and is kept as the filter's AllowAlloc.
func RedisBloomDecoders(allow func(uint64) error) map[string]ModuleDecoder {
	return map[string]ModuleDecoder{
		redisbloom.BloomModuleType:  bloomDecoder{allow},
		redisbloom.CuckooModuleType: cuckooDecoder{allow},
		TDigestModuleType:           TDigestDecoder(allow),
	}
}

// AddRedisBloomDecoders adds RedisBloom's decoders to opts.Modules.
func AddRedisBloomDecoders(opts *Options, allow func(uint64) error) {
	if opts.Modules == nil {
		opts.Modules = map[string]ModuleDecoder{}
	}
	for k, v := range RedisBloomDecoders(allow) {
		opts.Modules[k] = v
	}
}

// BloomValue is a Bloom chain as a module value to write (MBbloom--,
// encoding version 4, as RedisBloom 2.2 to 8.x write it).
type BloomValue struct{ *redisbloom.Bloom }

// ModuleType implements ModuleEncoder.
func (BloomValue) ModuleType() (string, int) {
	return redisbloom.BloomModuleType, redisbloom.BloomEncVer
}

// EncodeModule implements ModuleEncoder.
func (v BloomValue) EncodeModule(m *ModuleWriter) error {
	v.EncodeRDB(m)
	return m.Err()
}

// CuckooValue is a cuckoo filter as a module value to write (MBbloomCF,
// encoding version 4).
type CuckooValue struct{ *redisbloom.Cuckoo }

// ModuleType implements ModuleEncoder.
func (CuckooValue) ModuleType() (string, int) {
	return redisbloom.CuckooModuleType, redisbloom.CuckooEncVer
}

// EncodeModule implements ModuleEncoder.
func (v CuckooValue) EncodeModule(m *ModuleWriter) error {
	v.EncodeRDB(m)
	return m.Err()
}
