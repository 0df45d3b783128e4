package server

// MODULE, INFO modules and HELLO's modules: RedisBloom's commands are
// built in, and the server says so the way Redis with the module loaded
// does, because clients and tools check for the module named "bf" before
// they send BF.* or CF.*.

import "strings"

// RedisBloomVersion is the module version MODULE LIST, INFO modules and
// HELLO report for the built-in "bf" module: RedisBloom 8.0.0, the line
// whose replies the BF.* and CF.* commands follow (runtime module
// configs and their range checks).
const RedisBloomVersion = 80000

// errNoModules refuses MODULE LOAD, LOADEX and UNLOAD.
const errNoModules = "ERR bloom serve loads no modules: RedisBloom's Bloom and cuckoo filter commands (module bf) are built in"

// moduleReply writes the built-in module as MODULE LIST and HELLO list
// one: a map of name, ver, path and args.
func moduleReply(r *Reply) {
	r.Map(4)
	r.BulkString("name")
	r.BulkString("bf")
	r.BulkString("ver")
	r.Int(RedisBloomVersion)
	r.BulkString("path")
	r.BulkString("(built in)")
	r.BulkString("args")
	r.Array(0)
}

// MODULE LIST | LOAD | LOADEX | UNLOAD | HELP.
func cmdModule(s *Server, c *Session, args [][]byte, r *Reply) {
	switch sub := strings.ToLower(string(args[1])); sub {
	case "list":
		if len(args) != 2 {
			r.Error(wrongArity("module|list"))
			return
		}
		r.Array(1)
		moduleReply(r)
	case "load", "loadex", "unload":
		if len(args) < 3 {
			r.Error(wrongArity("module|" + sub))
			return
		}
		r.Error(errNoModules)
	case "help":
		helpReply(r, "MODULE",
			"LIST",
			"    Return a list of loaded modules (here: bf, RedisBloom's commands, built in).",
			"LOAD <path> [<arg> ...]",
			"    Refused: bloom serve loads no modules.",
			"LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
			"    Refused: bloom serve loads no modules.",
			"UNLOAD <name>",
			"    Refused: the built-in module cannot be unloaded.",
		)
	default:
		r.Error("ERR unknown subcommand '" + trimArg(args[1]) + "'. Try MODULE HELP.")
	}
}

// modulesInfo is INFO's Modules section.
func modulesInfo() []string {
	return []string{"module:name=bf,ver=" + itoa(RedisBloomVersion) + ",api=1,filters=0,usedby=[],using=[],options=[]"}
}
