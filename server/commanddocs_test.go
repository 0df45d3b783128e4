package server

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// Every command has a COMMAND DOCS entry with a summary (but CF.COMPACT,
// which RedisBloom registers without one), a known group and at least one
// ACL category; every filter command is in @bloom or @cuckoo.
func TestCommandDocsComplete(t *testing.T) {
	groups := map[string]bool{"connection": true, "generic": true, "server": true, "string": true, "transactions": true, "module": true, "pubsub": true, "sentinel": true, "scripting": true}
	for _, c := range commandList {
		d, ok := commandDocs[c.name]
		if !ok {
			t.Errorf("%s: no entry in commandDocs", c.name)
			continue
		}
		if d.summary == "" && c.name != "cf.compact" {
			t.Errorf("%s: no summary", c.name)
		}
		if !groups[d.group] {
			t.Errorf("%s: group %q is none of Redis's", c.name, d.group)
		}
		cats := c.categories()
		if len(cats) == 0 {
			t.Errorf("%s: no ACL category", c.name)
		}
		if isFilterCommand(c.name) {
			// Each RedisBloom type's commands end with its category.
			want := map[string]string{"bf": "bloom", "cf": "cuckoo", "cms": "cms", "topk": "topk", "tdigest": "tdigest"}[strings.SplitN(c.name, ".", 2)[0]]
			if cats[len(cats)-1] != want {
				t.Errorf("%s: categories %v, want @%s", c.name, cats, want)
			}
		}
	}
	for name := range commandDocs {
		if _, ok := commandTable[name]; !ok {
			t.Errorf("commandDocs has %s, which is no command", name)
		}
	}
}

// docsArg is a COMMAND DOCS argument reduced to what RedisBloom's own
// docs tests compare.
type docsArg struct {
	name, typ, token string
	sub              []docsArg
}

func toDocsArgs(t *testing.T, v any) []docsArg {
	var out []docsArg
	list, _ := v.([]any)
	for _, a := range list {
		m, ok := a.(map[any]any)
		if !ok {
			t.Fatalf("argument %v is not a map", a)
		}
		d := docsArg{name: fmt.Sprint(m["name"]), typ: fmt.Sprint(m["type"])}
		if tok, ok := m["token"]; ok {
			d.token = fmt.Sprint(tok)
		}
		if sub, ok := m["arguments"]; ok {
			d.sub = toDocsArgs(t, sub)
		}
		out = append(out, d)
	}
	return out
}

