package server

import (
	"strconv"
	"strings"

	"github.com/bloomkit/bloomkit/server/internal/acl"
)

type handlerFunc func(s *Server, c *Session, args [][]byte, r *Reply)

// command describes one command: its handler and what COMMAND INFO reports.
type command struct {
	name     string
	arity    int // Redis convention: n exact, -n at least n
	flags    []string
	first    int // first key position (0 = none)
	last     int
	step     int
	write    bool // logged to the append-only file when it succeeds
	noauth   bool // allowed before AUTH
	noMulti  bool // refused inside MULTI (flag no_multi; see TestEveryCommandInMulti)
	unlocked bool // runs without the keyspace lock (it takes what it needs)
	checkOwn bool // the handler checks its own arity (RedisBloom commands)
	// layout: a read that may rearrange what its key holds without
	// changing what it answers (a t-digest query merges the digest's
	// buffer, as RedisBloom's does). It is logged, like a write, when
	// the handler sets Session.logArgs, so that replay and replicas hold
	// the same bytes; it is never refused as a write.
	layout bool
	// txnControl commands run at once inside MULTI instead of being
	// queued (EXEC, DISCARD, MULTI, WATCH, QUIT, RESET).
	txnControl bool
	noSlowlog  bool // never in the slow log (EXEC: its commands are)
	// inSubscribed commands run on a RESP2 connection in subscribed mode
	// ((P)(UN)SUBSCRIBE, PING, QUIT, RESET); others are refused there.
	inSubscribed bool
	// hasSubcommands: errors name it as "name|subcommand".
	hasSubcommands bool
	fast           bool // flag "fast": LATENCY records it as a fast-command
	admin          bool // flag "admin": MONITOR does not show it
	// loading: flag "loading", it runs while the data is loaded (others
	// are answered -LOADING); noAsyncLoading: flag "no_async_loading",
	// refused while a replica loads its master's data (loading.go).
	loading        bool
	noAsyncLoading bool
	fn             handlerFunc
	// keys names a request's key arguments when first, last and step
	// cannot (a subcommand's key, an option that changes the access):
	// see commandKeys.
	keys keysFunc
	idx  int // position in commandList (per-server metric children)
}

// keysFunc calls visit with the position of each key argument of a
// request and the access the request needs to it.
type keysFunc func(args [][]byte, visit func(i int, need acl.Perm))

// commandKeys calls visit with each key argument of a request and the
// access it needs to that key: read (it returns or uses what the key
// holds), write (it changes the key), both, or neither (it only looks at
// whether the key is there, as EXISTS does: the key must still match one
// of the user's patterns). It is the one place that knows which
// arguments are keys: the ACL check, the before-write rules, the
// durability doubt set and COMMAND GETKEYS all read it.
func commandKeys(cmd *command, args [][]byte, visit func(i int, need acl.Perm)) {
	if cmd.keys != nil {
		cmd.keys(args, visit)
		return
	}
	if cmd.first <= 0 {
		return
	}
	last := cmd.last
	if last < 0 {
		last += len(args)
	}
	for i := cmd.first; i <= last && i < len(args); i += max(cmd.step, 1) {
		visit(i, keyPerm(cmd, i))
	}
}

// forKeys calls fn with each key argument of a request (commandKeys).
func forKeys(cmd *command, args [][]byte, fn func([]byte)) {
	commandKeys(cmd, args, func(i int, _ acl.Perm) { fn(args[i]) })
}

// setKeys is SET's key: written, and read as well when GET returns what
// it held (Redis's key flags for SET ... GET: RW ACCESS UPDATE).
func setKeys(args [][]byte, visit func(int, acl.Perm)) {
	if len(args) < 2 {
		return
	}
	for _, a := range args[min(3, len(args)):] {
		if strings.EqualFold(string(a), "get") {
			visit(1, acl.Read|acl.Write)
			return
		}
	}
	visit(1, acl.Write)
}

