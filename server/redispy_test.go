package server

import (
	"net"
	"os/exec"
	"strings"
	"testing"
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
print("ok")
`

// redis-py (Debian's python3-redis) with its bf()/cf() helpers.
func TestRedisPy(t *testing.T) {
	var py string
	for _, cand := range []string{"/usr/bin/python3", "python3"} {
		if p, err := exec.LookPath(cand); err == nil && exec.Command(p, "-c", "import redis").Run() == nil {
			py = p
			break
		}
	}
	if py == "" {
		t.Skip("redis-py not installed (Debian: apt-get install python3-redis)")
	}
	s := startServer(t, Config{NoPersistence: true})
	host, port, _ := net.SplitHostPort(s.Addr())
	out, err := exec.Command(py, "-c", redisPyScript, host, port).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("redis-py: %v\n%s", err, out)
	}
}
