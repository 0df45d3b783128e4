package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The module configuration parameters answer as RedisBloom 8's do: names,
// defaults, CONFIG SET, ranges and their errors, the error-rate cap and
// the two tied cuckoo ranges.
func TestFilterParamsConfig(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	rc := dialRaw(t, s.Addr())
	defaults := map[string]string{"bf-error-rate": "0.01", "bf-initial-size": "100", "bf-expansion-factor": "2",
		"cf-bucket-size": "2", "cf-initial-size": "1024", "cf-max-iterations": "20", "cf-expansion-factor": "1", "cf-max-expansions": "32"}
	for name, want := range defaults {
		if got := rc.do("CONFIG", "GET", name); got != `["`+name+`" "`+want+`"]` {
			t.Errorf("CONFIG GET %s = %s, want %s", name, got, want)
		}
	}
	if got := rc.do("CONFIG", "GET", "cf-*"); strings.Count(got, `"cf-`) != 5 {
		t.Errorf("CONFIG GET cf-* = %s, want the five cuckoo parameters", got)
	}
	for _, set := range [][2]string{{"bf-error-rate", "0.02"}, {"bf-initial-size", "200"}, {"bf-expansion-factor", "3"},
		{"cf-bucket-size", "3"}, {"cf-initial-size", "2048"}, {"cf-max-iterations", "30"}, {"cf-expansion-factor", "2"}, {"cf-max-expansions", "64"}} {
		if got := rc.do("CONFIG", "SET", set[0], set[1]); got != "+OK" {
			t.Fatalf("CONFIG SET %s %s = %s", set[0], set[1], got)
		}
		if got := rc.do("CONFIG", "GET", set[0]); got != `["`+set[0]+`" "`+set[1]+`"]` {
			t.Errorf("after CONFIG SET %s %s: %s", set[0], set[1], got)
		}
	}
	for _, c := range []struct{ name, value, want string }{
		{"bf-error-rate", "0", "Value for `bf-error-rate` must be in the range (0.000000, 1.000000)"},
		{"bf-error-rate", "1", "Value for `bf-error-rate` must be in the range (0.000000, 1.000000)"},
		{"bf-error-rate", "x", "Invalid value for `bf-error-rate`"},
		{"bf-initial-size", "0", "Value for `bf-initial-size` must be in the range [1, 1073741824]"},
		{"bf-initial-size", "4294967296", "Value for `bf-initial-size` must be in the range [1, 1073741824]"},
		{"bf-expansion-factor", "-1", "Value for `bf-expansion-factor` must be in the range [0, 32768]"},
		{"bf-expansion-factor", "32769", "Value for `bf-expansion-factor` must be in the range [0, 32768]"},
		{"cf-bucket-size", "0", "Value for `cf-bucket-size` must be in the range [1, 255]"},
		{"cf-bucket-size", "256", "Value for `cf-bucket-size` must be in the range [1, 255]"},
		{"cf-initial-size", "0", "Value for `cf-initial-size` must be in the range [6, 1073741824]"}, // bucket size 3 above
		{"cf-max-iterations", "65536", "Value for `cf-max-iterations` must be in the range [1, 65535]"},
		{"cf-expansion-factor", "32769", "Value for `cf-expansion-factor` must be in the range [0, 32768]"},
		{"cf-max-expansions", "0", "Value for `cf-max-expansions` must be in the range [1, 65536]"},
		{"cf-max-expansions", "65537", "Value for `cf-max-expansions` must be in the range [1, 65536]"},
		{"cf-max-expansions", "1.5", "Invalid value for `cf-max-expansions`"},
	} {
		want := "-ERR CONFIG SET failed (possibly related to argument '" + c.name + "') - " + c.want
		if got := rc.do("CONFIG", "SET", c.name, c.value); got != want {
			t.Errorf("CONFIG SET %s %s = %s\nwant %s", c.name, c.value, got, want)
		}
	}
	// Rates above 0.25 are capped, and CONFIG GET says so.
	rc.do("CONFIG", "SET", "bf-error-rate", "0.5")
	if got := rc.do("CONFIG", "GET", "bf-error-rate"); got != `["bf-error-rate" "0.25"]` {
		t.Errorf("bf-error-rate 0.5: %s, want the cap 0.25", got)
	}
	// The initial size bounds the bucket size (at most half of it).
	rc.do("CONFIG", "SET", "cf-initial-size", "100")
	if got := rc.do("CONFIG", "SET", "cf-bucket-size", "51"); !strings.Contains(got, "must be in the range [1, 50]") {
		t.Errorf("cf-bucket-size 51 with cf-initial-size 100: %s", got)
	}
	if got := rc.do("CF.RESERVE", "c", "1000", "BUCKETSIZE", "60"); got != "-BUCKETSIZE: value must be in the range [1, 50]" {
		t.Errorf("CF.RESERVE BUCKETSIZE 60 with cf-initial-size 100: %s", got)
	}
	// Several at once, all or none.
	if got := rc.do("CONFIG", "SET", "bf-initial-size", "300", "bf-error-rate", "2"); !strings.HasPrefix(got, "-ERR") {
		t.Errorf("CONFIG SET with one bad value: %s", got)
	}
	if got := rc.do("CONFIG", "GET", "bf-initial-size"); got != `["bf-initial-size" "200"]` {
		t.Errorf("a failed CONFIG SET changed bf-initial-size: %s", got)
	}
}

