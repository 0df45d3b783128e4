package server

// COMMAND DOCS and COMMAND INFO's ACL categories, tips and key
// specifications. RedisBloom's commands answer as RedisBloom 8 registers
// them (its summaries, complexities, arguments and key specifications,
// group "module", module "bf", categories @bloom and @cuckoo); bloomkit's
// own filter commands join them; the Redis commands carry Redis's group
// and categories with summaries of their own. TestCommandDocsComplete
// fails for a command in the table without an entry here.

import "strings"

// cmdDoc is what COMMAND DOCS says of a command, with what COMMAND INFO
// adds to the command table.
type cmdDoc struct {
	summary, complexity, since string
	group                      string // Redis's command group; "module" for the filter commands
	// arity, when not 0, is COMMAND INFO's arity (RedisBloom registers
	// its commands with one that differs from the table's).
	arity int
	// categories are the ACL categories beyond those the flags imply
	// (Redis's rule: write, read, admin+dangerous, fast, else slow); for
	// the filter commands, all of them, as a module declares them.
	categories string
	tips       []string
	// keyFlag is the key specification's flags ("RO", "RW", "OW update";
	// a module command without one gets Redis's full access).
	keyFlag string
	// keyNotes is the key specification's notes, where Redis gives some.
	keyNotes string
	args     []cmdArg
}

// cmdArg is one argument in COMMAND DOCS.
type cmdArg struct {
	name, typ, token   string
	keySpec            int // index of its key specification; -1 none
	optional, multiple bool
	sub                []cmdArg
}

// aclCategoryOrder is the order Redis lists categories in, with the
// filter modules' last.
var aclCategoryOrder = strings.Fields("keyspace read write set sortedset list hash string bitmap hyperloglog geo stream pubsub admin fast slow blocking dangerous connection transaction scripting bloom cuckoo cms topk tdigest")

// isFilterCommand reports whether name is a BF.*, CF.*, CMS.*, TOPK.* or
// TDIGEST.* command (RedisBloom's): a
// module command as far as COMMAND DOCS and ACL categories go.
func isFilterCommand(name string) bool {
	return strings.HasPrefix(name, "bf.") || strings.HasPrefix(name, "cf.") ||
		strings.HasPrefix(name, "cms.") || strings.HasPrefix(name, "topk.") || strings.HasPrefix(name, "tdigest.")
}

// categories is the command's ACL categories in Redis's order.
func (c *command) categories() []string {
	if cats, ok := containerCategories[c.name]; ok {
		return strings.Fields(cats)
	}
	set := map[string]bool{}
	d := commandDocs[c.name]
	for _, f := range strings.Fields(d.categories) {
		set[f] = true
	}
	if !isFilterCommand(c.name) {
		// Redis's implicit categories (setImplicitACLCategories).
		for _, f := range c.flags {
			switch f {
			case "write":
				set["write"] = true
			case "readonly":
				set["read"] = true
			case "admin":
				set["admin"], set["dangerous"] = true, true
			case "pubsub":
				set["pubsub"] = true
			case "fast":
				set["fast"] = true
			case "blocking":
				set["blocking"] = true
			}
		}
		if !set["fast"] {
			set["slow"] = true
		}
	}
	var out []string
	for _, cat := range aclCategoryOrder {
		if set[cat] {
			out = append(out, cat)
		}
	}
	return out
}

// ks is the one key specification of a command with a single key.
const ks = 0

