package server

import (
	"strings"
	"testing"
)

// The master's RedisBloom parameters are read from the replies Redis
// gives: Redis 8's CONFIG GET bf-* cf-* (name/value pairs, written here by
// hand: these tests have no Redis 8), Redis 7's MODULE LIST with the bf
// module's load arguments, and refusals.
func TestRedisMasterFilters(t *testing.T) {
	s := &Server{}
	replies := func(m map[string]respValue) func(args ...string) (respValue, error) {
		return func(args ...string) (respValue, error) { return m[args[0]], nil }
	}
	empty := []respValue{}
	for _, c := range []struct {
		name    string
		replies map[string]respValue
		want    map[int]string
		from    string
	}{
		{"redis 8", map[string]respValue{"CONFIG": []respValue{
			"bf-error-rate", "0.001", "bf-expansion-factor", "4", "bf-initial-size", "500",
			"cf-bucket-size", "4", "cf-expansion-factor", "2", "cf-initial-size", "2048", "cf-max-expansions", "10", "cf-max-iterations", "30"}},
			map[int]string{fpBFErrorRate: "0.001", fpBFInitialSize: "500", fpBFExpansion: "4", fpCFBucketSize: "4", fpCFInitialSize: "2048", fpCFMaxIterations: "30", fpCFExpansion: "2"}, "CONFIG GET"},
		{"redisbloom 2.8 with arguments", map[string]respValue{"CONFIG": empty, "MODULE": []respValue{
			[]respValue{"name", "bf", "ver", int64(20820), "path", "redisbloom.so", "args", []respValue{"ERROR_RATE", "0.02", "INITIAL_SIZE", "1000"}}}},
			map[int]string{fpBFErrorRate: "0.02", fpBFInitialSize: "1000", fpBFExpansion: "2"}, "MODULE LIST"},
		{"redisbloom 2.8 without", map[string]respValue{"CONFIG": empty, "MODULE": []respValue{
			[]respValue{"name", "bf", "ver", int64(20820), "path", "redisbloom.so", "args", empty}}},
			map[int]string{fpBFErrorRate: "0.01", fpBFInitialSize: "100"}, "MODULE LIST"},
		{"refused", map[string]respValue{"CONFIG": respError("NOPERM no"), "MODULE": respError("NOPERM no")},
			map[int]string{fpBFErrorRate: "0.01", fpCFInitialSize: "1024"}, "refused to say"},
		{"no module", map[string]respValue{"CONFIG": empty, "MODULE": empty},
			map[int]string{fpBFErrorRate: "0.01"}, "no RedisBloom module"},
	} {
		fc, from, err := s.redisMasterFilters(replies(c.replies))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !strings.Contains(from, c.from) {
			t.Errorf("%s: from %q, want %q", c.name, from, c.from)
		}
		for i, v := range c.want {
			if fc.str[i] != v {
				t.Errorf("%s: %s = %s, want %s", c.name, filterParams[i].name, fc.str[i], v)
			}
		}
		// A limit the master already checked stays the widest.
		if fc.val[fpCFMaxExpansions] != replayFilterConfig.val[fpCFMaxExpansions] {
			t.Errorf("%s: cf-max-expansions = %v", c.name, fc.val[fpCFMaxExpansions])
		}
		// What a chained replica is told reads back the same.
		back, err := decodeMasterFilters("+" + encodeMasterFilters(fc))
		if err != nil || back.str != fc.str {
			t.Errorf("%s: passed on as %q, read back %v, %v", c.name, encodeMasterFilters(fc), back, err)
		}
	}
	if _, _, err := s.redisMasterFilters(replies(map[string]respValue{"CONFIG": []respValue{"bf-error-rate", "2"}})); err == nil {
		t.Error("an out-of-range bf-error-rate from the master was accepted")
	}
}
