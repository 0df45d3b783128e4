package server

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/internal/redistest"
)

const redisPyScript = `
import sys, redis
host, port = sys.argv[1], int(sys.argv[2])
r = redis.Redis(host=host, port=port, client_name="pytest")
assert r.ping()
bf = r.bf()
assert bf.add("urls", "https://a.example") == 1
assert bf.add("urls", "https://a.example") == 0
assert bf.exists("urls", "https://a.example") == 1
assert bf.madd("urls", "x", "y") == [1, 1]
assert bf.mexists("urls", "x", "nope") == [1, 0]
i = bf.info("urls")
assert (i.capacity, i.size, i.filterNum, i.insertedNum, i.expansionRate) == (100, 240, 1, 3, 2), vars(i)
assert bf.create("r", 0.001, 1000) == True
try:
    bf.create("r", 0.001, 1000)
    raise SystemExit("no error")
except redis.ResponseError as e:
    assert str(e) == "item exists", str(e)
cf = r.cf()
assert cf.create("c", 1000) == True
assert cf.add("c", "a") == 1
assert cf.addnx("c", "a") == 0
assert cf.count("c", "a") == 1
assert cf.exists("c", "a") == 1
assert cf.delete("c", "a") == 1
ci = cf.info("c")
assert (ci.size, ci.bucketNum, ci.filterNum, ci.insertedNum, ci.deletedNum, ci.bucketSize, ci.expansionRate, ci.maxIteration) == (1080, 512, 1, 0, 1, 2, 1, 20), vars(ci)
p = r.pipeline()
for k in range(100):
    p.execute_command("BF.ADD", "piped", "item%d" % k)
assert p.execute() == [1] * 100
assert r.type("c") == b"MBbloomCF"
assert r.client_getname() == "pytest"
assert sorted(r.keys("*")) == [b"c", b"piped", b"r", b"urls"]
assert r.set("s", "v", ex=100) == True
assert r.get("s") == b"v"
assert 0 < r.ttl("s") <= 100
assert r.set("s", "w", nx=True) is None
assert r.mget("s", "urls", "none") == [b"v", None, None]
try:
    bf.add("s", "x")
    raise SystemExit("no WRONGTYPE")
except redis.ResponseError as e:
    assert str(e).startswith("WRONGTYPE"), str(e)
try:
    r.get("urls")
    raise SystemExit("no WRONGTYPE")
except redis.ResponseError as e:
    assert str(e).startswith("WRONGTYPE"), str(e)
assert r.memory_usage("urls") == 240 + 32
assert r.memory_usage("none") is None
# BF.DEBUG and CF.DEBUG as RedisBloom 2.8.20 answers them
assert r.execute_command("BF.DEBUG", "r") == [b"size:0", b"bytes:1984 bits:15872 hashes:11 hashwidth:64 capacity:1000 size:0 ratio:0.0005"]
assert r.execute_command("CF.DEBUG", "c") == b"bktsize:2 buckets:512 items:0 deletes:1 filters:1 max_iterations:20 expansion:1"
print("ok")
`

// findPython finds a python3 that imports the given modules.
func findPython(t *testing.T, modules, pkgs string) string {
	t.Helper()
	for _, cand := range []string{"/usr/bin/python3", "python3"} {
		if p, err := exec.LookPath(cand); err == nil && exec.Command(p, "-c", "import "+modules).Run() == nil {
			return p
		}
	}
	msg := "python3 with " + modules + " not installed (Debian: apt-get install " + pkgs + ")"
	if os.Getenv("BLOOMKIT_REQUIRE_REDIS") == "1" {
		t.Fatal(msg + "; BLOOMKIT_REQUIRE_REDIS=1 requires it")
	}
	t.Skip(msg)
	return ""
}

// redis-py (Debian's python3-redis) with its bf()/cf() helpers.
func TestRedisPy(t *testing.T) {
	py := findPython(t, "redis", "python3-redis")
	s := startServer(t, Config{NoPersistence: true})
	host, port, _ := net.SplitHostPort(s.Addr())
	out, err := exec.Command(py, "-c", redisPyScript, host, port).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("redis-py: %v\n%s", err, out)
	}
}

