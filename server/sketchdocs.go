package server

import "maps"

// COMMAND DOCS entries of RedisBloom 8's Count-Min Sketch and Top-K
// commands (its src/cmd_info/cms_info.c and topk_info.c), joined to
// commandDocs.
var sketchDocs = map[string]cmdDoc{
	"cms.incrby": {group: "module", categories: "write cms", summary: "Increases the count of one or more items by increment", complexity: "O(n) where n is the number of items", since: "2.0.0", arity: -4, keyFlag: "RW",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "items", typ: "block", keySpec: -1, multiple: true, sub: []cmdArg{{name: "item", typ: "string", keySpec: -1}, {name: "increment", typ: "integer", keySpec: -1}}}}},
	"cms.info": {group: "module", categories: "read fast cms", summary: "Returns information about a sketch", complexity: "O(1)", since: "2.0.0", arity: 2, keyFlag: "RO", tips: []string{"dont_cache"},
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}}},
	"cms.initbydim": {group: "module", categories: "write fast cms", summary: "Initializes a Count-Min Sketch to dimensions specified by user", complexity: "O(1)", since: "2.0.0", arity: 4, keyFlag: "RW",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "width", typ: "integer", keySpec: -1}, {name: "depth", typ: "integer", keySpec: -1}}},
	"cms.initbyprob": {group: "module", categories: "write fast cms", summary: "Initializes a Count-Min Sketch to accommodate requested tolerances.", complexity: "O(1)", since: "2.0.0", arity: 4, keyFlag: "RW",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "error", typ: "double", keySpec: -1}, {name: "probability", typ: "double", keySpec: -1}}},
	"cms.merge": {group: "module", categories: "write cms", summary: "Merges several sketches into one sketch", complexity: "O(n) where n is the number of sketches", since: "2.0.0", arity: -4, keyFlag: "RW",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "numKeys", typ: "integer", keySpec: -1}, {name: "source", typ: "key", keySpec: 0, multiple: true},
			{name: "weights", typ: "block", keySpec: -1, optional: true, sub: []cmdArg{{name: "weights", typ: "pure-token", keySpec: -1, token: "WEIGHTS"}, {name: "weight", typ: "double", keySpec: -1, multiple: true}}}}},
	"cms.query": {group: "module", categories: "read cms", summary: "Returns the count for one or more items in a sketch", complexity: "O(n) where n is the number of items", since: "2.0.0", arity: -3, keyFlag: "RO",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "item", typ: "string", keySpec: -1, multiple: true}}},

	"topk.add": {group: "module", categories: "write topk", summary: "Adds an item to a Top-k sketch. Multiple items can be added at the same time.", complexity: "O(n * k) where n is the number of items and k is the depth", since: "2.0.0", arity: -3, keyFlag: "RW",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "item", typ: "string", keySpec: -1, multiple: true}}},
	"topk.count": {group: "module", categories: "read topk", summary: "Return the count for one or more items are in a sketch", complexity: "O(n) where n is the number of items", since: "2.0.0", arity: -3, keyFlag: "RO",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "item", typ: "string", keySpec: -1, multiple: true}}},
	"topk.incrby": {group: "module", categories: "write topk", summary: "Increases the count of one or more items by increment", complexity: "O(n * k * incr) where n is the number of items, k is the depth and incr is the increment", since: "2.0.0", arity: -4, keyFlag: "RW",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "item_increment", typ: "block", keySpec: -1, multiple: true, sub: []cmdArg{{name: "item", typ: "string", keySpec: -1}, {name: "increment", typ: "integer", keySpec: -1}}}}},
	"topk.info": {group: "module", categories: "read fast topk", summary: "Returns information about a sketch", complexity: "O(1)", since: "2.0.0", arity: 2, keyFlag: "RO",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}}},
	"topk.list": {group: "module", categories: "read topk", summary: "Return the full list of items in Top-K sketch.", complexity: "O(k*log(k)) where k is the value of top-k", since: "2.0.0", arity: -2, keyFlag: "RO",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "withcount", typ: "pure-token", keySpec: -1, token: "WITHCOUNT", optional: true}}},
	"topk.query": {group: "module", categories: "read topk", summary: "Checks whether one or more items are in a sketch", complexity: "O(n) where n is the number of items", since: "2.0.0", arity: -3, keyFlag: "RO",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "item", typ: "string", keySpec: -1, multiple: true}}},
	"topk.reserve": {group: "module", categories: "write fast topk", summary: "Initializes a Top-K sketch with specified parameters", complexity: "O(1)", since: "2.0.0", arity: -3, keyFlag: "RW",
		args: []cmdArg{{name: "key", typ: "key", keySpec: 0}, {name: "topk", typ: "integer", keySpec: -1},
			{name: "params", typ: "block", keySpec: -1, optional: true, sub: []cmdArg{{name: "width", typ: "integer", keySpec: -1}, {name: "depth", typ: "integer", keySpec: -1}, {name: "decay", typ: "double", keySpec: -1}}}}},
}

func init() { maps.Copy(commandDocs, sketchDocs) }