// commandDocs holds every command's entry.
var commandDocs = map[string]cmdDoc{
	// RedisBloom 8's Bloom and cuckoo commands.
	"bf.add": {group: "module", categories: "write bloom", summary: "Adds an item to a Bloom Filter", complexity: "O(k), where k is the number of hash functions used by the last sub-filter", since: "1.0.0", arity: 3, keyFlag: "RW",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "item", typ: "string", keySpec: -1}}},
	"bf.card": {group: "module", categories: "read fast bloom", summary: "Returns the cardinality of a Bloom filter", complexity: "O(1)", since: "2.4.4", arity: 2, keyFlag: "RO",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}}},
	"bf.debug": {group: "module", categories: "read bloom", summary: "Returns internal debug information about a Bloom Filter", complexity: "O(n), where n is the number of sub-filters", since: "1.0.0", arity: 2, keyFlag: "RO", tips: []string{"dont_cache"},
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}}},
	"bf.exists": {group: "module", categories: "read bloom", summary: "Checks whether an item exists in a Bloom Filter", complexity: "O(k), where k is the number of hash functions used by the last sub-filter", since: "1.0.0", arity: 3, keyFlag: "RO",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "item", typ: "string", keySpec: -1}}},
	"bf.info": {group: "module", categories: "read fast bloom", summary: "Returns information about a Bloom Filter", complexity: "O(1)", since: "1.0.0", arity: -2, keyFlag: "RO", tips: []string{"dont_cache"},
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "single_value", typ: "oneof", keySpec: -1, optional: true, sub: []cmdArg{{name: "capcaity", typ: "pure-token", keySpec: -1, token: "CAPACITY"}, {name: "SIZE", typ: "pure-token", keySpec: -1, token: "SIZE"}, {name: "FILTERS", typ: "pure-token", keySpec: -1, token: "FILTERS"}, {name: "ITEMS", typ: "pure-token", keySpec: -1, token: "ITEMS"}, {name: "EXPANSION", typ: "pure-token", keySpec: -1, token: "EXPANSION"}}}}},
	"bf.insert": {group: "module", categories: "write bloom", summary: "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist", complexity: "O(k * n), where k is the number of hash functions and n is the number of items", since: "1.0.0", arity: -4, keyFlag: "RW",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "capacity", typ: "block", keySpec: -1, token: "CAPACITY", optional: true, sub: []cmdArg{{name: "capacity", typ: "integer", keySpec: -1}}}, {name: "error", typ: "block", keySpec: -1, token: "ERROR", optional: true, sub: []cmdArg{{name: "error", typ: "double", keySpec: -1}}}, {name: "expansion", typ: "block", keySpec: -1, token: "EXPANSION", optional: true, sub: []cmdArg{{name: "expansion", typ: "integer", keySpec: -1}}}, {name: "nocreate", typ: "pure-token", keySpec: -1, token: "NOCREATE", optional: true}, {name: "nonscaling", typ: "pure-token", keySpec: -1, token: "NONSCALING", optional: true}, {name: "items", typ: "pure-token", keySpec: -1, token: "ITEMS"}, {name: "item", typ: "string", keySpec: -1, multiple: true}}},
	"bf.loadchunk": {group: "module", categories: "write bloom", summary: "Restores a filter previously saved using SCANDUMP", complexity: "O(n), where n is the capacity", since: "1.0.0", arity: 4, keyFlag: "RW",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "iterator", typ: "integer", keySpec: -1}, {name: "data", typ: "string", keySpec: -1}}},
	"bf.madd": {group: "module", categories: "write bloom", summary: "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist", complexity: "O(k * n), where k is the number of hash functions and n is the number of items", since: "1.0.0", arity: -3, keyFlag: "RW",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "item", typ: "string", keySpec: -1, multiple: true}}},
	"bf.mexists": {group: "module", categories: "read bloom", summary: "Checks whether one or more items exist in a Bloom Filter", complexity: "O(k * n), where k is the number of hash functions and n is the number of items", since: "1.0.0", arity: -3, keyFlag: "RO",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "item", typ: "string", keySpec: -1, multiple: true}}},
	"bf.reserve": {group: "module", categories: "write fast bloom", summary: "Creates a new Bloom Filter", complexity: "O(1)", since: "1.0.0", arity: -4, keyFlag: "RW",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "error_rate", typ: "double", keySpec: -1}, {name: "capacity", typ: "integer", keySpec: -1}, {name: "expansion", typ: "block", keySpec: -1, token: "EXPANSION", optional: true, sub: []cmdArg{{name: "expansion", typ: "integer", keySpec: -1}}}, {name: "nonscaling", typ: "pure-token", keySpec: -1, token: "NONSCALING", optional: true}}},
	"bf.scandump": {group: "module", categories: "read bloom", summary: "Begins an incremental save of the bloom filter", complexity: "O(n), where n is the capacity", since: "1.0.0", arity: 3, keyFlag: "RW", tips: []string{"dont_cache"},
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "iterator", typ: "integer", keySpec: -1}}},
	"cf.add": {group: "module", categories: "write cuckoo", summary: "Adds an item to a Cuckoo Filter", complexity: "O(k + i), where k is the number of sub-filters and i is maxIterations", since: "1.0.0", arity: 3, keyFlag: "RW",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "item", typ: "string", keySpec: -1}}},
	"cf.addnx": {group: "module", categories: "write cuckoo", summary: "Adds an item to a Cuckoo Filter if the item did not exist previously.", complexity: "O(k + i), where k is the number of sub-filters and i is maxIterations", since: "1.0.0", arity: 3, keyFlag: "RW",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "item", typ: "string", keySpec: -1}}},
	"cf.count": {group: "module", categories: "read cuckoo", summary: "Return the number of times an item might be in a Cuckoo Filter", complexity: "O(k), where k is the number of sub-filters", since: "1.0.0", arity: 3, keyFlag: "RO",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "item", typ: "string", keySpec: -1}}},
	"cf.del": {group: "module", categories: "write cuckoo", summary: "Deletes an item from a Cuckoo Filter", complexity: "O(k), where k is the number of sub-filters", since: "1.0.0", arity: 3, keyFlag: "RW",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "item", typ: "string", keySpec: -1}}},
	"cf.debug": {group: "module", categories: "read cuckoo", summary: "Returns internal debug information about a Cuckoo Filter", complexity: "O(1)", since: "1.0.0", arity: 2, keyFlag: "RO", tips: []string{"dont_cache"},
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}}},
	"cf.exists": {group: "module", categories: "read cuckoo", summary: "Checks whether one or more items exist in a Cuckoo Filter", complexity: "O(k), where k is the number of sub-filters", since: "1.0.0", arity: 3, keyFlag: "RO",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "item", typ: "string", keySpec: -1}}},
	"cf.info": {group: "module", categories: "read fast cuckoo", summary: "Returns information about a Cuckoo Filter", complexity: "O(1)", since: "1.0.0", arity: 2, keyFlag: "RO", tips: []string{"dont_cache"},
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}}},
	"cf.insert": {group: "module", categories: "write cuckoo", summary: "Adds one or more items to a Cuckoo Filter. A filter will be created if it does not exist", complexity: "O(n * (k + i)), where n is the number of items, k is the number of sub-filters and i is maxIterations", since: "1.0.0", arity: -4, keyFlag: "RW",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "capacity", typ: "block", keySpec: -1, optional: true, sub: []cmdArg{{name: "capacity", typ: "pure-token", keySpec: -1, token: "CAPACITY"}, {name: "capacity", typ: "integer", keySpec: -1}}}, {name: "nocreate", typ: "pure-token", keySpec: -1, token: "NOCREATE", optional: true}, {name: "items", typ: "pure-token", keySpec: -1, token: "ITEMS"}, {name: "item", typ: "string", keySpec: -1, multiple: true}}},
	"cf.insertnx": {group: "module", categories: "write cuckoo", summary: "Adds one or more items to a Cuckoo Filter if the items did not exist previously. A filter will be created if it does not exist", complexity: "O(n * (k + i)), where n is the number of items, k is the number of sub-filters and i is maxIterations", since: "1.0.0", arity: -4, keyFlag: "RW",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "capacity", typ: "block", keySpec: -1, optional: true, sub: []cmdArg{{name: "capacity", typ: "pure-token", keySpec: -1, token: "CAPACITY"}, {name: "capacity", typ: "integer", keySpec: -1}}}, {name: "nocreate", typ: "pure-token", keySpec: -1, token: "NOCREATE", optional: true}, {name: "items", typ: "pure-token", keySpec: -1, token: "ITEMS"}, {name: "item", typ: "string", keySpec: -1, multiple: true}}},
	"cf.loadchunk": {group: "module", categories: "write cuckoo", summary: "Restores a filter previously saved using SCANDUMP", complexity: "O(n), where n is the capacity", since: "1.0.0", arity: 4, keyFlag: "RW",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "iterator", typ: "integer", keySpec: -1}, {name: "data", typ: "string", keySpec: -1}}},
	"cf.mexists": {group: "module", categories: "read cuckoo", summary: "Checks whether one or more items exist in a Cuckoo Filter", complexity: "O(k * n), where k is the number of sub-filters and n is the number of items", since: "1.0.0", arity: -3, keyFlag: "RO",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "item", typ: "string", keySpec: -1, multiple: true}}},
	"cf.reserve": {group: "module", categories: "write fast cuckoo", summary: "Creates a new Cuckoo Filter", complexity: "O(1)", since: "1.0.0", arity: -3, keyFlag: "RW",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "capacity", typ: "integer", keySpec: -1}, {name: "bucketsize", typ: "block", keySpec: -1, token: "BUCKETSIZE", optional: true, sub: []cmdArg{{name: "bucketsize", typ: "integer", keySpec: -1}}}, {name: "maxiterations", typ: "block", keySpec: -1, token: "MAXITERATIONS", optional: true, sub: []cmdArg{{name: "maxiterations", typ: "integer", keySpec: -1}}}, {name: "expansion", typ: "block", keySpec: -1, token: "EXPANSION", optional: true, sub: []cmdArg{{name: "expansion", typ: "integer", keySpec: -1}}}}},
	"cf.scandump": {group: "module", categories: "read cuckoo", summary: "Begins an incremental save of the bloom filter", complexity: "O(n), where n is the capacity", since: "1.0.0", arity: 3, keyFlag: "RW", tips: []string{"dont_cache"},
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "iterator", typ: "integer", keySpec: -1}}},
	"cf.compact": {group: "module", categories: "read cuckoo", arity: -1},

	// bloomkit's filter commands.
	"bf.merge": {group: "module", categories: "write bloom", keyFlag: "RW", since: "1.0.0",
		summary:    "Makes a Bloom filter the union of itself and others with the same shape",
		complexity: "O(n), where n is the size of the filters",
		args:       []cmdArg{{name: "destkey", typ: "key", keySpec: ks}, {name: "source", typ: "key", keySpec: ks, multiple: true}}},
	"bf.advance": {group: "module", categories: "write bloom", keyFlag: "RW", since: "1.0.0",
		summary:    "Moves a window filter forward to a generation, forgetting the generations that expire by then",
		complexity: "O(g), where g is the number of generations forgotten",
		args:       []cmdArg{{name: "key", typ: "key", keySpec: ks}, {name: "generation", typ: "integer", keySpec: -1}}},
	"ping":         {group: "connection", since: "1.0.0", summary: "Returns the server's liveliness response", complexity: "O(1)", categories: "connection"},
	"echo":         {group: "connection", since: "1.0.0", summary: "Returns the given string", complexity: "O(1)", categories: "connection"},
	"hello":        {group: "connection", since: "6.0.0", summary: "Handshakes with the server: protocol version, authentication, client name", complexity: "O(1)", categories: "connection"},
	"auth":         {group: "connection", since: "1.0.0", summary: "Authenticates the connection", complexity: "O(N) where N is the number of passwords defined for the user", categories: "connection"},
	"select":       {group: "connection", since: "1.0.0", summary: "Changes the selected database (only database 0 exists)", complexity: "O(1)", categories: "connection"},
	"quit":         {group: "connection", since: "1.0.0", summary: "Closes the connection", complexity: "O(1)", categories: "connection"},
	"reset":        {group: "connection", since: "6.2.0", summary: "Resets the connection", complexity: "O(1)", categories: "connection"},
	"client":       {group: "connection", since: "2.4.0", summary: "A container for client connection commands", complexity: "Depends on subcommand.", categories: "connection"},
	"command":      {group: "server", since: "2.8.13", summary: "Returns detailed information about all commands", complexity: "O(N) where N is the total number of commands", categories: "connection"},
	"multi":        {group: "transactions", since: "1.2.0", summary: "Starts a transaction", complexity: "O(1)", categories: "transaction"},
	"exec":         {group: "transactions", since: "1.2.0", summary: "Executes all commands in a transaction", complexity: "Depends on commands in the transaction", categories: "transaction"},
	"discard":      {group: "transactions", since: "2.0.0", summary: "Discards a transaction", complexity: "O(N), when N is the number of queued commands", categories: "transaction"},
	"watch":        {group: "transactions", since: "2.2.0", summary: "Monitors changes to keys to determine the execution of a transaction", complexity: "O(1) for every key", categories: "transaction"},
	"unwatch":      {group: "transactions", since: "2.2.0", summary: "Forgets about watched keys of a transaction", complexity: "O(1)", categories: "transaction"},
	"del":          {group: "generic", since: "1.0.0", summary: "Deletes one or more keys", complexity: "O(N) where N is the number of keys; a filter is freed in the background", categories: "keyspace"},
	"unlink":       {group: "generic", since: "4.0.0", summary: "Deletes one or more keys; their memory is freed in the background", complexity: "O(1) for each key", categories: "keyspace"},
	"exists":       {group: "generic", since: "1.0.0", summary: "Determines whether one or more keys exist", complexity: "O(N) where N is the number of keys", categories: "keyspace"},
	"type":         {group: "generic", since: "1.0.0", summary: "Determines the type of value stored at a key", complexity: "O(1)", categories: "keyspace"},
	"keys":         {group: "generic", since: "1.0.0", summary: "Returns all key names that match a pattern", complexity: "O(N) with N being the number of keys in the database", categories: "keyspace dangerous"},
	"copy":         {group: "generic", since: "6.2.0", summary: "Copies the value of a key to a new key", complexity: "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.", categories: "keyspace"},
	"monitor":      {group: "server", since: "1.0.0", summary: "Listens for all requests received by the server in real-time", complexity: ""},
	"randomkey":    {group: "generic", since: "1.0.0", summary: "Returns a random key name from the database", complexity: "O(1)", categories: "keyspace"},
	"scan":         {group: "generic", since: "2.8.0", summary: "Iterates over the key names in the database", complexity: "O(1) for every call. O(N) for a complete iteration", categories: "keyspace"},
	"rename":       {group: "generic", since: "1.0.0", summary: "Renames a key and overwrites the destination", complexity: "O(1)", categories: "keyspace"},
	"expire":       {group: "generic", since: "1.0.0", summary: "Sets the expiration time of a key in seconds", complexity: "O(1)", categories: "keyspace"},
	"pexpire":      {group: "generic", since: "2.6.0", summary: "Sets the expiration time of a key in milliseconds", complexity: "O(1)", categories: "keyspace"},
	"expireat":     {group: "generic", since: "1.2.0", summary: "Sets the expiration time of a key to a Unix timestamp", complexity: "O(1)", categories: "keyspace"},
	"pexpireat":    {group: "generic", since: "2.6.0", summary: "Sets the expiration time of a key to a Unix milliseconds timestamp", complexity: "O(1)", categories: "keyspace"},
	"ttl":          {group: "generic", since: "1.0.0", summary: "Returns the expiration time in seconds of a key", complexity: "O(1)", categories: "keyspace"},
	"pttl":         {group: "generic", since: "2.6.0", summary: "Returns the expiration time in milliseconds of a key", complexity: "O(1)", categories: "keyspace"},
	"persist":      {group: "generic", since: "2.2.0", summary: "Removes the expiration time of a key", complexity: "O(1)", categories: "keyspace"},
	"dump":         {group: "generic", since: "2.6.0", summary: "Returns the value of a key in Redis's DUMP format (RDB encoding, version and CRC-64); RedisBloom filters as RedisBloom saves them", complexity: "O(N) where N is the size of the value", categories: "keyspace", tips: []string{"nondeterministic_output"}},
	"restore":      {group: "generic", since: "2.6.0", summary: "Creates a key from a DUMP payload (of bloom serve, or of Redis: strings and RedisBloom filters)", complexity: "O(N) where N is the size of the value", categories: "keyspace dangerous", keyFlag: "OW update"},
	"flushall":     {group: "server", since: "1.0.0", summary: "Removes all keys", complexity: "O(1): the keys are freed in the background", categories: "keyspace dangerous"},
	"flushdb":      {group: "server", since: "1.0.0", summary: "Removes all keys of the database", complexity: "O(1): the keys are freed in the background", categories: "keyspace dangerous"},
	"dbsize":       {group: "server", since: "1.0.0", summary: "Returns the number of keys in the database", complexity: "O(1)", categories: "keyspace"},
	"set":          {group: "string", since: "1.0.0", summary: "Sets the string value of a key", complexity: "O(1)", categories: "string"},
	"get":          {group: "string", since: "1.0.0", summary: "Returns the string value of a key", complexity: "O(1)", categories: "string"},
	"getdel":       {group: "string", since: "6.2.0", summary: "Returns the string value of a key after deleting the key", complexity: "O(1)", categories: "string"},
	"strlen":       {group: "string", since: "2.2.0", summary: "Returns the length of a string value", complexity: "O(1)", categories: "string"},
	"mset":         {group: "string", since: "1.0.1", summary: "Atomically creates or modifies the string values of one or more keys", complexity: "O(N) where N is the number of keys to set", categories: "string"},
	"mget":         {group: "string", since: "1.0.0", summary: "Atomically returns the string values of one or more keys", complexity: "O(N) where N is the number of keys to retrieve", categories: "string"},
	"incr":         {group: "string", since: "1.0.0", summary: "Adds one to the integer held by a key, 0 when missing", complexity: "O(1)", categories: "string", keyFlag: "RW access update"},
	"decr":         {group: "string", since: "1.0.0", summary: "Subtracts one from the integer held by a key, 0 when missing", complexity: "O(1)", categories: "string", keyFlag: "RW access update"},
	"incrby":       {group: "string", since: "1.0.0", summary: "Adds an amount to the integer held by a key, 0 when missing", complexity: "O(1)", categories: "string", keyFlag: "RW access update"},
	"decrby":       {group: "string", since: "1.0.0", summary: "Subtracts an amount from the integer held by a key, 0 when missing", complexity: "O(1)", categories: "string", keyFlag: "RW access update"},
	"incrbyfloat":  {group: "string", since: "2.6.0", summary: "Adds a floating-point amount to the number held by a key, 0 when missing", complexity: "O(1)", categories: "string", keyFlag: "RW access update"},
	"append":       {group: "string", since: "2.0.0", summary: "Appends a string to the value of a key, creating it when missing", complexity: "O(N) where N is the length of the new value", categories: "string", keyFlag: "RW insert"},
	"setnx":        {group: "string", since: "1.0.0", summary: "Sets the string value of a key that does not exist", complexity: "O(1)", categories: "string", keyFlag: "OW insert"},
	"setex":        {group: "string", since: "2.0.0", summary: "Sets the string value of a key with a time to live in seconds", complexity: "O(1)", categories: "string", keyFlag: "OW update"},
	"psetex":       {group: "string", since: "2.6.0", summary: "Sets the string value of a key with a time to live in milliseconds", complexity: "O(1)", categories: "string", keyFlag: "OW update"},
	"getset":       {group: "string", since: "1.0.0", summary: "Sets the string value of a key and returns the value it held (SET with GET does the same)", complexity: "O(1)", categories: "string", keyFlag: "RW access update"},
	"getex":        {group: "string", since: "6.2.0", summary: "Returns the string value of a key and sets or removes its time to live", complexity: "O(1)", categories: "string", keyFlag: "RW access update", keyNotes: "RW and UPDATE because it changes the TTL"},
	"msetnx":       {group: "string", since: "1.0.1", summary: "Sets the string values of several keys when none of them exists", complexity: "O(N) where N is the number of keys to set", categories: "string", keyFlag: "OW insert", tips: []string{"request_policy:multi_shard", "response_policy:agg_min"}},
	"setrange":     {group: "string", since: "2.2.0", summary: "Overwrites part of the string value of a key from an offset, padding with zero bytes", complexity: "O(N) where N is the length of the new value", categories: "string", keyFlag: "RW update"},
	"getrange":     {group: "string", since: "2.4.0", summary: "Returns a substring of the string value of a key", complexity: "O(N) where N is the length of the returned string", categories: "string"},
	"substr":       {group: "string", since: "1.0.0", summary: "Returns a substring of the string value of a key (an old name of GETRANGE)", complexity: "O(N) where N is the length of the returned string", categories: "string"},
	"memory":       {group: "server", since: "4.0.0", summary: "A container for memory diagnostics commands", complexity: "Depends on subcommand."},
	"object":       {group: "generic", since: "2.2.3", summary: "A container for object introspection commands", complexity: "Depends on subcommand."},
	"debug":        {group: "server", since: "1.0.0", summary: "A container for debugging commands", complexity: "Depends on subcommand."},
	"save":         {group: "server", since: "1.0.0", summary: "Synchronously saves a snapshot", complexity: "O(N) where N is the total number of keys in all databases"},
	"bgsave":       {group: "server", since: "1.0.0", summary: "Asynchronously saves a snapshot", complexity: "O(1) in the foreground; the snapshot is written in the background"},
	"bgrewriteaof": {group: "server", since: "1.0.0", summary: "Asynchronously rewrites the append-only log (a snapshot and a new log)", complexity: "O(1) in the foreground"},
	"lastsave":     {group: "server", since: "1.0.0", summary: "Returns the Unix timestamp of the last successful save", complexity: "O(1)", categories: "admin dangerous"},
	"shutdown":     {group: "server", since: "1.0.0", summary: "Saves a snapshot and shuts down the server", complexity: "O(N) when saving, where N is the total number of keys"},
	"config":       {group: "server", since: "2.0.0", summary: "A container for server configuration commands", complexity: "Depends on subcommand."},
	"slowlog":      {group: "server", since: "2.2.12", summary: "A container for slow log commands", complexity: "Depends on subcommand."},
	"acl":          {group: "server", since: "6.0.0", summary: "A container for Access List Control commands", complexity: "Depends on subcommand."},
	"info":         {group: "server", since: "1.0.0", summary: "Returns information and statistics about the server", complexity: "O(1)", categories: "dangerous"},
	"replicaof":    {group: "server", since: "5.0.0", summary: "Makes the server a replica of another server, or promotes it to master", complexity: "O(1)"},
	"slaveof":      {group: "server", since: "1.0.0", summary: "Makes the server a replica of another server, or promotes it to master (an old name of REPLICAOF)", complexity: "O(1)"},
	"role":         {group: "server", since: "2.8.12", summary: "Returns the replication role", complexity: "O(1)", categories: "admin dangerous"},
	"wait":         {group: "generic", since: "3.0.0", summary: "Blocks until the writes this connection sent are acknowledged by a number of replicas, or a timeout", complexity: "O(1)", categories: "connection"},
	"failover":     {group: "server", since: "6.2.0", summary: "Starts a coordinated failover from a server to one of its replicas", complexity: "O(1)"},
	"waitaof":      {group: "generic", since: "7.2.0", summary: "Blocks until the writes this connection sent are fsynced in the append-only log of this server and of a number of replicas, or a timeout", complexity: "O(1)", categories: "connection"},
	"replconf":     {group: "server", since: "3.0.0", summary: "An internal command for configuring the replication stream", complexity: "O(1)"},
	"sync":         {group: "server", since: "1.0.0", summary: "An internal command used in replication: a full synchronisation", complexity: "O(N) where N is the size of the snapshot"},
	"psync":        {group: "server", since: "2.8.0", summary: "An internal command used in replication: a partial resynchronisation, or a full one", complexity: "O(N) where N is the size of the snapshot or of the backlog sent"},
	"latency":      {group: "server", since: "2.8.13", summary: "A container for latency diagnostics commands", complexity: "Depends on subcommand."},
	"subscribe":    {group: "pubsub", since: "2.0.0", summary: "Listens for messages published to channels", complexity: "O(N) where N is the number of channels to subscribe to"},
	"unsubscribe":  {group: "pubsub", since: "2.0.0", summary: "Stops listening to messages posted to channels", complexity: "O(N) where N is the number of channels to unsubscribe"},
	"psubscribe":   {group: "pubsub", since: "2.0.0", summary: "Listens for messages published to channels that match one or more patterns", complexity: "O(N) where N is the number of patterns to subscribe to"},
	"punsubscribe": {group: "pubsub", since: "2.0.0", summary: "Stops listening to messages published to channels that match one or more patterns", complexity: "O(N) where N is the number of patterns to unsubscribe"},
	"publish":      {group: "pubsub", since: "2.0.0", summary: "Posts a message to a channel", complexity: "O(N+M) where N is the number of clients subscribed to the channel and M the number of subscribed patterns"},
	"pubsub":       {group: "pubsub", since: "2.8.0", summary: "A container for pub/sub introspection commands", complexity: "Depends on subcommand."},
	"module":       {group: "server", since: "4.0.0", summary: "A container for module commands (RedisBloom's, module bf, are built in)", complexity: "Depends on subcommand."},
	"script":       {group: "scripting", since: "2.6.0", summary: "A container for Lua scripts management commands (there are no scripts: SCRIPT KILL answers NOTBUSY)", complexity: "Depends on subcommand.", categories: "scripting"},
}
