package server

// ACL and its subcommands, as Redis 7 answers them.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/acl"
	"github.com/bloomkit/bloomkit/server/internal/resp"
)

const errNoACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."

func cmdACL(s *Server, c *Session, args [][]byte, r *Reply) {
	sub := strings.ToLower(string(args[1]))
	n := len(args)
	switch {
	case sub == "setuser" && n >= 3:
		// Nothing of the request is logged: it holds passwords.
		name := string(args[2])
		if !acl.ValidName(name) {
			r.Error("ERR Usernames can't contain spaces or null characters")
			return
		}
		rules := make([]string, n-3)
		for i, a := range args[3:] {
			rules[i] = string(a)
		}
		if err := s.users.SetUser(name, rules); err != nil {
			r.Error("ERR " + err.Error())
			return
		}
		s.aclChanged.Store(true)
		s.closeRevokedSubscribers(c)
		r.OK()
	case sub == "deluser" && n >= 3:
		names := make([]string, n-2)
		for i, a := range args[2:] {
			names[i] = string(a)
		}
		gone, err := s.users.Delete(names...)
		if err != nil {
			r.Error("ERR " + err.Error())
			return
		}
		s.aclChanged.Store(true)
		s.closeUserSessions(c, gone)
		r.Int(int64(len(gone)))
	case sub == "getuser" && n == 3:
		u := s.users.Get(string(args[2]))
		if u == nil {
			r.Null()
			return
		}
		rules := u.Rules()
		r.Map(6)
		r.BulkString("flags")
		flags := rules.Flags()
		r.Set(len(flags))
		for _, f := range flags {
			r.BulkString(f)
		}
		r.BulkString("passwords")
		pw := rules.Passwords()
		r.Array(len(pw))
		for _, p := range pw {
			r.BulkString(p)
		}
		r.BulkString("commands")
		r.BulkString(rules.CommandRules())
		r.BulkString("keys")
		r.BulkString(rules.KeyRules())
		r.BulkString("channels")
		r.BulkString(rules.ChannelRules())
		r.BulkString("selectors")
		r.Array(0)
	case (sub == "list" || sub == "users") && n == 2:
		var lines []string
		if sub == "list" {
			lines = s.users.List()
		} else {
			lines = s.users.Names()
		}
		r.Array(len(lines))
		for _, l := range lines {
			r.BulkString(l)
		}
	case sub == "whoami" && n == 2:
		if u := c.user.Load(); u != nil {
			r.BulkString(u.Name())
		} else {
			r.Null()
		}
	case s.cfg.ACLFile == "" && (sub == "load" || sub == "save"):
		r.Error(errNoACLFile)
	case sub == "load" && n == 2:
		if err := s.loadACLFile(c); err != nil {
			r.Error("ERR " + err.Error())
			return
		}
		s.log.Info("ACL LOAD: users reloaded from the aclfile", "file", s.cfg.ACLFile)
		r.OK()
	case sub == "save" && n == 2:
		if err := s.saveACLFile(); err != nil {
			s.log.Error("ACL SAVE failed", "file", s.cfg.ACLFile, "err", err)
			r.Error("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
			return
		}
		r.OK()
	case sub == "cat" && n == 2:
		cats := catalog().Categories()
		r.Array(len(cats))
		for _, cat := range cats {
			r.BulkString(cat)
		}
	case sub == "cat" && n == 3:
		names, ok := catalog().InCategory(string(args[2]))
		if !ok {
			r.Error("ERR Unknown category '" + trimArg(args[2]) + "'")
			return
		}
		r.Array(len(names))
		for _, name := range names {
			r.BulkString(name)
		}
	case sub == "genpass" && (n == 2 || n == 3):
		bits := int64(256)
		if n == 3 {
			v, ok := resp.ParseInt(args[2])
			if !ok {
				r.Error("ERR value is not an integer or out of range")
				return
			}
			bits = v
		}
		if bits <= 0 || bits > 4096 {
			r.Error("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
			return
		}
		b := make([]byte, 4096/8)
		rand.Read(b)
		r.BulkString(hex.EncodeToString(b)[:(bits+3)/4])
	case sub == "log" && (n == 2 || n == 3):
		count := int64(10)
		if n == 3 {
			if strings.EqualFold(string(args[2]), "reset") {
				s.acllog.Reset()
				r.OK()
				return
			}
			v, ok := resp.ParseInt(args[2])
			if !ok {
				r.Error("ERR value is not an integer or out of range")
				return
			}
			count = max(v, 0)
		}
		entries := s.acllog.Entries(int(min(count, 1<<20)))
		now := time.Now().UnixMilli()
		r.Array(len(entries))
		for _, e := range entries {
			r.Map(10)
			r.BulkString("count")
			r.Int(e.Count)
			r.BulkString("reason")
			r.BulkString(e.Reason.String())
			r.BulkString("context")
			r.BulkString(e.Context)
			r.BulkString("object")
			r.BulkString(e.Object)
			r.BulkString("username")
			r.BulkString(e.Username)
			r.BulkString("age-seconds")
			r.Double(float64(now-e.Updated) / 1000)
			r.BulkString("client-info")
			r.BulkString(e.ClientInfo)
			r.BulkString("entry-id")
			r.Int(e.ID)
			r.BulkString("timestamp-created")
			r.Int(e.Created)
			r.BulkString("timestamp-last-updated")
			r.Int(e.Updated)
		}
	case sub == "dryrun" && n >= 4:
		u := s.users.Get(string(args[2]))
		if u == nil {
			r.Error("ERR User '" + trimArg(args[2]) + "' not found")
			return
		}
		cargs := args[3:]
		cmd, ok := lookupCommand(cargs[0])
		if !ok {
			r.Error("ERR Command '" + trimArg(cargs[0]) + "' not found")
			return
		}
		if !cmd.checkOwn && !cmd.arityOK(len(cargs)) {
			r.Error("ERR wrong number of arguments for '" + aclCommand(cmd, cargs).Name + "' command")
			return
		}
		if cmd.noauth {
			r.OK()
			return
		}
		if d := aclCheck(u.Rules(), cmd, cargs); d != nil {
			r.BulkString(d.dryRunMessage(u.Name(), cargs))
			return
		}
		r.OK()
	case sub == "help" && n == 2:
		helpReply(r, "ACL",
			"CAT [<category>]",
			"    List all commands that belong to <category>, or all command categories",
			"    when no category is specified.",
			"DELUSER <username> [<username> ...]",
			"    Delete a list of users.",
			"DRYRUN <username> <command> [<arg> ...]",
			"    Returns whether the user can execute the given command without executing the command.",
			"GETUSER <username>",
			"    Get the user's details.",
			"GENPASS [<bits>]",
			"    Generate a secure 256-bit user password. The optional `bits` argument can",
			"    be used to specify a different size.",
			"LIST",
			"    Show users details in config file format.",
			"LOAD",
			"    Reload users from the ACL file.",
			"LOG [<count> | RESET]",
			"    Show the ACL log entries.",
			"SAVE",
			"    Save the current config to the ACL file.",
			"SETUSER <username> <attribute> [<attribute> ...]",
			"    Create or modify a user with the specified attributes.",
			"USERS",
			"    List all the registered usernames.",
			"WHOAMI",
			"    Return the current connection username.",
		)
	default:
		r.Error("ERR unknown subcommand or wrong number of arguments for '" + trimArg(args[1]) + "'. Try ACL HELP.")
	}
}

// pubsubDefault checks an acl-pubsub-default value and returns it in
// lower case (Redis's enums ignore case).
func pubsubDefault(v string) (string, error) {
	switch v = strings.ToLower(v); v {
	case "allchannels", "resetchannels":
		return v, nil
	}
	return "", errors.New("argument(s) must be one of the following: allchannels, resetchannels")
}

func setPubsubDefault(s *Server, v string) error {
	v, err := pubsubDefault(v)
	if err != nil {
		return errConfigValue(err.Error())
	}
	s.users.SetPubsubDefault(v == "allchannels")
	return nil
}

func getPubsubDefault(s *Server) string {
	if s.users.PubsubDefault() {
		return "allchannels"
	}
	return "resetchannels"
}

// aclLogMaxLen is acllog-max-len's setter.
func setACLLogMaxLen(s *Server, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > 1<<31-1 {
		return errors.New("argument couldn't be parsed into an integer")
	}
	s.set.aclLogMaxLen.Store(n)
	return nil
}