// redisPySuiteSelect picks the tests of redis-py's test_bloom.py that the
// suite runs: all but the t-digest ones. redis-py 4.3.4 speaks RedisBloom
// 2.2's t-digest API (TDIGEST.CREATE key compression, TDIGEST.ADD key value
// weight ...), which RedisBloom 2.4 replaced (TDIGEST.CREATE key
// [COMPRESSION c], TDIGEST.ADD key value ...): real RedisBloom 2.8 fails
// those six tests exactly as bloom serve does, with "wrong number of
// arguments for 'tdigest.create' command".
const redisPySuiteSelect = "not tdigest"

// redisPySuitePassed is what pytest prints when every selected test passes:
// test_create, the four Bloom tests (bf_add, bf_insert,
// bf_scandump_and_loadchunk, bf_info), the two cuckoo tests
// (cf_add_and_insert, cf_exists_and_del), the two Count-Min Sketch tests
// (cms, cms_merge) and the two Top-K tests (topk, topk_incrby).
const redisPySuitePassed = "11 passed"

// runRedisPySuite runs redis-py's test_bloom.py (testdata/redispy: its
// tests/test_bloom.py unchanged, with a conftest.py that only points the
// connection at addr) under pytest and fails unless every selected test
// passes.
func runRedisPySuite(t *testing.T, py, addr string) {
	t.Helper()
	cmd := exec.Command(py, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rf", "-k", redisPySuiteSelect, "test_bloom.py")
	cmd.Dir = "testdata/redispy"
	cmd.Env = append(os.Environ(), "BLOOMKIT_ADDR="+addr, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), redisPySuitePassed) || strings.Contains(string(out), "failed") {
		t.Fatalf("pytest against %s: %v\n%s", addr, err, out)
	}
}

// redis-py's own Bloom, cuckoo, Count-Min Sketch and Top-K tests, run by
// pytest against bloom serve and, when a RedisBloom module is given,
// against real Redis with RedisBloom, so both are seen passing the same
// tests.
func TestRedisPyBloomSuite(t *testing.T) {
	py := findPython(t, "redis, pytest", "python3-redis python3-pytest")
	t.Run("bloom", func(t *testing.T) {
		s := startServer(t, Config{NoPersistence: true})
		runRedisPySuite(t, py, s.Addr())
	})
	t.Run("RedisBloom", func(t *testing.T) {
		module := redistest.RedisBloomModule(t)
		rs := redistest.Start(t, "--loadmodule", module)
		runRedisPySuite(t, py, rs.Addr)
	})
}

// redis-py's Bloom helpers on bloomkit's own keys: created with a raw
// BF.RESERVE (a window and a blocked key with a given seed), then used
// through r.bf() as RedisBloom keys are — add, madd, exists, mexists,
// insert, info (BF.CARD raw: redis-py 4.3 has no card) — and moved with
// scandump/loadchunk.
func TestRedisPyNative(t *testing.T) {
	py := findPython(t, "redis", "python3-redis")
	s := startServer(t, Config{NoPersistence: true})
	host, port, _ := net.SplitHostPort(s.Addr())
	out, err := exec.Command(py, "-c", redisPyNativeScript, host, port).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("redis-py: %v\n%s", err, out)
	}
}

const redisPyNativeScript = `
import sys, redis
r = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]))
bf = r.bf()
assert r.execute_command("BF.RESERVE", "seen", 0.01, 1000, "WINDOW", "24h") in (b"OK", True)
assert r.execute_command("BF.RESERVE", "urls", 0.001, 1000, "LAYOUT", "blocked", "SEED", 7) in (b"OK", True)
for key in ("seen", "urls"):
    assert bf.add(key, "a") == 1
    assert bf.add(key, "a") == 0
    assert bf.madd(key, "b", "c") == [1, 1]
    assert bf.exists(key, "a") == 1
    assert bf.mexists(key, "a", "zz") == [1, 0]
    assert bf.insert(key, ["d", "a"]) == [1, 0]
    assert r.execute_command("BF.CARD", key) == 4
    info = bf.info(key)
    assert info.capacity == 1000 and info.insertedNum == 4 and info.filterNum in (1, 5), vars(info)
    assert r.type(key) == b"BKbloom--"
    chunks, it = [], 0
    while True:
        it, data = bf.scandump(key, it)
        if it == 0:
            break
        chunks.append((it, data))
    for it, data in chunks:
        bf.loadchunk(key + "-copy", it, data)
    assert bf.mexists(key + "-copy", "a", "b", "c", "d", "zz") == [1, 1, 1, 1, 0]
    assert r.execute_command("BF.CARD", key + "-copy") == 4
print("ok")
`
