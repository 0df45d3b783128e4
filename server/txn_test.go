package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"
	"github.com/bloomkit/bloomkit/server/internal/rdb"
)

// multiCases gives, for every entry of the command table, the invocations a
// client may queue after MULTI (a command with subcommands lists each). A
// command added to the table without an entry here fails the test, so no
// command can escape the rule that it either runs inside MULTI/EXEC or is
// refused when queued.
var multiCases = map[string][][]string{
	"bf.reserve":   {{"BF.RESERVE", "bnew", "0.01", "100"}},
	"bf.add":       {{"BF.ADD", "bk", "y"}},
	"bf.madd":      {{"BF.MADD", "bk", "y", "z"}},
	"bf.insert":    {{"BF.INSERT", "bk", "ITEMS", "q"}},
	"bf.exists":    {{"BF.EXISTS", "bk", "x"}},
	"bf.mexists":   {{"BF.MEXISTS", "bk", "x", "y"}},
	"bf.info":      {{"BF.INFO", "bk"}},
	"bf.card":      {{"BF.CARD", "bk"}},
	"bf.scandump":  {{"BF.SCANDUMP", "bk", "0"}},
	"bf.merge":     {{"BF.MERGE", "bmerged", "bk"}},
	"bf.advance":   {{"BF.ADVANCE", "bk", "1"}},
	"bf.loadchunk": {{"BF.LOADCHUNK", "bk", "1", "junk"}},
	"cf.reserve":   {{"CF.RESERVE", "cnew", "100"}},
	"cf.add":       {{"CF.ADD", "ck", "y"}},
	"cf.addnx":     {{"CF.ADDNX", "ck", "y"}},
	"cf.insert":    {{"CF.INSERT", "ck", "ITEMS", "q"}},
	"cf.insertnx":  {{"CF.INSERTNX", "ck", "ITEMS", "q"}},
	"cf.exists":    {{"CF.EXISTS", "ck", "x"}},
	"cf.mexists":   {{"CF.MEXISTS", "ck", "x", "y"}},
	"cf.count":     {{"CF.COUNT", "ck", "x"}},
	"cf.del":       {{"CF.DEL", "ck", "x"}},
	"cf.compact":   {{"CF.COMPACT", "ck"}},
	"cf.info":      {{"CF.INFO", "ck"}},
	"cf.scandump":  {{"CF.SCANDUMP", "ck", "0"}},
	"cf.loadchunk": {{"CF.LOADCHUNK", "ck", "1", "junk"}},
	"ping":         {{"PING"}},
	"echo":         {{"ECHO", "hi"}},
	"hello":        {{"HELLO", "2"}},
	"auth":         {{"AUTH", "pw"}},
	"select":       {{"SELECT", "0"}},
	"quit":         {{"QUIT"}},
	"command":      {{"COMMAND", "COUNT"}, {"COMMAND", "INFO", "get"}, {"COMMAND", "DOCS", "get"}, {"COMMAND", "LIST"}},
	"multi":        {{"MULTI"}},
	"exec":         {{"EXEC"}},
	"discard":      {{"DISCARD"}},
	"watch":        {{"WATCH", "bk"}},
	"unwatch":      {{"UNWATCH"}},
	"del":          {{"DEL", "gone"}},
	"unlink":       {{"UNLINK", "gone"}},
	"exists":       {{"EXISTS", "bk"}},
	"type":         {{"TYPE", "bk"}},
	"keys":         {{"KEYS", "*"}},
	"scan":         {{"SCAN", "0", "MATCH", "b*"}},
	"rename":       {{"RENAME", "sk", "sk2"}},
	"expire":       {{"EXPIRE", "ck", "1000"}},
	"pexpire":      {{"PEXPIRE", "ck", "1000000"}},
	"expireat":     {{"EXPIREAT", "ck", "99999999999"}},
	"pexpireat":    {{"PEXPIREAT", "ck", "99999999999000"}},
	"ttl":          {{"TTL", "ck"}},
	"pttl":         {{"PTTL", "ck"}},
	"persist":      {{"PERSIST", "ck"}},
	"flushall":     {{"FLUSHALL"}},
	"flushdb":      {{"FLUSHDB"}},
	"set":          {{"SET", "sk", "v2"}},
	"get":          {{"GET", "sk"}},
	"getdel":       {{"GETDEL", "nosuch"}},
	"strlen":       {{"STRLEN", "sk"}},
	"mset":         {{"MSET", "m1", "a", "m2", "b"}},
	"mget":         {{"MGET", "m1", "sk"}},
	"incr":         {{"INCR", "n"}},
	"decr":         {{"DECR", "n"}},
	"incrby":       {{"INCRBY", "n", "5"}},
	"decrby":       {{"DECRBY", "n", "5"}},
	"incrbyfloat":  {{"INCRBYFLOAT", "n", "1.5"}},
	"append":       {{"APPEND", "sk", "x"}},
	"setnx":        {{"SETNX", "sk", "x"}},
	"setex":        {{"SETEX", "sk", "100", "x"}},
	"psetex":       {{"PSETEX", "sk", "100000", "x"}},
	"getset":       {{"GETSET", "sk", "x"}},
	"getex":        {{"GETEX", "sk", "PERSIST"}},
	"msetnx":       {{"MSETNX", "m1", "a", "m2", "b"}},
	"setrange":     {{"SETRANGE", "sk", "2", "x"}},
	"getrange":     {{"GETRANGE", "sk", "0", "-1"}},
	"substr":       {{"SUBSTR", "sk", "0", "-1"}},
	"bf.debug":     {{"BF.DEBUG", "bk"}},
	"cf.debug":     {{"CF.DEBUG", "ck"}},
	"memory":       {{"MEMORY", "USAGE", "bk"}, {"MEMORY", "STATS"}, {"MEMORY", "DOCTOR"}, {"MEMORY", "PURGE"}, {"MEMORY", "HELP"}},
	"save":         {{"SAVE"}},
	"bgsave":       {{"BGSAVE"}},
	"bgrewriteaof": {{"BGREWRITEAOF"}},
	"lastsave":     {{"LASTSAVE"}},
	"shutdown":     {{"SHUTDOWN", "NOSAVE"}},
	"client": {{"CLIENT", "SETNAME", "n"}, {"CLIENT", "GETNAME"}, {"CLIENT", "ID"}, {"CLIENT", "SETINFO", "LIB-NAME", "x"},
		{"CLIENT", "INFO"}, {"CLIENT", "LIST"}, {"CLIENT", "KILL", "ID", "999999"}, {"CLIENT", "NO-EVICT", "on"},
		{"CLIENT", "REPLY", "ON"}, {"CLIENT", "HELP"}},
	"reset": {{"RESET"}},
	"config": {{"CONFIG", "GET", "maxmemory"}, {"CONFIG", "SET", "slowlog-max-len", "128"}, {"CONFIG", "SET", "maxmemory", "0"},
		{"CONFIG", "REWRITE"}, {"CONFIG", "RESETSTAT"}},
	"latency": {{"LATENCY", "LATEST"}, {"LATENCY", "HISTORY", "command"}, {"LATENCY", "RESET"}, {"LATENCY", "DOCTOR"}, {"LATENCY", "HISTOGRAM"}, {"LATENCY", "HELP"}},
	"acl": {{"ACL", "WHOAMI"}, {"ACL", "USERS"}, {"ACL", "LIST"}, {"ACL", "CAT"}, {"ACL", "CAT", "bloom"}, {"ACL", "GETUSER", "default"},
		{"ACL", "SETUSER", "txnuser", "on", ">pw"}, {"ACL", "DELUSER", "txnuser"}, {"ACL", "LOG"}, {"ACL", "LOG", "RESET"},
		{"ACL", "GENPASS"}, {"ACL", "DRYRUN", "default", "GET", "k"}, {"ACL", "LOAD"}, {"ACL", "SAVE"}, {"ACL", "HELP"}},
	"slowlog": {{"SLOWLOG", "GET"}, {"SLOWLOG", "LEN"}, {"SLOWLOG", "RESET"}, {"SLOWLOG", "HELP"}},
	"info":    {{"INFO"}, {"INFO", "all"}},
	"dbsize":  {{"DBSIZE"}},
	// Redis Sentinel sends REPLICAOF/SLAVEOF inside MULTI with CONFIG
	// REWRITE and CLIENT KILL: they must queue.
	"replicaof": {{"REPLICAOF", "NO", "ONE"}},
	"slaveof":   {{"SLAVEOF", "NO", "ONE"}},
	"role":      {{"ROLE"}},
	"wait":      {{"WAIT", "0", "0"}},
	"waitaof":   {{"WAITAOF", "0", "0", "0"}},
	"failover":  {{"FAILOVER", "ABORT"}},
	"replconf":  {{"REPLCONF", "listening-port", "1"}},
	"sync":      {{"SYNC"}},
	"psync":     {{"PSYNC", "?", "-1"}},
	// Pub/sub runs inside MULTI as in Redis 7 (the confirmations are
	// EXEC's elements).
	"subscribe":    {{"SUBSCRIBE", "ch"}},
	"unsubscribe":  {{"UNSUBSCRIBE"}, {"UNSUBSCRIBE", "ch"}},
	"psubscribe":   {{"PSUBSCRIBE", "c*"}},
	"punsubscribe": {{"PUNSUBSCRIBE"}},
	"publish":      {{"PUBLISH", "ch", "m"}},
	"pubsub":       {{"PUBSUB", "CHANNELS"}, {"PUBSUB", "NUMSUB", "ch"}, {"PUBSUB", "NUMPAT"}, {"PUBSUB", "HELP"}},
	"script":       {{"SCRIPT", "KILL"}, {"SCRIPT", "HELP"}},
	"randomkey":    {{"RANDOMKEY"}},
	"monitor":      {{"MONITOR"}},
	"copy":         {{"COPY", "bk", "bk2"}},
	"dump":         {{"DUMP", "bk"}, {"DUMP", "sk"}},
	"restore":      {{"RESTORE", "rk", "0", string(rdb.DumpString([]byte("v"), rdb.DumpVersion))}},
	"module":       {{"MODULE", "LIST"}, {"MODULE", "HELP"}, {"MODULE", "LOAD", "/x.so"}},
	"object":       {{"OBJECT", "ENCODING", "bk"}, {"OBJECT", "REFCOUNT", "sk"}, {"OBJECT", "IDLETIME", "bk"}, {"OBJECT", "FREQ", "bk"}, {"OBJECT", "HELP"}},
	// DEBUG with enable-debug-command yes (the tests that use these set it).
	"debug": {{"DEBUG", "OBJECT", "bk"}, {"DEBUG", "SLEEP", "0"}, {"DEBUG", "HELP"}},
}

