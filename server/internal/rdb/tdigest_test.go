package rdb

import (
	"math"
	"testing"

	"github.com/bloomkit/bloomkit/tdigest"
)

// redisBloomEmptyTDigest is DUMP of a fresh TDIGEST.CREATE key from Redis
// 7.0 + RedisBloom 2.8: its signed fields (capacity, node counts) are
// unsigned fields in the stream, as RedisModule_SaveSigned writes them.
const redisBloomEmptyTDigest = "\a\x81L2\x12\xf96\x0f\x10\x00\x04\x00\x00\x00\x00\x00\x00Y@\x04\xff\xff\xff\xff\xff\xff\xef\x7f\x04\xff\xff\xff\xff\xff\xff\xef\xff\x02Bb\x02\x00\x02\x00\x02\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\n\x00\xdc\x9c\x9d\x1b\xa7\xb4\xa1\xd4"

func TestTDigestFromRedisBloom(t *testing.T) {
	v, err := ParseDump([]byte(redisBloomEmptyTDigest), Options{Modules: RedisBloomDecoders(nil)})
	if err != nil || v.Err != nil {
		t.Fatal(err, v.Err)
	}
	d := v.Value.(*tdigest.Digest)
	if in := d.Info(); in.Compression != 100 || in.Capacity != 610 || d.Count() != 0 {
		t.Fatalf("%+v", in)
	}
	again, err := DumpModule(TDigestValue{d}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != redisBloomEmptyTDigest {
		t.Fatalf("re-encoded %q", again)
	}
}

// TestTDigestRDBRoundTrip: what TDigestValue writes decodes to the merged
// digest, the one-value digest (which RedisBloom writes without its
// value) to that value.
func TestTDigestRDBRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 2, 1000} {
		d, _ := tdigest.New(40)
		for i := range n {
			_ = d.Add(float64(i*i%97) + 0.25)
		}
		p, err := DumpModule(TDigestValue{d}, 10)
		if err != nil {
			t.Fatal(err)
		}
		v, err := ParseDump(p, Options{Modules: RedisBloomDecoders(nil)})
		if err != nil || v.Err != nil {
			t.Fatalf("n=%d: %v %v", n, err, v.Err)
		}
		g := v.Value.(*tdigest.Digest)
		want := d.Clone()
		_ = want.Compress()
		if !g.Equal(want) || math.Float64bits(g.Quantile(0.3)) != math.Float64bits(want.Quantile(0.3)) {
			t.Fatalf("n=%d: decoded %+v, want %+v", n, g.Info(), want.Info())
		}
	}
}
