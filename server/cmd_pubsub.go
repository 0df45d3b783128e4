package server

// SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, PUBSUB, as
// Redis 7 answers them (pubsub.go delivers the messages).

import (
	"github.com/bloomkit/bloomkit/server/internal/glob"
	"sort"
	"strings"
)

// subscriptionReply is one (p)(un)subscribe confirmation: a push of the
// kind, the channel or pattern (nil: none) and c's subscription count.
func subscriptionReply(c *Session, r *Reply, kind string, name []byte) {
	r.Push(3)
	r.BulkString(kind)
	if name == nil {
		r.Null()
	} else {
		r.Bulk(name)
	}
	r.Int(c.subCount())
}

func cmdSubscribe(s *Server, c *Session, args [][]byte, r *Reply) {
	pat := lowerName(args[0]) == "psubscribe"
	kind := "subscribe"
	if pat {
		kind = "psubscribe"
	}
	for _, a := range args[1:] {
		s.subscribe(c, string(a), pat)
		subscriptionReply(c, r, kind, a)
	}
}

func cmdUnsubscribe(s *Server, c *Session, args [][]byte, r *Reply) {
	pat := lowerName(args[0]) == "punsubscribe"
	kind := "unsubscribe"
	if pat {
		kind = "punsubscribe"
	}
	if len(args) > 1 {
		for _, a := range args[1:] {
			s.unsubscribe(c, string(a), pat)
			subscriptionReply(c, r, kind, a)
		}
		return
	}
	// No names: every channel (pattern), one reply each, or one reply
	// with a null name when there are none.
	var names []string
	if c.sub != nil {
		if pat {
			names = append(names, c.sub.patterns...)
		} else {
			names = sortedChannels(c.sub)
		}
	}
	if len(names) == 0 {
		subscriptionReply(c, r, kind, nil)
		return
	}
	for _, n := range names {
		s.unsubscribe(c, n, pat)
		subscriptionReply(c, r, kind, []byte(n))
	}
}

func cmdPublish(s *Server, c *Session, args [][]byte, r *Reply) {
	r.Int(s.publish(args[1], args[2]))
	// As Redis: a master passes PUBLISH on to its replicas, whose own
	// subscribers receive it too; it is not logged (it changes no data).
	if s.repl.backlog.Load() != nil && !s.isReplica() {
		unlock := s.lockDB(c) // the stream is fed under the keyspace lock
		s.feed([][][]byte{args}, false)
		unlock()
	}
}

// PUBSUB CHANNELS [pattern] | NUMSUB [channel ...] | NUMPAT | HELP
func cmdPubsub(s *Server, c *Session, args [][]byte, r *Reply) {
	sub := strings.ToLower(string(args[1]))
	h := &s.pubsub
	switch {
	case sub == "help" && len(args) == 2:
		helpReply(r, "PUBSUB",
			"CHANNELS [<pattern>]",
			"    Return the currently active channels matching a <pattern> (default: '*').",
			"NUMPAT",
			"    Return number of subscriptions to patterns.",
			"NUMSUB [<channel> ...]",
			"    Return the number of subscribers for the specified channels, excluding",
			"    pattern subscriptions(default: no channels).",
		)
	case sub == "channels" && len(args) <= 3:
		h.mu.RLock()
		var out []string
		for ch := range h.channels {
			if len(args) == 2 || glob.Match(string(args[2]), ch) {
				out = append(out, ch)
			}
		}
		h.mu.RUnlock()
		sort.Strings(out)
		r.Array(len(out))
		for _, ch := range out {
			r.BulkString(ch)
		}
	case sub == "numsub":
		h.mu.RLock()
		r.Array(2 * (len(args) - 2))
		for _, a := range args[2:] {
			r.Bulk(a)
			r.Int(int64(len(h.channels[string(a)])))
		}
		h.mu.RUnlock()
	case sub == "numpat" && len(args) == 2:
		h.mu.RLock()
		n := len(h.patterns)
		h.mu.RUnlock()
		r.Int(int64(n))
	default:
		r.Error("ERR unknown subcommand or wrong number of arguments for '" + trimArg(args[1]) + "'. Try PUBSUB HELP.")
	}
}

// subscribedRefusal is Redis's error for a command a RESP2 connection in
// subscribed mode may not run ("" when it may).
func subscribedRefusal(c *Session, cmd *command, args [][]byte) string {
	if cmd.inSubscribed || c.resp3 || !c.subscribed() {
		return ""
	}
	name := cmd.name
	if cmd.hasSubcommands && len(args) > 1 {
		name += "|" + strings.ToLower(trimArg(args[1]))
	}
	return "ERR Can't execute '" + name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
}

// cmdScript answers the SCRIPT subcommands a client of a server without
// scripting may send: Sentinel sends SCRIPT KILL to an instance it sees
// BUSY, and no script ever runs here.
func cmdScript(s *Server, c *Session, args [][]byte, r *Reply) {
	switch strings.ToLower(string(args[1])) {
	case "kill":
		if len(args) != 2 {
			r.Error(wrongArity("script|kill"))
			return
		}
		r.Error("NOTBUSY No scripts in execution right now.")
	case "help":
		helpReply(r, "SCRIPT",
			"KILL",
			"    Kill the currently executing Lua script.",
		)
	default:
		r.Error("ERR unknown subcommand '" + trimArg(args[1]) + "'. Try SCRIPT HELP.")
	}
}