// memoryKeys is MEMORY USAGE's key (its third argument): it reports the
// key's size, not its value, so the key need only match a pattern.
func memoryKeys(args [][]byte, visit func(int, acl.Perm)) {
	if len(args) >= 3 && strings.EqualFold(string(args[1]), "usage") {
		visit(2, 0)
	}
}

// commandList is the table in a fixed order.
var commandList []*command

var commandTable map[string]*command

func init() {
	list := []*command{
		// RedisBloom Bloom commands.
		{name: "bf.reserve", arity: -4, flags: []string{"write", "denyoom", "module"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdBFReserve},
		{name: "bf.add", arity: 3, flags: []string{"write", "denyoom", "module"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdBFAdd},
		{name: "bf.madd", arity: -3, flags: []string{"write", "denyoom", "module"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdBFAdd},
		{name: "bf.insert", arity: -4, flags: []string{"write", "denyoom", "module"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdBFInsert},
		{name: "bf.exists", arity: 3, flags: []string{"readonly", "module", "fast"}, first: 1, last: 1, step: 1, checkOwn: true, fn: cmdBFExists},
		{name: "bf.mexists", arity: -3, flags: []string{"readonly", "module", "fast"}, first: 1, last: 1, step: 1, checkOwn: true, fn: cmdBFExists},
		{name: "bf.info", arity: -2, flags: []string{"readonly", "module", "fast"}, first: 1, last: 1, step: 1, checkOwn: true, fn: cmdBFInfo},
		{name: "bf.card", arity: 2, flags: []string{"readonly", "module", "fast"}, first: 1, last: 1, step: 1, checkOwn: true, fn: cmdBFCard},
		{name: "bf.scandump", arity: 3, flags: []string{"readonly", "module", "fast"}, first: 1, last: 1, step: 1, checkOwn: true, fn: cmdBFScanDump},
		{name: "bf.merge", arity: -3, flags: []string{"write", "denyoom", "module"}, first: 1, last: -1, step: 1, write: true, checkOwn: true, fn: cmdBFMerge},
		{name: "bf.advance", arity: 3, flags: []string{"write", "module", "fast"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdBFAdvance},
		{name: "bf.loadchunk", arity: 4, flags: []string{"write", "denyoom", "module"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdBFLoadChunk},
		// RedisBloom cuckoo commands.
		{name: "cf.reserve", arity: -3, flags: []string{"write", "denyoom", "module"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdCFReserve},
		{name: "cf.add", arity: 3, flags: []string{"write", "denyoom", "module"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdCFAdd},
		{name: "cf.addnx", arity: 3, flags: []string{"write", "denyoom", "module"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdCFAdd},
		{name: "cf.insert", arity: -4, flags: []string{"write", "denyoom", "module"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdCFInsert},
		{name: "cf.insertnx", arity: -4, flags: []string{"write", "denyoom", "module"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdCFInsert},
		{name: "cf.exists", arity: 3, flags: []string{"readonly", "module", "fast"}, first: 1, last: 1, step: 1, checkOwn: true, fn: cmdCFCheck},
		{name: "cf.mexists", arity: -3, flags: []string{"readonly", "module", "fast"}, first: 1, last: 1, step: 1, checkOwn: true, fn: cmdCFCheck},
		{name: "cf.count", arity: 3, flags: []string{"readonly", "module", "fast"}, first: 1, last: 1, step: 1, checkOwn: true, fn: cmdCFCheck},
		{name: "cf.del", arity: 3, flags: []string{"write", "module", "fast"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdCFDel},
		{name: "cf.compact", arity: 2, flags: []string{"readonly", "module", "fast"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdCFCompact},
		{name: "cf.info", arity: 2, flags: []string{"readonly", "module", "fast"}, first: 1, last: 1, step: 1, checkOwn: true, fn: cmdCFInfo},
		{name: "cf.scandump", arity: 3, flags: []string{"readonly", "module", "fast"}, first: 1, last: 1, step: 1, checkOwn: true, fn: cmdCFScanDump},
		{name: "cf.loadchunk", arity: 4, flags: []string{"write", "denyoom", "module"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdCFLoadChunk},
		// Connection commands.
		{name: "ping", arity: -1, flags: []string{"fast"}, inSubscribed: true, fn: cmdPing},
		{name: "echo", arity: 2, flags: []string{"fast"}, fn: cmdEcho},
		{name: "hello", arity: -1, flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "no_multi"}, noauth: true, noMulti: true, fn: cmdHello},
		{name: "auth", arity: -2, flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "no_multi"}, noauth: true, noMulti: true, fn: cmdAuth},
		{name: "select", arity: 2, flags: []string{"loading", "stale", "fast"}, fn: cmdSelect},
		{name: "quit", arity: -1, flags: []string{"noscript", "loading", "stale", "fast", "no_auth"}, noauth: true, txnControl: true, inSubscribed: true, fn: cmdQuit},
		{name: "command", arity: -1, flags: []string{"loading", "stale"}, hasSubcommands: true, fn: cmdCommand},
		{name: "multi", arity: 1, flags: []string{"noscript", "loading", "stale", "fast"}, unlocked: true, txnControl: true, fn: cmdMulti},
		{name: "exec", arity: 1, flags: []string{"noscript", "loading", "stale", "skip_slowlog"}, unlocked: true, txnControl: true, noSlowlog: true, fn: cmdExec},
		{name: "discard", arity: 1, flags: []string{"noscript", "loading", "stale", "fast"}, unlocked: true, txnControl: true, fn: cmdDiscard},
		{name: "watch", arity: -2, flags: []string{"noscript", "loading", "stale", "fast"}, first: 1, last: -1, step: 1, unlocked: true, txnControl: true, fn: cmdWatch},
		{name: "unwatch", arity: 1, flags: []string{"noscript", "loading", "stale", "fast"}, unlocked: true, fn: cmdUnwatch},
		// Keyspace commands.
		{name: "del", arity: -2, flags: []string{"write"}, first: 1, last: -1, step: 1, write: true, fn: cmdDel},
		{name: "unlink", arity: -2, flags: []string{"write", "fast"}, first: 1, last: -1, step: 1, write: true, fn: cmdDel},
		{name: "exists", arity: -2, flags: []string{"readonly", "fast"}, first: 1, last: -1, step: 1, fn: cmdExists},
		{name: "type", arity: 2, flags: []string{"readonly", "fast"}, first: 1, last: 1, step: 1, fn: cmdType},
		{name: "copy", arity: -3, flags: []string{"write", "denyoom"}, first: 1, last: 2, step: 1, write: true, fn: cmdCopy},
		{name: "monitor", arity: 1, flags: []string{"admin", "noscript", "loading", "stale"}, unlocked: true, fn: cmdMonitor},
		{name: "randomkey", arity: 1, flags: []string{"readonly"}, fn: cmdRandomKey},
		{name: "keys", arity: 2, flags: []string{"readonly"}, fn: cmdKeys},
		{name: "scan", arity: -2, flags: []string{"readonly"}, fn: cmdScan},
		{name: "rename", arity: 3, flags: []string{"write"}, first: 1, last: 2, step: 1, write: true, fn: cmdRename},
		{name: "expire", arity: -3, flags: []string{"write", "fast"}, first: 1, last: 1, step: 1, write: true, fn: cmdExpire},
		{name: "pexpire", arity: -3, flags: []string{"write", "fast"}, first: 1, last: 1, step: 1, write: true, fn: cmdExpire},
		{name: "expireat", arity: -3, flags: []string{"write", "fast"}, first: 1, last: 1, step: 1, write: true, fn: cmdExpire},
		{name: "pexpireat", arity: -3, flags: []string{"write", "fast"}, first: 1, last: 1, step: 1, write: true, fn: cmdExpire},
		{name: "ttl", arity: 2, flags: []string{"readonly", "fast"}, first: 1, last: 1, step: 1, fn: cmdTTL},
		{name: "pttl", arity: 2, flags: []string{"readonly", "fast"}, first: 1, last: 1, step: 1, fn: cmdTTL},
		{name: "persist", arity: 2, flags: []string{"write", "fast"}, first: 1, last: 1, step: 1, write: true, fn: cmdPersist},
		{name: "dump", arity: 2, flags: []string{"readonly"}, first: 1, last: 1, step: 1, layout: true, fn: cmdDump},
		{name: "restore", arity: -4, flags: []string{"write", "denyoom"}, first: 1, last: 1, step: 1, write: true, fn: cmdRestore},
		{name: "flushall", arity: -1, flags: []string{"write"}, write: true, fn: cmdFlush},
		{name: "flushdb", arity: -1, flags: []string{"write"}, write: true, fn: cmdFlush},
		// Plain strings, debugging and memory (cmd_string.go, cmd_debug.go, cmd_memory.go).
		{name: "set", arity: -3, flags: []string{"write", "denyoom"}, first: 1, last: 1, step: 1, write: true, keys: setKeys, fn: cmdSet},
		{name: "get", arity: 2, flags: []string{"readonly", "fast"}, first: 1, last: 1, step: 1, fn: cmdGet},
		{name: "getdel", arity: 2, flags: []string{"write", "fast"}, first: 1, last: 1, step: 1, write: true, fn: cmdGetDel},
		{name: "strlen", arity: 2, flags: []string{"readonly", "fast"}, first: 1, last: 1, step: 1, fn: cmdStrlen},
		{name: "mset", arity: -3, flags: []string{"write", "denyoom"}, first: 1, last: -1, step: 2, write: true, fn: cmdMSet},
		{name: "mget", arity: -2, flags: []string{"readonly", "fast"}, first: 1, last: -1, step: 1, fn: cmdMGet},
		{name: "incr", arity: 2, flags: []string{"write", "denyoom", "fast"}, first: 1, last: 1, step: 1, write: true, fn: cmdIncrBy},
		{name: "decr", arity: 2, flags: []string{"write", "denyoom", "fast"}, first: 1, last: 1, step: 1, write: true, fn: cmdIncrBy},
		{name: "incrby", arity: 3, flags: []string{"write", "denyoom", "fast"}, first: 1, last: 1, step: 1, write: true, fn: cmdIncrBy},
		{name: "decrby", arity: 3, flags: []string{"write", "denyoom", "fast"}, first: 1, last: 1, step: 1, write: true, fn: cmdIncrBy},
		{name: "incrbyfloat", arity: 3, flags: []string{"write", "denyoom", "fast"}, first: 1, last: 1, step: 1, write: true, fn: cmdIncrByFloat},
		{name: "append", arity: 3, flags: []string{"write", "denyoom", "fast"}, first: 1, last: 1, step: 1, write: true, fn: cmdAppend},
		{name: "setnx", arity: 3, flags: []string{"write", "denyoom", "fast"}, first: 1, last: 1, step: 1, write: true, fn: cmdSetNX},
		{name: "setex", arity: 4, flags: []string{"write", "denyoom"}, first: 1, last: 1, step: 1, write: true, fn: cmdSetEx},
		{name: "psetex", arity: 4, flags: []string{"write", "denyoom"}, first: 1, last: 1, step: 1, write: true, fn: cmdSetEx},
		{name: "getset", arity: 3, flags: []string{"write", "denyoom", "fast"}, first: 1, last: 1, step: 1, write: true, fn: cmdGetSet},
		{name: "getex", arity: -2, flags: []string{"write", "fast"}, first: 1, last: 1, step: 1, write: true, fn: cmdGetEx},
		{name: "msetnx", arity: -3, flags: []string{"write", "denyoom"}, first: 1, last: -1, step: 2, write: true, fn: cmdMSetNX},
		{name: "setrange", arity: 4, flags: []string{"write", "denyoom"}, first: 1, last: 1, step: 1, write: true, fn: cmdSetRange},
		{name: "getrange", arity: 4, flags: []string{"readonly"}, first: 1, last: 1, step: 1, fn: cmdGetRange},
		{name: "substr", arity: 4, flags: []string{"readonly"}, first: 1, last: 1, step: 1, fn: cmdGetRange},
		{name: "bf.debug", arity: 2, flags: []string{"readonly", "module", "fast"}, first: 1, last: 1, step: 1, fn: cmdBFDebug},
		{name: "cf.debug", arity: 2, flags: []string{"readonly", "module", "fast"}, first: 1, last: 1, step: 1, fn: cmdCFDebug},
		{name: "memory", arity: -2, flags: []string{"readonly"}, unlocked: true, hasSubcommands: true, keys: memoryKeys, fn: cmdMemory},
		{name: "object", arity: -2, hasSubcommands: true, keys: objectKeys, fn: cmdObject},
		{name: "debug", arity: -2, flags: []string{"admin", "noscript", "loading", "stale"}, unlocked: true, fn: cmdDebug},
		// Persistence.
		{name: "save", arity: 1, flags: []string{"admin", "noscript", "no_async_loading", "no_multi"}, noMulti: true, unlocked: true, fn: cmdSave},
		{name: "bgsave", arity: -1, flags: []string{"admin", "noscript", "no_async_loading", "no_multi"}, noMulti: true, unlocked: true, fn: cmdBGSave},
		{name: "bgrewriteaof", arity: 1, flags: []string{"admin", "noscript", "no_async_loading", "no_multi"}, noMulti: true, unlocked: true, fn: cmdBGRewriteAOF},
		{name: "lastsave", arity: 1, flags: []string{"fast"}, unlocked: true, fn: cmdLastSave},
		{name: "shutdown", arity: -1, flags: []string{"admin", "noscript", "loading", "stale", "no_multi", "allow_busy"}, noMulti: true, unlocked: true, fn: cmdShutdown},
		// Operator surface: connection state, settings,
		// introspection. Kept together for merging.
		{name: "client", arity: -2, flags: []string{"noscript", "loading", "stale"}, hasSubcommands: true, fn: cmdClient},
		{name: "reset", arity: 1, flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy"}, noauth: true, txnControl: true, unlocked: true, inSubscribed: true, fn: cmdReset},
		{name: "config", arity: -2, flags: []string{"admin", "noscript", "loading", "stale"}, unlocked: true, hasSubcommands: true, fn: cmdConfig},
		{name: "latency", arity: -2, flags: []string{"admin", "noscript", "loading", "stale"}, unlocked: true, hasSubcommands: true, fn: cmdLatency},
		{name: "slowlog", arity: -2, flags: []string{"admin", "random", "loading", "stale"}, unlocked: true, hasSubcommands: true, fn: cmdSlowlog},
		{name: "info", arity: -1, flags: []string{"loading", "stale"}, fn: cmdInfo},
		{name: "acl", arity: -2, flags: []string{"noscript", "loading", "stale"}, unlocked: true, fn: cmdACL},
		{name: "dbsize", arity: 1, flags: []string{"readonly", "fast"}, fn: cmdDBSize},
		// Replication (replication.go, repl_master.go).
		{name: "replicaof", arity: 3, flags: []string{"admin", "noscript", "stale", "no_async_loading"}, unlocked: true, fn: cmdReplicaOf},
		{name: "slaveof", arity: 3, flags: []string{"admin", "noscript", "stale", "no_async_loading"}, unlocked: true, fn: cmdReplicaOf},
		{name: "role", arity: 1, flags: []string{"noscript", "loading", "stale", "fast"}, unlocked: true, fn: cmdRole},
		{name: "wait", arity: 3, flags: []string{"noscript"}, unlocked: true, fn: cmdWait},
		{name: "failover", arity: -1, flags: []string{"admin", "noscript", "stale"}, unlocked: true, fn: cmdFailover},
		{name: "waitaof", arity: 4, flags: []string{"noscript"}, unlocked: true, fn: cmdWaitAOF},
		{name: "replconf", arity: -1, flags: []string{"admin", "noscript", "loading", "stale", "allow_busy"}, unlocked: true, fn: cmdReplConf},
		{name: "sync", arity: 1, flags: []string{"admin", "noscript", "no_async_loading", "no_multi"}, unlocked: true, noMulti: true, fn: cmdSync},
		{name: "psync", arity: -3, flags: []string{"admin", "noscript", "no_async_loading", "no_multi"}, unlocked: true, noMulti: true, fn: cmdSync},
		// Pub/sub (cmd_pubsub.go), and SCRIPT KILL for Sentinel.
		{name: "subscribe", arity: -2, flags: []string{"pubsub", "noscript", "loading", "stale"}, unlocked: true, inSubscribed: true, fn: cmdSubscribe},
		{name: "unsubscribe", arity: -1, flags: []string{"pubsub", "noscript", "loading", "stale"}, unlocked: true, inSubscribed: true, fn: cmdUnsubscribe},
		{name: "psubscribe", arity: -2, flags: []string{"pubsub", "noscript", "loading", "stale"}, unlocked: true, inSubscribed: true, fn: cmdSubscribe},
		{name: "punsubscribe", arity: -1, flags: []string{"pubsub", "noscript", "loading", "stale"}, unlocked: true, inSubscribed: true, fn: cmdUnsubscribe},
		{name: "publish", arity: 3, flags: []string{"pubsub", "loading", "stale", "fast"}, unlocked: true, fn: cmdPublish},
		{name: "pubsub", arity: -2, flags: []string{"pubsub", "loading", "stale"}, unlocked: true, hasSubcommands: true, fn: cmdPubsub},
		// MODULE: RedisBloom's commands are built in (cmd_module.go).
		{name: "module", arity: -2, flags: []string{"admin", "noscript", "no_async_loading"}, unlocked: true, hasSubcommands: true, fn: cmdModule},
		{name: "script", arity: -2, flags: []string{"noscript"}, unlocked: true, hasSubcommands: true, fn: cmdScript},
	}
	list = append(list, tdigestCommands...) // cmd_tdigest.go
	// RedisBloom's Count-Min Sketch and Top-K (cmd_cms.go, cmd_topk.go).
	list = append(list, cmsCommands...)
	list = append(list, topkCommands...)
	commandTable = make(map[string]*command, len(list))
	for i, c := range list {
		c.idx = i
		for _, f := range c.flags {
			c.fast = c.fast || f == "fast"
			c.admin = c.admin || f == "admin"
			c.loading = c.loading || f == "loading"
			c.noAsyncLoading = c.noAsyncLoading || f == "no_async_loading"
		}
		commandTable[c.name] = c
	}
	commandList = list
}

// arityOK checks Redis's arity convention.
func (c *command) arityOK(n int) bool {
	if c.arity >= 0 {
		return n == c.arity
	}
	return n >= -c.arity
}

func unknownCommand(args [][]byte) string {
	var b strings.Builder
	b.WriteString("ERR unknown command '")
	b.WriteString(trimArg(args[0]))
	b.WriteString("', with args beginning with: ")
	for _, a := range args[1:] {
		b.WriteString("'")
		b.WriteString(trimArg(a))
		b.WriteString("' ")
		if b.Len() > 256 {
			break
		}
	}
	return b.String()
}

func trimArg(a []byte) string {
	if len(a) > 128 {
		a = a[:128]
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' {
			return ' '
		}
		return r
	}, string(a))
}

// lookupCommand finds a command by name, case-insensitively, without
// allocating for names of ordinary length.
func lookupCommand(name []byte) (*command, bool) {
	var buf [32]byte
	if len(name) > len(buf) {
		c, ok := commandTable[strings.ToLower(string(name))]
		return c, ok
	}
	for i, ch := range name {
		if ch >= 'A' && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		buf[i] = ch
	}
	c, ok := commandTable[string(buf[:len(name)])]
	return c, ok
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
