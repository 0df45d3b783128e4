package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"

	"github.com/redis/go-redis/v9"
)

// Pub/sub answers as Redis 7 does, byte for byte in the compact notation:
// confirmations, messages, pattern messages, the mass unsubscribe, PUBSUB.
func TestPubSubBasics(t *testing.T) { bothPaths(t, testPubSubBasics) }

func testPubSubBasics(t *testing.T, goroutinePerConn bool) {
	s := startServer(t, Config{NoPersistence: true, goroutinePerConn: goroutinePerConn})
	sub := dialRaw(t, s.Addr())
	pub := dialRaw(t, s.Addr())
	if got := sub.do("SUBSCRIBE", "news", "sport"); got != `["subscribe" "news" :1]` {
		t.Fatalf("SUBSCRIBE: %s", got)
	}
	if got := sub.read(); got != `["subscribe" "sport" :2]` {
		t.Fatalf("second confirmation: %s", got)
	}
	if got := sub.do("PSUBSCRIBE", "n*"); got != `["psubscribe" "n*" :3]` {
		t.Fatalf("PSUBSCRIBE: %s", got)
	}
	if got := pub.do("PUBLISH", "news", "hello"); got != ":2" {
		t.Fatalf("PUBLISH to a channel and a matching pattern: %s, want :2", got)
	}
	got := []string{sub.read(), sub.read()}
	want := []string{`["message" "news" "hello"]`, `["pmessage" "n*" "news" "hello"]`}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("messages: %v, want %v", got, want)
	}
	if got := pub.do("PUBLISH", "nobody", "x"); got != ":1" { // n* matches
		t.Fatalf("PUBLISH nobody: %s", got)
	}
	if got := sub.read(); got != `["pmessage" "n*" "nobody" "x"]` {
		t.Fatalf("pattern message: %s", got)
	}
	if got := pub.do("PUBLISH", "weather", "x"); got != ":0" {
		t.Fatalf("PUBLISH without subscribers: %s", got)
	}
	if got := pub.do("PUBSUB", "CHANNELS"); got != `["news" "sport"]` {
		t.Fatalf("PUBSUB CHANNELS: %s", got)
	}
	if got := pub.do("PUBSUB", "CHANNELS", "s*"); got != `["sport"]` {
		t.Fatalf("PUBSUB CHANNELS s*: %s", got)
	}
	if got := pub.do("PUBSUB", "NUMSUB", "news", "none"); got != `["news" :1 "none" :0]` {
		t.Fatalf("PUBSUB NUMSUB: %s", got)
	}
	if got := pub.do("PUBSUB", "NUMPAT"); got != ":1" {
		t.Fatalf("PUBSUB NUMPAT: %s", got)
	}
	if got := pub.do("PUBSUB", "NOPE"); got != "-ERR unknown subcommand or wrong number of arguments for 'NOPE'. Try PUBSUB HELP." {
		t.Fatalf("PUBSUB NOPE: %s", got)
	}
	info := pub.do("INFO", "stats")
	for _, f := range []string{"pubsub_channels:2", "pubsub_patterns:1"} {
		if !strings.Contains(info, f) {
			t.Errorf("INFO stats lacks %s", f)
		}
	}
	// The mass unsubscribe: one reply per channel, then one with a null
	// name when nothing is left.
	if got := sub.do("UNSUBSCRIBE"); got != `["unsubscribe" "news" :2]` {
		t.Fatalf("UNSUBSCRIBE: %s", got)
	}
	if got := sub.read(); got != `["unsubscribe" "sport" :1]` {
		t.Fatalf("UNSUBSCRIBE second: %s", got)
	}
	if got := sub.do("UNSUBSCRIBE"); got != `["unsubscribe" nil :1]` {
		t.Fatalf("UNSUBSCRIBE with none: %s", got)
	}
	if got := sub.do("PUNSUBSCRIBE", "n*"); got != `["punsubscribe" "n*" :0]` {
		t.Fatalf("PUNSUBSCRIBE: %s", got)
	}
	// Out of subscribed mode: any command again.
	if got := sub.do("GET", "k"); got != "nil" {
		t.Fatalf("GET after the last unsubscribe: %s", got)
	}
	if got := pub.do("PUBSUB", "CHANNELS"); got != "[]" {
		t.Fatalf("channels left behind: %s", got)
	}
}