// TestEveryCommandInMulti queues every command of the table (each
// subcommand of those that have them) once after MULTI and checks that it is
// either QUEUED and then answered by EXEC, or refused at once with Redis's
// error and the transaction aborted — never a hang. MEMORY USAGE, STATS and
// DOCTOR used to deadlock the whole server here (EXEC holds the keyspace
// lock, and the handler took it again).
func TestEveryCommandInMulti(t *testing.T) { bothPaths(t, testEveryCommandInMulti) }

func testEveryCommandInMulti(t *testing.T, goroutinePerConn bool) {
	s := startServer(t, Config{goroutinePerConn: goroutinePerConn, EnableDebugCommand: "yes"})
	for _, cmd := range commandList {
		if _, ok := multiCases[cmd.name]; !ok {
			t.Errorf("command %q has no case in multiCases: add how it is queued", cmd.name)
		}
	}
	for name := range multiCases {
		if _, ok := commandTable[name]; !ok {
			t.Errorf("multiCases names %q, which is not in the command table", name)
		}
	}
	setup := func(rc *rawConn) {
		rc.do("FLUSHALL")
		rc.do("BF.ADD", "bk", "x")
		rc.do("CF.ADD", "ck", "x")
		rc.do("SET", "sk", "v")
	}
	probe := dialRaw(t, s.Addr())
	for _, cmd := range commandList {
		for _, args := range multiCases[cmd.name] {
			name := strings.Join(args, " ")
			rc := dialRaw(t, s.Addr())
			setup(rc)
			if got := rc.do("MULTI"); got != "+OK" {
				t.Fatalf("%s: MULTI: %s", name, got)
			}
			got := rc.do(args...)
			switch {
			case cmd.txnControl:
				// Runs at once, even inside MULTI.
				if got == "+QUEUED" {
					t.Errorf("%s: transaction control was queued", name)
				}
				if cmd.name == "quit" {
					continue
				}
				rc.do("DISCARD")
			case got == "+QUEUED":
				if cmd.noMulti {
					t.Errorf("%s: marked no_multi but queued", name)
				}
				rc.send("EXEC")
				rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
				reply, err := readReply(rc.r)
				if err != nil {
					t.Fatalf("%s: EXEC did not answer: %v", name, err)
				}
				if !strings.HasPrefix(reply, "[") {
					t.Errorf("%s: EXEC answered %s, want an array", name, reply)
				}
			default:
				if !cmd.noMulti {
					t.Errorf("%s: refused in MULTI (%s) but not marked no_multi", name, got)
				}
				if got != "-ERR Command not allowed inside a transaction" {
					t.Errorf("%s: refused with %q, want Redis's error", name, got)
				}
				if ex := rc.do("EXEC"); ex != "-EXECABORT Transaction discarded because of previous errors." {
					t.Errorf("%s: EXEC after refusal: %s", name, ex)
				}
			}
			// The server still serves other clients.
			if p := probe.do("PING"); p != "+PONG" {
				t.Fatalf("after %s: PING: %s", name, p)
			}
			rc.c.Close()
		}
	}
}