// Filters that BF.ADD and CF.ADD create take the parameters in force
// (RedisBloom's test_config_bf_debug_stats), and the log records them:
// the same server restarted with the defaults has the same filters.
func TestFilterParamsCreateAndReplay(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, Config{Dir: dir})
	rc := dialRaw(t, s.Addr())
	rc.do("BF.ADD", "default_bf1", "foo")
	d1 := rc.do("BF.DEBUG", "default_bf1")
	rc.do("BF.RESERVE", "custom_bf1", "0.02", "200", "EXPANSION", "3")
	rc.do("BF.ADD", "custom_bf1", "foo")
	c1 := rc.do("BF.DEBUG", "custom_bf1")
	if got := rc.do("CONFIG", "SET", "bf-error-rate", "0.02", "bf-initial-size", "200", "bf-expansion-factor", "3"); got != "+OK" {
		t.Fatal(got)
	}
	rc.do("BF.ADD", "default_bf2", "foo")
	d2 := rc.do("BF.DEBUG", "default_bf2")
	rc.do("BF.RESERVE", "custom_bf2", "0.01", "100", "EXPANSION", "2")
	rc.do("BF.ADD", "custom_bf2", "foo")
	c2 := rc.do("BF.DEBUG", "custom_bf2")
	if d1 != c2 || d2 != c1 || d1 == d2 {
		t.Errorf("BF.DEBUG: default before %s, custom with the new values %s; default after %s, custom with the old values %s", d1, c1, d2, c2)
	}

	// More ways a filter is created with the parameters.
	rc.do("CONFIG", "SET", "cf-bucket-size", "4", "cf-initial-size", "500", "cf-max-iterations", "7", "cf-expansion-factor", "2")
	rc.do("BF.MADD", "madd", "a", "b")
	rc.do("BF.INSERT", "ins", "CAPACITY", "1000", "ITEMS", "a")
	rc.do("BF.RESERVE", "res", "0.01", "1000") // expansion 3 from the parameters
	rc.do("CF.ADD", "cfadd", "x")
	rc.do("CF.INSERTNX", "cfins", "CAPACITY", "64", "ITEMS", "x", "y")
	rc.do("CF.RESERVE", "cfres", "1000")
	rc.do("CONFIG", "SET", "bf-expansion-factor", "0")
	rc.do("BF.ADD", "nonscaling", "a")
	keys := []string{"default_bf1", "custom_bf1", "default_bf2", "custom_bf2", "madd", "ins", "res", "nonscaling"}
	ckeys := []string{"cfadd", "cfins", "cfres"}
	if got := rc.do("CF.DEBUG", "cfadd"); !strings.Contains(got, "bktsize:4 ") || !strings.Contains(got, "max_iterations:7 ") {
		t.Errorf("CF.ADD after CONFIG SET cf-bucket-size 4: %s", got)
	}
	if got := rc.do("BF.INFO", "nonscaling", "EXPANSION"); got != "nil" && got != "[nil]" {
		t.Errorf("BF.ADD with bf-expansion-factor 0 made a scaling filter: BF.INFO EXPANSION %s", got)
	}
	dump := func(rc *rawConn) map[string]string {
		m := map[string]string{}
		for _, k := range keys {
			m[k] = rc.do("BF.DEBUG", k) + rc.do("BF.SCANDUMP", k, "0")
		}
		for _, k := range ckeys {
			m[k] = rc.do("CF.DEBUG", k) + rc.do("CF.SCANDUMP", k, "0")
		}
		return m
	}
	before := dump(rc)
	s2 := restart(t, s, false) // replays the log with RedisBloom's defaults
	after := dump(dialRaw(t, s2.Addr()))
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s differs after replay:\n before %s\n after  %s", k, v, after[k])
		}
	}
}