// A RESP2 connection in subscribed mode may run only (P)(UN)SUBSCRIBE,
// PING, QUIT and RESET, refused with Redis's exact error; PING answers an
// array there; RESET leaves subscribed mode; a connection that closes
// leaves its channels.
func TestSubscribedModeRules(t *testing.T) { bothPaths(t, testSubscribedModeRules) }

func testSubscribedModeRules(t *testing.T, goroutinePerConn bool) {
	s := startServer(t, Config{NoPersistence: true, goroutinePerConn: goroutinePerConn})
	sub := dialRaw(t, s.Addr())
	sub.do("SUBSCRIBE", "ch")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"GET", "k"}, "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"},
		{[]string{"CLIENT", "LIST"}, "-ERR Can't execute 'client|list': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"},
		{[]string{"MULTI"}, "-ERR Can't execute 'multi': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"},
		{[]string{"PING"}, `["pong" ""]`},
		{[]string{"PING", "hi"}, `["pong" "hi"]`},
	} {
		if got := sub.do(c.args...); got != c.want {
			t.Errorf("%v in subscribed mode: %s, want %s", c.args, got, c.want)
		}
	}
	if got := sub.do("RESET"); got != "+RESET" {
		t.Fatalf("RESET: %s", got)
	}
	if got := sub.do("PING"); got != "+PONG" {
		t.Fatalf("PING after RESET: %s", got)
	}
	other := dialRaw(t, s.Addr())
	if got := other.do("PUBLISH", "ch", "x"); got != ":0" {
		t.Fatalf("RESET left a subscription: PUBLISH reached %s", got)
	}
	sub.do("SUBSCRIBE", "ch2")
	sub.c.Close()
	poll.True(t, 5*time.Second, "a closed connection to be unsubscribed", func() bool {
		return other.do("PUBSUB", "NUMSUB", "ch2") == `["ch2" :0]`
	})
}

// After HELLO 3, subscription replies and messages are RESP3 pushes, and
// every command may run while subscribed; HELLO 2 switches messages back.
func TestPubSubRESP3Push(t *testing.T) { bothPaths(t, testPubSubRESP3Push) }

func testPubSubRESP3Push(t *testing.T, goroutinePerConn bool) {
	s := startServer(t, Config{NoPersistence: true, goroutinePerConn: goroutinePerConn})
	sub := dialRaw(t, s.Addr())
	pub := dialRaw(t, s.Addr())
	sub.do("HELLO", "3")
	if got := sub.do("SUBSCRIBE", "ch"); got != `>["subscribe" "ch" :1]` {
		t.Fatalf("SUBSCRIBE under RESP3: %s", got)
	}
	if got := sub.do("SET", "k", "v"); got != "+OK" {
		t.Fatalf("SET while subscribed under RESP3: %s", got)
	}
	pub.do("PUBLISH", "ch", "m1")
	if got := sub.read(); got != `>["message" "ch" "m1"]` {
		t.Fatalf("message under RESP3: %s", got)
	}
	sub.do("HELLO", "2")
	pub.do("PUBLISH", "ch", "m2")
	if got := sub.read(); got != `["message" "ch" "m2"]` {
		t.Fatalf("message after HELLO 2: %s", got)
	}
}

// A message published before a subscriber's command reaches it before
// that command's reply, and a burst of messages arrives whole and in order
// (the owner of a connection is the only writer to it).
func TestPubSubOrder(t *testing.T) { bothPaths(t, testPubSubOrder) }

func testPubSubOrder(t *testing.T, goroutinePerConn bool) {
	s := startServer(t, Config{NoPersistence: true, goroutinePerConn: goroutinePerConn})
	sub := dialRaw(t, s.Addr())
	sub.do("SUBSCRIBE", "ch")
	pub := dialRaw(t, s.Addr())
	const n = 2000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n$%d\r\n%d\r\n", len(fmt.Sprint(i)), i)
	}
	if _, err := pub.c.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	for range n {
		if got := pub.read(); got != ":1" {
			t.Fatalf("PUBLISH: %s", got)
		}
	}
	// All n were queued before this PING was sent: they come first.
	sub.send("PING")
	for i := range n {
		if got, want := sub.read(), fmt.Sprintf(`["message" "ch" "%d"]`, i); got != want {
			t.Fatalf("message %d: %s, want %s", i, got, want)
		}
	}
	if got := sub.read(); got != `["pong" ""]` {
		t.Fatalf("PING after the messages: %s", got)
	}
}

