package server

import (
	"errors"
	"fmt"

	"github.com/bloomkit/bloomkit/server/internal/rdb"
)

// DecodeSketchDump decodes the DUMP payload of a RedisBloom Count-Min
// Sketch, Top-K or t-digest, as Redis with the RedisBloom module or bloom
// serve gives it, into a *cms.Sketch, *topk.TopK or *tdigest.Digest. The
// payload's bytes are not comparable between servers (RedisBloom writes
// memory addresses into a Top-K's, and compressors differ), the decoded
// sketches are: bloom migrate compares them to tell a copy from a
// different sketch. Any other payload, or a damaged one, is an error.
func DecodeSketchDump(payload []byte) (any, error) {
	var opts rdb.Options
	rdb.AddSketchDecoders(&opts, nil)
	opts.Modules[rdb.TDigestModuleType] = rdb.TDigestDecoder(nil)
	e, err := rdb.ParseDump(payload, opts)
	if err != nil {
		return nil, err
	}
	if e.Err != nil {
		return nil, e.Err
	}
	if e.Type != rdb.TypeModule2 || e.Value == nil {
		return nil, errors.New("not a Count-Min Sketch, Top-K or t-digest")
	}
	switch e.Module {
	case rdb.CMSModuleType, rdb.TopKModuleType, rdb.TDigestModuleType:
		return e.Value, nil
	}
	return nil, fmt.Errorf("a %s module value, not a Count-Min Sketch, Top-K or t-digest", e.Module)
}