// TestNoMultiFlag: COMMAND INFO says no_multi exactly for the commands
// refused inside MULTI, so clients can know without trying.
func TestNoMultiFlag(t *testing.T) {
	for _, c := range commandList {
		has := false
		for _, f := range c.flags {
			has = has || f == "no_multi"
		}
		if has != c.noMulti {
			t.Errorf("%s: no_multi flag %v, refused in MULTI %v", c.name, has, c.noMulti)
		}
	}
}

// TestMultiQueueMaxmemory: commands queued past maxmemory (every client's
// queue counts) are refused with Redis's -OOM and EXEC aborts; DISCARD and
// disconnecting give the memory back. (48 queued 64 MB SETs used to take
// RSS from 1.0 to 4.1 GB with --maxmemory 64mb, every one QUEUED.)
func TestMultiQueueMaxmemory(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true, MaxMemory: 1 << 20})
	rc := dialRaw(t, s.Addr())
	val := strings.Repeat("v", 200<<10)
	rc.do("MULTI")
	queued, oom := 0, 0
	for i := 0; i < 10; i++ {
		switch got := rc.do("SET", "k"+itoa(int64(i)), val); got {
		case "+QUEUED":
			queued++
		case "-OOM command not allowed when used memory > 'maxmemory'.":
			oom++
		default:
			t.Fatalf("SET %d in MULTI: %.80s", i, got)
		}
	}
	if queued == 0 || queued > 5 || oom == 0 {
		t.Fatalf("%d queued, %d refused with OOM; want the queue stopped near 1 MiB", queued, oom)
	}
	// Other clients are refused too while the queue holds the memory.
	other := dialRaw(t, s.Addr())
	other.do("MULTI")
	if got := other.do("SET", "x", val); !strings.HasPrefix(got, "-OOM") {
		t.Fatalf("another client's queue past maxmemory: %.80s", got)
	}
	if got := rc.do("EXEC"); got != "-EXECABORT Transaction discarded because of previous errors." {
		t.Fatalf("EXEC: %.80s", got)
	}
	if got := rc.do("DBSIZE"); got != ":0" {
		t.Fatalf("DBSIZE after the aborted EXEC: %s", got)
	}
	// The aborted queue is released: the other client's next queue fits.
	other.do("DISCARD")
	other.do("MULTI")
	if got := other.do("SET", "x", val); got != "+QUEUED" {
		t.Fatalf("after the queue was released: %.80s", got)
	}
	other.c.Close()
	poll.Until(t, 5*time.Second, func() error {
		if n := s.queuedBytes.Load(); n != 0 {
			return fmt.Errorf("a disconnected client's queue still counts %d bytes", n)
		}
		return nil
	})
}