// A subscriber that never reads is disconnected once its unsent output
// passes the hard limit of client-output-buffer-limit pubsub, and PUBLISH
// never waits for it meanwhile (each reply is read within the reader's
// 10 s deadline, far less than the 60 s write timeout a blocked write
// would wait): memory held for it stays bounded and publishers keep going.
// The limit is Redis's by default and settable with CONFIG SET.
func TestSlowSubscriberDisconnected(t *testing.T) { bothPaths(t, testSlowSubscriberDisconnected) }

func testSlowSubscriberDisconnected(t *testing.T, goroutinePerConn bool) {
	s := startServer(t, Config{NoPersistence: true, goroutinePerConn: goroutinePerConn})
	pub := dialRaw(t, s.Addr())
	if got := pub.do("CONFIG", "GET", "client-output-buffer-limit"); got != `["client-output-buffer-limit" "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"]` {
		t.Fatalf("default limits: %s", got)
	}
	const hard = 8 << 20
	if got := pub.do("CONFIG", "SET", "client-output-buffer-limit", "pubsub 8mb 2mb 60"); got != "+OK" {
		t.Fatalf("CONFIG SET client-output-buffer-limit: %s", got)
	}
	slow, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	// A small receive buffer, so the kernel holds little of what is sent.
	slow.(*net.TCPConn).SetReadBuffer(64 << 10)
	slow.Write([]byte("*2\r\n$9\r\nSUBSCRIBE\r\n$2\r\nch\r\n"))
	poll.True(t, 5*time.Second, "the subscription to register", func() bool {
		return pub.do("PUBSUB", "NUMSUB", "ch") == `["ch" :1]`
	})
	msg := strings.Repeat("x", 64<<10)
	reached := 0
	for i := range 3 * hard / len(msg) {
		pub.send("PUBLISH", "ch", msg)
		got := pub.read()
		if got == ":1" {
			reached = i + 1
		} else if got != ":0" {
			t.Fatalf("PUBLISH %d: %s", i, got)
		}
	}
	// Disconnected past the hard limit, not before it, and not much later
	// (what the kernel's socket buffers took is not counted).
	if sent := reached * len(msg); sent < hard || sent > hard+8<<20 {
		t.Errorf("the subscriber received %d MiB before it was disconnected; the hard limit is %d MiB", sent>>20, hard>>20)
	}
	if got := pub.do("PUBSUB", "NUMSUB", "ch"); got != `["ch" :0]` {
		t.Errorf("the slow subscriber is still subscribed: %s", got)
	}
	if info := pub.do("INFO", "stats"); !strings.Contains(info, "client_output_buffer_limit_disconnections:1") {
		t.Errorf("INFO stats does not count the disconnection")
	}
	// Its connection is closed: reading drains what the kernel held, then EOF.
	slow.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 1<<20)
	for {
		if _, err := slow.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the slow subscriber's connection is still open")
			}
			break
		}
	}
}

// The soft limit: a subscriber whose unsent output stays above it for
// longer than its seconds is disconnected, one that is above it only
// briefly is not.
func TestSlowSubscriberSoftLimit(t *testing.T) { bothPaths(t, testSlowSubscriberSoftLimit) }