// cf-max-expansions limits CF.ADD; a log written with a higher limit
// replays whatever it acknowledged.
func TestFilterParamsMaxExpansionsReplay(t *testing.T) {
	s := startServer(t, Config{Dir: t.TempDir(), FilterParams: map[string]string{"cf-max-expansions": "3", "cf-initial-size": "4"}})
	rc := dialRaw(t, s.Addr())
	full := false
	for i := 0; i < 200 && !full; i++ {
		got := rc.do("CF.ADD", "c", "item"+itoa(int64(i)))
		full = got == "-Maximum expansions reached"
	}
	if !full {
		t.Fatal("cf-max-expansions 3 never stopped CF.ADD")
	}
	want := rc.do("CF.DEBUG", "c")
	s2 := restart(t, s, false) // default limit 32, and replay sees no limit
	if got := dialRaw(t, s2.Addr()).do("CF.DEBUG", "c"); got != want {
		t.Errorf("after replay %s, want %s", got, want)
	}
}

// A config file sets the parameters by name, and a Redis config's
// "loadmodule …redisbloom.so" line by RedisBloom's module arguments.
func TestFilterParamsConfigFile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ conf, err string }{
		{"bf-error-rate 0.02\nbf-initial-size 200\ncf-max-expansions 3\n", ""},
		{"loadmodule modules/redisbloom.so ERROR_RATE 0.02 INITIAL_SIZE 200 CF_MAX_EXPANSIONS 3\n", ""},
		{"loadmodule lib/rebloom.so bf-error-rate 0.02 bf-initial-size 200 cf-max-expansions 3\n", ""},
		{"bf-error-rate 2\n", "bf-error-rate"},
		{"loadmodule redisbloom.so CF_BUCKET_SIZE 3\n", "unrecognized option"},
		{"loadmodule redisbloom.so ERROR_RATE\n", "invalid number of arguments"},
	} {
		path := filepath.Join(dir, "redis.conf")
		if err := os.WriteFile(path, []byte(c.conf), 0o644); err != nil {
			t.Fatal(err)
		}
		var cfg Config
		err := ReadConfigFile(path, &cfg)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), path+":1") {
				t.Errorf("%q: error %v, want one naming the line and %q", c.conf, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", c.conf, err)
		}
		cfg.NoPersistence, cfg.Addr = true, "127.0.0.1:0"
		s := startServer(t, cfg)
		rc := dialRaw(t, s.Addr())
		for name, want := range map[string]string{"bf-error-rate": "0.02", "bf-initial-size": "200", "cf-max-expansions": "3"} {
			if got := rc.do("CONFIG", "GET", name); got != `["`+name+`" "`+want+`"]` {
				t.Errorf("%q: CONFIG GET %s = %s", c.conf, name, got)
			}
		}
	}
	if _, err := New(Config{NoPersistence: true, FilterParams: map[string]string{"bf-typo": "1"}}); err == nil {
		t.Error("New accepted an unknown filter parameter")
	}
}

// A replica whose parameters differ from its master's builds the
// master's filters byte for byte: what the stream carries does not
// depend on the configuration of the server that applies it.
func TestFilterParamsReplica(t *testing.T) {
	m := startServer(t, Config{FilterParams: map[string]string{"bf-initial-size": "300", "cf-bucket-size": "4", "bf-expansion-factor": "0"}})
	mc := dialRaw(t, m.Addr())
	r := startReplica(t, m, Config{FilterParams: map[string]string{"bf-error-rate": "0.2", "cf-initial-size": "64", "cf-max-expansions": "1"}})
	rc := dialRaw(t, r.Addr())
	waitSynced(t, mc, rc)
	mc.do("BF.ADD", "b", "x")
	mc.do("BF.RESERVE", "r", "0.01", "50")
	mc.do("CF.ADD", "c", "x")
	mc.do("CF.RESERVE", "cr", "100")
	mc.do("CONFIG", "SET", "bf-initial-size", "100", "cf-bucket-size", "2", "bf-expansion-factor", "2")
	mc.do("BF.MADD", "b2", "x", "y") // RedisBloom's defaults again: logged as sent
	for i := 0; i < 2000; i++ {
		mc.do("CF.ADD", "c", "item"+itoa(int64(i))) // grows past the replica's cf-max-expansions
	}
	if !sameData(t, m, r, mc, rc) {
		t.Fatal("the replica's filters differ from the master's")
	}
}
