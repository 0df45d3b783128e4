package server

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Clients and tools look for the module named bf before they use BF.*:
// MODULE LIST, INFO modules and HELLO list it as Redis with RedisBloom
// does; loading or unloading a module is refused with a clear error;
// HELLO's role is the server's.
func TestModuleDetection(t *testing.T) {
	m := startServer(t, Config{NoPersistence: true})
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer c.Close()
	mods, err := c.Do(ctx, "MODULE", "LIST").Slice()
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) != 1 {
		t.Fatalf("MODULE LIST = %v", mods)
	}
	mod := map[string]any{}
	switch m := mods[0].(type) {
	case map[any]any:
		for k, v := range m {
			mod[k.(string)] = v
		}
	case []any:
		for i := 0; i+1 < len(m); i += 2 {
			mod[m[i].(string)] = m[i+1]
		}
	}
	if mod["name"] != "bf" || mod["ver"] != int64(RedisBloomVersion) {
		t.Fatalf("MODULE LIST = %v", mods)
	}
	info, err := c.Info(ctx, "modules").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "# Modules\r\nmodule:name=bf,ver=80000,api=1,") {
		t.Fatalf("INFO modules = %q", info)
	}
	all, _ := c.Info(ctx, "everything").Result()
	if !strings.Contains(all, "module:name=bf") {
		t.Fatalf("INFO everything has no module line")
	}
	rc := dialRaw(t, m.Addr())
	mustDo(t, rc, "-"+errNoModules, "MODULE", "LOAD", "/usr/lib/redis/modules/redisbloom.so")
	mustDo(t, rc, "-"+errNoModules, "MODULE", "UNLOAD", "bf")
	mustDo(t, rc, "-ERR wrong number of arguments for 'module|list' command", "MODULE", "LIST", "x")
	mustDo(t, rc, "-ERR unknown subcommand 'x'. Try MODULE HELP.", "MODULE", "x")
	hello := rc.do("HELLO", "3")
	if !strings.Contains(hello, `modules:[{name:"bf" ver::80000 path:"(built in)" args:[]}]`) &&
		!strings.Contains(hello, `"modules":[{"name":"bf" "ver"::80000`) {
		t.Fatalf("HELLO 3 = %s", hello)
	}
	if !strings.Contains(hello, `"role":"master"`) && !strings.Contains(hello, `role:"master"`) {
		t.Fatalf("HELLO 3 on a master = %s", hello)
	}
	// On a replica, HELLO says replica (as Redis: role is the server's).
	r := startReplica(t, m, Config{NoPersistence: true})
	rr := dialRaw(t, r.Addr())
	if hello := rr.do("HELLO", "3"); !strings.Contains(hello, `replica`) {
		t.Fatalf("HELLO 3 on a replica = %s", hello)
	}
}

// RANDOMKEY answers a key that exists, nil on an empty keyspace, and
// never an expired key on a master (it removes what it meets).
func TestRandomKey(t *testing.T) {
	clock := newFakeClock(time.Unix(5_000_000, 0))
	s := startServer(t, Config{NoPersistence: true, Now: clock.Now})
	rc := dialRaw(t, s.Addr())
	mustDo(t, rc, "nil", "RANDOMKEY")
	for i := 0; i < 20; i++ {
		rc.do("SET", "live"+strconv.Itoa(i), "v")
		rc.do("SET", "gone"+strconv.Itoa(i), "v", "PX", "100")
	}
	clock.Add(time.Second)
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		got := rc.do("RANDOMKEY")
		if !strings.HasPrefix(got, `"live`) {
			t.Fatalf("RANDOMKEY = %s, want a live key", got)
		}
		seen[got] = true
	}
	if len(seen) < 5 {
		t.Errorf("200 RANDOMKEYs gave only %d different keys", len(seen))
	}
}