func testSlowSubscriberSoftLimit(t *testing.T, goroutinePerConn bool) {
	s := startServer(t, Config{NoPersistence: true, goroutinePerConn: goroutinePerConn, ClientOutputBufferLimit: "pubsub 0 1mb 1"})
	pub := dialRaw(t, s.Addr())
	slow, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	slow.(*net.TCPConn).SetReadBuffer(64 << 10)
	slow.Write([]byte("*2\r\n$9\r\nSUBSCRIBE\r\n$2\r\nch\r\n"))
	poll.True(t, 5*time.Second, "the subscription to register", func() bool {
		return pub.do("PUBSUB", "NUMSUB", "ch") == `["ch" :1]`
	})
	msg := strings.Repeat("x", 64<<10)
	start := time.Now()
	var over time.Time // when PUBLISH stopped reaching it
	for time.Since(start) < 10*time.Second {
		if got := pub.do("PUBLISH", "ch", msg); got == ":0" {
			over = time.Now()
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if over.IsZero() {
		t.Fatal("a subscriber above the soft limit for 10 s is still connected")
	}
	// 1 MiB of 64 KiB messages every 10 ms is reached within about a
	// second (more, with what the kernel buffers), then one more second.
	if d := over.Sub(start); d < time.Second {
		t.Errorf("disconnected %v after the first message: before the soft limit's second", d)
	}
}

// CLIENT LIST shows a subscriber's flag P and its counts; CLIENT KILL TYPE
// pubsub closes subscribers only, TYPE normal everything else but the
// caller; both count what they killed. These are what Sentinel sends
// inside MULTI with SLAVEOF and CONFIG REWRITE when it reconfigures an
// instance, so they must be queued and run by EXEC.
func TestClientKillTypes(t *testing.T) { bothPaths(t, testClientKillTypes) }

func testClientKillTypes(t *testing.T, goroutinePerConn bool) {
	s := startServer(t, Config{NoPersistence: true, goroutinePerConn: goroutinePerConn})
	sub := dialRaw(t, s.Addr())
	sub.do("CLIENT", "SETNAME", "listener")
	sub.do("SUBSCRIBE", "a", "b")
	sub.read()
	sub.do("PSUBSCRIBE", "c*")
	plain := dialRaw(t, s.Addr())
	plain.do("CLIENT", "SETNAME", "plain")
	admin := dialRaw(t, s.Addr())
	list := admin.do("CLIENT", "LIST", "TYPE", "pubsub")
	if !strings.Contains(list, "name=listener") || !strings.Contains(list, "flags=P ") || !strings.Contains(list, "sub=2 psub=1 ") {
		t.Fatalf("CLIENT LIST TYPE pubsub: %s", list)
	}
	if strings.Contains(list, "name=plain") {
		t.Fatalf("CLIENT LIST TYPE pubsub lists a normal client: %s", list)
	}
	if list := admin.do("CLIENT", "LIST", "TYPE", "normal"); strings.Contains(list, "name=listener") || !strings.Contains(list, "name=plain") {
		t.Fatalf("CLIENT LIST TYPE normal: %s", list)
	}
	if got := admin.do("MULTI"); got != "+OK" {
		t.Fatal(got)
	}
	for _, args := range [][]string{{"CONFIG", "REWRITE"}, {"CLIENT", "KILL", "TYPE", "normal"}, {"CLIENT", "KILL", "TYPE", "pubsub"}} {
		if got := admin.do(args...); got != "+QUEUED" {
			t.Fatalf("%v in MULTI: %s", args, got)
		}
	}
	got := admin.do("EXEC")
	if got != "[-ERR The server is running without a config file :1 :1]" {
		t.Fatalf("EXEC: %s", got)
	}
	for _, rc := range []*rawConn{sub, plain} {
		rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := readReply(rc.r); err == nil {
			t.Errorf("a killed client can still read")
		}
	}
	if got := admin.do("PING"); got != "+PONG" {
		t.Fatalf("the caller was killed too: %s", got)
	}
	if got := admin.do("CLIENT", "KILL", "TYPE", "bogus"); got != "-ERR Unknown client type 'bogus'" {
		t.Fatalf("CLIENT KILL TYPE bogus: %s", got)
	}
}

// go-redis's own pub/sub (RESP3 pushes, its reconnect and ping logic)
// works against the server.
func TestGoRedisPubSub(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, proto := range []int{2, 3} {
		c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: proto})
		ps := c.PSubscribe(ctx, "ev.*")
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatalf("RESP%d: PSUBSCRIBE: %v", proto, err)
		}
		ch := ps.Channel()
		for i := range 3 {
			n, err := c.Publish(ctx, "ev.x", fmt.Sprint(i)).Result()
			if err != nil || n != 1 {
				t.Fatalf("RESP%d: PUBLISH: %d %v", proto, n, err)
			}
			select {
			case m := <-ch:
				if m.Channel != "ev.x" || m.Pattern != "ev.*" || m.Payload != fmt.Sprint(i) {
					t.Fatalf("RESP%d: got %+v", proto, m)
				}
			case <-ctx.Done():
				t.Fatalf("RESP%d: no message", proto)
			}
		}
		if err := ps.Ping(ctx); err != nil {
			t.Fatalf("RESP%d: PING while subscribed: %v", proto, err)
		}
		ps.Close()
		c.Close()
	}
}

