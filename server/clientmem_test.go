package server

import (
	"context"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"
	"github.com/redis/go-redis/v9"
)

// clientField is field of the CLIENT LIST line of client id (-1: absent).
func clientField(t *testing.T, c *redis.Client, id int64, field string) int64 {
	t.Helper()
	return clientFields(t, c, id, field)[0]
}

// clientFields are fields of one CLIENT LIST line of client id.
func clientFields(t *testing.T, c *redis.Client, id int64, fields ...string) []int64 {
	t.Helper()
	list, err := c.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(fields))
	for i := range out {
		out[i] = -1
	}
	for _, l := range strings.Split(list, "\n") {
		if !strings.HasPrefix(l, "id="+itoa(id)+" ") {
			continue
		}
		for i, field := range fields {
			m := regexp.MustCompile(` ` + field + `=(\d+)`).FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("no %s in %q", field, l)
			}
			out[i], _ = strconv.ParseInt(m[1], 10, 64)
		}
	}
	return out
}

// CLIENT LIST's buffer fields have real values, as Redis's: the caller's
// own request (qbuf=26 and argv-mem=10 for CLIENT LIST, as redis-server
// says), a half-sent request's bytes, a MULTI queue, replies a client
// does not read (omem), and tot-mem over them all.
func TestClientListBuffers(t *testing.T) {
	bothPaths(t, func(t *testing.T, goroutinePerConn bool) {
		s := startServer(t, Config{NoPersistence: true, goroutinePerConn: goroutinePerConn})
		ctx := context.Background()
		c := newClient(t, s.Addr(), 2, func(o *redis.Options) { o.DisableIdentity = true; o.PoolSize = 1 })
		me, err := c.ClientID(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		line, err := c.Do(ctx, "CLIENT", "INFO").Text()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{" qbuf=26 ", " argv-mem=10 "} {
			if !strings.Contains(line, want) {
				t.Errorf("CLIENT INFO: no%s in %q", want, line)
			}
		}
		if n := clientField(t, c, me, "qbuf-free"); n <= 0 {
			t.Errorf("qbuf-free %d", n)
		}
		if n := clientField(t, c, me, "tot-mem"); n < sessionOverhead {
			t.Errorf("tot-mem %d, less than a session", n)
		}

		// Half of a 100 kB argument sent: the request buffer holds it.
		half, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer half.Close()
		half.Write([]byte("CLIENT ID\r\n"))
		buf := make([]byte, 64)
		n, _ := half.Read(buf)
		halfID, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(string(buf[:n]), ":")), 10, 64)
		half.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\n" + strings.Repeat("x", 50000)))
		poll.True(t, 10*time.Second, "qbuf of a half-sent request", func() bool { return clientField(t, c, halfID, "qbuf") >= 50000 })
		if tot := clientField(t, c, halfID, "tot-mem"); tot < 50000 {
			t.Errorf("tot-mem %d with 50 kB buffered", tot)
		}

		// A MULTI queue.
		mc := dialRaw(t, s.Addr())
		mid, _ := strconv.ParseInt(strings.TrimPrefix(mc.do("CLIENT", "ID"), ":"), 10, 64)
		mc.do("MULTI")
		mc.do("BF.ADD", "q", strings.Repeat("y", 1000))
		if n := clientField(t, c, mid, "multi-mem"); n < 1000 {
			t.Errorf("multi-mem %d with 1 kB queued", n)
		}

		// Replies a client does not read.
		if err := c.Set(ctx, "big", strings.Repeat("z", 1<<20), 0).Err(); err != nil {
			t.Fatal(err)
		}
		slow, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer slow.Close()
		slow.Write([]byte("CLIENT ID\r\n"))
		n, _ = slow.Read(buf)
		slowID, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(string(buf[:n]), ":")), 10, 64)
		slow.Write([]byte(strings.Repeat("GET big\r\n", 64)))
		poll.True(t, 10*time.Second, "omem of unread replies", func() bool { return clientField(t, c, slowID, "omem") > 0 })
		if f := clientFields(t, c, slowID, "omem", "rbs", "tot-mem"); f[1] < f[0] || f[2] < sessionOverhead+f[1] {
			t.Errorf("omem %d, rbs %d, tot-mem %d: the reply buffer must hold what waits, and tot-mem count it", f[0], f[1], f[2])
		}
	})
}