// TestMultiQueueQueryLimit: a client's queue counts against its
// query-buffer limit.
func TestMultiQueueQueryLimit(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true, MaxBulk: 64 << 10, MaxQuery: 128 << 10})
	rc := dialRaw(t, s.Addr())
	val := strings.Repeat("v", 60<<10)
	rc.do("MULTI")
	for i := 0; i < 2; i++ {
		if got := rc.do("SET", "k", val); got != "+QUEUED" {
			t.Fatalf("SET %d: %.80s", i, got)
		}
	}
	if got := rc.do("SET", "k", val); !strings.HasPrefix(got, "-ERR MULTI queue would exceed the client query buffer limit") {
		t.Fatalf("third 60 KiB SET with a 128 KiB limit: %.80s", got)
	}
	if got := rc.do("EXEC"); !strings.HasPrefix(got, "-EXECABORT") {
		t.Fatalf("EXEC: %.80s", got)
	}
}

// TestLogRecordLimit: a write (or a transaction) whose log record would be
// larger than a record may be is refused before anything is applied, so
// the log never holds a record start-up cannot read back (a record over
// 4 GiB used to wrap its 32-bit length). The limit is made small here.
func TestLogRecordLimit(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, Config{Dir: dir, maxRecord: 4096})
	rc := dialRaw(t, s.Addr())
	if got := rc.do("SET", "big", strings.Repeat("x", 5000)); !strings.HasPrefix(got, "-ERR the append-only log record of this write would be") {
		t.Fatalf("SET of 5000 bytes: %.100s", got)
	}
	if got := rc.do("EXISTS", "big"); got != ":0" {
		t.Fatal("the refused write was applied")
	}
	rc.do("MULTI")
	rc.do("SET", "a", strings.Repeat("x", 1500))
	rc.do("SET", "b", strings.Repeat("x", 1500))
	if got := rc.do("SET", "c", strings.Repeat("x", 1500)); !strings.HasPrefix(got, "-ERR the append-only log record") {
		t.Fatalf("third SET: %.100s", got)
	}
	if got := rc.do("EXEC"); !strings.HasPrefix(got, "-EXECABORT") {
		t.Fatalf("EXEC: %.80s", got)
	}
	if got := rc.do("SET", "small", "v"); got != "+OK" {
		t.Fatal(got)
	}
	s.Close()
	s2 := startServer(t, Config{Dir: dir, maxRecord: 4096})
	if got := dialRaw(t, s2.Addr()).do("DBSIZE"); got != ":1" {
		t.Fatalf("after restart: DBSIZE %s", got)
	}
}