// Sentinel reconfigures an instance with one transaction: MULTI, SLAVEOF
// host port (or NO ONE), CONFIG REWRITE, CLIENT KILL TYPE normal, CLIENT
// KILL TYPE pubsub, EXEC. Every part must queue (a refusal would abort
// EXEC and the failover with it), and CONFIG REWRITE must record the role
// in the config file, so that a restart keeps what Sentinel decided: a
// replicaof line while a replica, none when a master, the user's other
// lines and comments kept.
func TestSentinelReconfigureTransaction(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/bloom.conf"
	orig := "# written by hand\nslaveof 10.1.2.3 6379\nmaxmemory 1gb\n# the end\n"
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	var cfg Config
	if err := ReadConfigFile(path, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.NoPersistence = true
	cfg.ReplicaOf = "" // starts as a master whatever the file says: the file is what is checked
	s := startServer(t, cfg)
	sentinel := dialRaw(t, s.Addr())
	normal := dialRaw(t, s.Addr())
	normal.do("PING")
	subscriber := dialRaw(t, s.Addr())
	subscriber.do("SUBSCRIBE", "__sentinel__:hello")
	// A master that is not there: the link stays down, which is enough.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	tx := func(slaveof ...string) string {
		t.Helper()
		for _, args := range [][]string{{"MULTI"}, append([]string{"SLAVEOF"}, slaveof...), {"CONFIG", "REWRITE"},
			{"CLIENT", "KILL", "TYPE", "normal"}, {"CLIENT", "KILL", "TYPE", "pubsub"}} {
			sentinel.send(args...)
		}
		for _, want := range []string{"+OK", "+QUEUED", "+QUEUED", "+QUEUED", "+QUEUED"} {
			if got := sentinel.read(); got != want {
				t.Fatalf("queueing Sentinel's transaction: %s, want %s", got, want)
			}
		}
		return sentinel.do("EXEC")
	}
	if got := tx("127.0.0.1", port); got != "[+OK +OK :1 :1]" {
		t.Fatalf("EXEC of SLAVEOF host port: %s", got)
	}
	b, _ := os.ReadFile(path)
	want := "# written by hand\nreplicaof 127.0.0.1 " + port + "\nmaxmemory 1gb\n# the end\n"
	if string(b) != want {
		t.Fatalf("config file after SLAVEOF + CONFIG REWRITE:\n%s\nwant:\n%s", b, want)
	}
	if role := sentinel.do("ROLE"); !strings.HasPrefix(role, `["slave" "127.0.0.1" :`+port) {
		t.Fatalf("ROLE after the transaction: %s", role)
	}
	if got := tx("NO", "ONE"); got != "[+OK +OK :0 :0]" {
		t.Fatalf("EXEC of SLAVEOF NO ONE: %s", got)
	}
	b, _ = os.ReadFile(path)
	if want := "# written by hand\nmaxmemory 1gb\n# the end\n"; string(b) != want {
		t.Fatalf("config file after SLAVEOF NO ONE + CONFIG REWRITE:\n%s\nwant:\n%s", b, want)
	}
	// And back: a replicaof line appended when the file has none.
	if got := tx("127.0.0.1", port); got != "[+OK +OK :0 :0]" {
		t.Fatalf("EXEC: %s", got)
	}
	b, _ = os.ReadFile(path)
	if want := "# written by hand\nmaxmemory 1gb\n# the end\n# Generated by CONFIG REWRITE\nreplicaof 127.0.0.1 " + port + "\n"; string(b) != want {
		t.Fatalf("config file:\n%s\nwant:\n%s", b, want)
	}
}

// TLS clients are served by a goroutine each, which PUBLISH wakes out of
// its read with a read deadline in the past: the TLS connection survives
// the timeout and goes on serving both messages and commands.
func TestPubSubOverTLS(t *testing.T) {
	cert, key, pool := writeCert(t)
	s := startServer(t, Config{NoPersistence: true, TLSAddr: "127.0.0.1:0", TLSParams: noClientAuth, TLSCert: cert, TLSKey: key})
	dial := func() *rawConn {
		tc, err := tls.Dial("tcp", s.Addr(), &tls.Config{RootCAs: pool, ServerName: "localhost"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tc.Close() })
		return &rawConn{t: t, c: tc, r: bufio.NewReader(tc)}
	}
	sub, pub := dial(), dial()
	if got := sub.do("SUBSCRIBE", "ch"); got != `["subscribe" "ch" :1]` {
		t.Fatalf("SUBSCRIBE: %s", got)
	}
	for i := range 50 {
		if got := pub.do("PUBLISH", "ch", fmt.Sprint(i)); got != ":1" {
			t.Fatalf("PUBLISH: %s", got)
		}
		if got, want := sub.read(), fmt.Sprintf(`["message" "ch" "%d"]`, i); got != want {
			t.Fatalf("message %d: %s, want %s", i, got, want)
		}
		if i%10 == 0 {
			if got := sub.do("PING", "x"); got != `["pong" "x"]` {
				t.Fatalf("PING between messages: %s", got)
			}
		}
	}
}