// COMMAND DOCS and COMMAND INFO of RedisBloom's commands answer as
// RedisBloom 8 registers them (the assertions of its test_docs_help.py
// and of a module command's INFO entry), read through go-redis in RESP3.
func TestCommandDocsRedisBloom(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	c := newClient(t, s.Addr(), 3)
	ctx := context.Background()
	k := docsArg{name: "key", typ: "key"}
	item := docsArg{name: "item", typ: "string"}
	block := func(name, typ string) docsArg {
		return docsArg{name: name, typ: "block", token: upper(name), sub: []docsArg{{name: name, typ: typ}}}
	}
	token := func(name string) docsArg { return docsArg{name: name, typ: "pure-token", token: upper(name)} }
	for _, tc := range []struct {
		cmd, summary, complexity, since string
		args                            []docsArg
	}{
		{"cf.reserve", "Creates a new Cuckoo Filter", "O(1)", "1.0.0",
			[]docsArg{k, {name: "capacity", typ: "integer"}, block("bucketsize", "integer"), block("maxiterations", "integer"), block("expansion", "integer")}},
		{"bf.add", "Adds an item to a Bloom Filter", "O(k), where k is the number of hash functions used by the last sub-filter", "1.0.0", []docsArg{k, item}},
		{"bf.exists", "Checks whether an item exists in a Bloom Filter", "O(k), where k is the number of hash functions used by the last sub-filter", "1.0.0", []docsArg{k, item}},
		{"bf.card", "Returns the cardinality of a Bloom filter", "O(1)", "2.4.4", []docsArg{k}},
		{"bf.insert", "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist", "O(k * n), where k is the number of hash functions and n is the number of items", "1.0.0",
			[]docsArg{k, block("capacity", "integer"), block("error", "double"), block("expansion", "integer"), token("nocreate"), token("nonscaling"), token("items"), item}},
		{"bf.loadchunk", "Restores a filter previously saved using SCANDUMP", "O(n), where n is the capacity", "1.0.0", []docsArg{k, {name: "iterator", typ: "integer"}, {name: "data", typ: "string"}}},
		{"bf.madd", "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist", "O(k * n), where k is the number of hash functions and n is the number of items", "1.0.0", []docsArg{k, item}},
		{"bf.mexists", "Checks whether one or more items exist in a Bloom Filter", "O(k * n), where k is the number of hash functions and n is the number of items", "1.0.0", []docsArg{k, item}},
		{"bf.reserve", "Creates a new Bloom Filter", "O(1)", "1.0.0", []docsArg{k, {name: "error_rate", typ: "double"}, {name: "capacity", typ: "integer"}, block("expansion", "integer"), token("nonscaling")}},
		{"cf.add", "Adds an item to a Cuckoo Filter", "O(k + i), where k is the number of sub-filters and i is maxIterations", "1.0.0", []docsArg{k, item}},
		{"cf.count", "Return the number of times an item might be in a Cuckoo Filter", "O(k), where k is the number of sub-filters", "1.0.0", []docsArg{k, item}},
		{"cf.info", "Returns information about a Cuckoo Filter", "O(1)", "1.0.0", []docsArg{k}},
	} {
		res, err := c.Do(ctx, "COMMAND", "DOCS", tc.cmd).Result()
		if err != nil {
			t.Fatalf("COMMAND DOCS %s: %v", tc.cmd, err)
		}
		all, _ := res.(map[any]any)
		doc, ok := all[tc.cmd].(map[any]any)
		if !ok {
			t.Fatalf("COMMAND DOCS %s: %#v", tc.cmd, res)
		}
		for field, want := range map[string]string{"summary": tc.summary, "complexity": tc.complexity, "since": tc.since, "group": "module", "module": "bf"} {
			if got := fmt.Sprint(doc[field]); got != want {
				t.Errorf("COMMAND DOCS %s %s = %q, want %q", tc.cmd, field, got, want)
			}
		}
		if got := toDocsArgs(t, doc["arguments"]); !reflect.DeepEqual(got, tc.args) {
			t.Errorf("COMMAND DOCS %s arguments\n got %+v\nwant %+v", tc.cmd, got, tc.args)
		}
		first, _ := doc["arguments"].([]any)[0].(map[any]any)
		if first["key_spec_index"] != int64(0) {
			t.Errorf("COMMAND DOCS %s: the key argument's key_spec_index is %v", tc.cmd, first["key_spec_index"])
		}
	}
	// BF.INFO's optional word is a oneof of five tokens.
	res, _ := c.Do(ctx, "COMMAND", "DOCS", "bf.info").Result()
	args := toDocsArgs(t, res.(map[any]any)["bf.info"].(map[any]any)["arguments"])
	if len(args) != 2 || args[1].name != "single_value" || args[1].typ != "oneof" || len(args[1].sub) != 5 || args[1].sub[4].token != "EXPANSION" {
		t.Errorf("COMMAND DOCS bf.info arguments: %+v", args)
	}

	// COMMAND INFO: RedisBloom's flags, its ACL categories, its key spec.
	for cmd, want := range map[string]string{
		"bf.add":     "[bf.add 3 [write denyoom module] 1 1 1 [@write @bloom] [] [map[begin_search:map[spec:map[index:1] type:index] find_keys:map[spec:map[keystep:1 lastkey:0 limit:0] type:range] flags:[RW]]] []]",
		"bf.reserve": "[bf.reserve -4 [write denyoom module] 1 1 1 [@write @fast @bloom] [] [map[begin_search:map[spec:map[index:1] type:index] find_keys:map[spec:map[keystep:1 lastkey:0 limit:0] type:range] flags:[RW]]] []]",
		"cf.exists":  "[cf.exists 3 [readonly module fast] 1 1 1 [@read @cuckoo] [] [map[begin_search:map[spec:map[index:1] type:index] find_keys:map[spec:map[keystep:1 lastkey:0 limit:0] type:range] flags:[RO]]] []]",
		"bf.info":    "[bf.info -2 [readonly module fast] 1 1 1 [@read @fast @bloom] [dont_cache] [map[begin_search:map[spec:map[index:1] type:index] find_keys:map[spec:map[keystep:1 lastkey:0 limit:0] type:range] flags:[RO]]] []]",
		"get":        "[get 2 [readonly fast] 1 1 1 [@read @string @fast] [] [map[begin_search:map[spec:map[index:1] type:index] find_keys:map[spec:map[keystep:1 lastkey:0 limit:0] type:range] flags:[RO access]]] []]",
	} {
		res, err := c.Do(ctx, "COMMAND", "INFO", cmd).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(res.([]any)[0]); got != want {
			t.Errorf("COMMAND INFO %s\n got %s\nwant %s", cmd, got, want)
		}
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
