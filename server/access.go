package server

// Access control: the command table as the ACL model's catalog, the
// per-command check of the dispatcher, authentication, the ACL log, and
// the users' persistence (aclfile, or user lines in the config file).
// The model itself (rules, users, the log) is internal/acl.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/acl"
)

// UserRule is one user directive of a config file: "user <name> <rules>".
type UserRule struct {
	Name  string
	Rules []string
	// Where is the directive's "file:line", for messages.
	Where string
}

// subcommandCategories are the ACL categories Redis 7 gives the
// subcommands of its container commands (from their flags and
// acl_categories). Those of a container in the command table become
// entries of the catalog, so that "+config|get" and "-@dangerous" reach
// them; the others wait for their container.
var subcommandCategories = map[string]string{
	"client|caching": "slow connection", "client|getname": "slow connection", "client|getredir": "slow connection",
	"client|help": "slow connection", "client|id": "slow connection", "client|info": "slow connection",
	"client|kill": "admin slow dangerous connection", "client|list": "admin slow dangerous connection",
	"client|no-evict": "admin slow dangerous connection", "client|no-touch": "slow connection",
	"client|pause": "admin slow dangerous connection", "client|reply": "slow connection",
	"client|setinfo": "slow connection", "client|setname": "slow connection", "client|tracking": "slow connection",
	"client|trackinginfo": "slow connection", "client|unblock": "admin slow dangerous connection",
	"client|unpause": "admin slow dangerous connection",
	"config|get":     "admin slow dangerous", "config|help": "slow", "config|resetstat": "admin slow dangerous",
	"config|rewrite": "admin slow dangerous", "config|set": "admin slow dangerous",
	"command|count": "slow connection", "command|docs": "slow connection", "command|getkeys": "slow connection",
	"command|getkeysandflags": "slow connection", "command|help": "slow connection", "command|info": "slow connection",
	"command|list":  "slow connection",
	"memory|doctor": "slow", "memory|help": "slow", "memory|malloc-stats": "slow", "memory|purge": "slow",
	"memory|stats": "slow", "memory|usage": "read slow",
	"slowlog|get": "admin slow dangerous", "slowlog|help": "slow", "slowlog|len": "admin slow dangerous",
	"slowlog|reset": "admin slow dangerous",
	"acl|cat":       "slow", "acl|deluser": "admin slow dangerous", "acl|dryrun": "admin slow dangerous",
	"acl|genpass": "slow", "acl|getuser": "admin slow dangerous", "acl|help": "slow", "acl|list": "admin slow dangerous",
	"acl|load": "admin slow dangerous", "acl|log": "admin slow dangerous", "acl|save": "admin slow dangerous",
	"acl|setuser": "admin slow dangerous", "acl|users": "admin slow dangerous", "acl|whoami": "slow",
	"latency|doctor": "admin slow dangerous", "latency|graph": "admin slow dangerous", "latency|help": "slow",
	"latency|histogram": "admin slow dangerous", "latency|history": "admin slow dangerous",
	"latency|latest": "admin slow dangerous", "latency|reset": "admin slow dangerous",
	"pubsub|channels": "pubsub slow", "pubsub|help": "slow", "pubsub|numpat": "pubsub slow",
	"pubsub|numsub": "pubsub slow", "pubsub|shardchannels": "pubsub slow", "pubsub|shardnumsub": "pubsub slow",
	"module|help": "slow", "module|list": "admin slow dangerous", "module|load": "admin slow dangerous",
	"module|loadex": "admin slow dangerous", "module|unload": "admin slow dangerous",
	"object|encoding": "keyspace read slow", "object|freq": "keyspace read slow", "object|help": "keyspace slow",
	"object|idletime": "keyspace read slow", "object|refcount": "keyspace read slow",
}

// containerCategories are the ACL categories of Redis's container
// commands themselves (their subcommands have their own): what ACL CAT
// lists and what a category rule allows with all its subcommands.
var containerCategories = map[string]string{
	"client": "slow", "config": "slow", "command": "slow connection", "memory": "slow", "slowlog": "slow",
	"acl": "slow", "latency": "slow", "pubsub": "slow", "object": "slow", "module": "slow",
}

// aclCatalog is the command table as the ACL model sees it; aclCommands[i]
// is commandList[i]'s entry.
var (
	aclCatalogOnce sync.Once
	aclCatalog     *acl.Catalog
	aclCommands    []*acl.Command
)

func catalog() *acl.Catalog {
	aclCatalogOnce.Do(func() {
		aclCatalog = acl.NewCatalog(aclCategoryOrder)
		aclCommands = make([]*acl.Command, len(commandList))
		for i, c := range commandList {
			aclCommands[i] = aclCatalog.Add(c.name, c.categories())
		}
		subs := make([]string, 0, len(subcommandCategories))
		for name := range subcommandCategories {
			subs = append(subs, name)
		}
		sort.Strings(subs)
		for _, name := range subs {
			parent, sub, _ := strings.Cut(name, "|")
			if c, ok := commandTable[parent]; ok {
				aclCatalog.AddSub(aclCommands[c.idx], sub, strings.Fields(subcommandCategories[name]))
			}
		}
	})
	return aclCatalog
}

// aclCommand is the catalog entry a request runs: the subcommand of a
// container when args name one, else the command.
func aclCommand(cmd *command, args [][]byte) *acl.Command {
	catalog()
	ac := aclCommands[cmd.idx]
	if ac.HasSubs() && len(args) > 1 {
		if sc := ac.Sub(string(args[1])); sc != nil {
			return sc
		}
	}
	return ac
}

// keyPerm is the access a command needs to its key at argument i, in
// Redis's terms: a write needs write access, and read access too when
// its reply shows what the key held (BF.ADD says whether the item was
// there; GETDEL returns the value; RENAME moves the value); a read needs
// read access; commands that look at a key without its value (EXISTS,
// TYPE, TTL) need neither, only a pattern that matches.
func keyPerm(cmd *command, i int) acl.Perm {
	switch cmd.name {
	case "exists", "type", "ttl", "pttl", "strlen", "watch":
		return 0
	case "getdel", "incr", "decr", "incrby", "decrby", "incrbyfloat", "getset", "getex", "bf.add", "bf.madd", "bf.insert", "cf.add", "cf.addnx", "cf.insert", "cf.insertnx", "cf.del":
		return acl.Read | acl.Write
	case "rename":
		if i == 1 {
			return acl.Read | acl.Write
		}
		return acl.Write
	case "bf.merge":
		if i == 1 {
			return acl.Write
		}
		return acl.Read
	case "copy":
		if i == 1 {
			return acl.Read
		}
		return acl.Write
	}
	if cmd.write {
		return acl.Write
	}
	return acl.Read
}

// channelArgs lists the Pub/Sub channels a request names (pattern: they
// are patterns, PSUBSCRIBE's), as Redis's channel specs do: PUBLISH's
// channel, SUBSCRIBE's and PSUBSCRIBE's arguments. UNSUBSCRIBE is never
// refused.
func channelArgs(cmd *command, args [][]byte) (first, last int, pattern bool) {
	switch cmd.name {
	case "publish", "spublish":
		return 1, 1, false
	case "subscribe", "ssubscribe":
		return 1, len(args) - 1, false
	case "psubscribe":
		return 1, len(args) - 1, true
	}
	return 0, -1, false
}

// aclDenied is why a request is refused: reason, the catalog entry, and
// the argument (key or channel) refused.
type aclDenied struct {
	reason acl.Reason
	cmd    *acl.Command
	arg    int
}

// aclCheck checks a request against rules; nil: allowed.
func aclCheck(r *acl.Rules, cmd *command, args [][]byte) *aclDenied {
	ac := aclCommand(cmd, args)
	if !r.CanRun(ac, args) {
		return &aclDenied{reason: acl.DeniedCommand, cmd: ac}
	}
	var denied *aclDenied
	commandKeys(cmd, args, func(i int, need acl.Perm) {
		if denied == nil && !r.CanKey(args[i], need) {
			denied = &aclDenied{reason: acl.DeniedKey, cmd: ac, arg: i}
		}
	})
	if denied != nil {
		return denied
	}
	if first, last, pattern := channelArgs(cmd, args); first > 0 {
		for i := first; i <= last; i++ {
			if !r.CanChannel(args[i], pattern) {
				return &aclDenied{reason: acl.DeniedChannel, cmd: ac, arg: i}
			}
		}
	}
	return nil
}

// message is the NOPERM error a refused request gets (Redis 7's texts).
func (d *aclDenied) message(user string) string {
	switch d.reason {
	case acl.DeniedKey:
		return "NOPERM No permissions to access a key"
	case acl.DeniedChannel:
		return "NOPERM No permissions to access a channel"
	}
	return "NOPERM User " + user + " has no permissions to run the '" + d.cmd.Name + "' command"
}

// dryRunMessage is ACL DRYRUN's verbose form of the refusal.
func (d *aclDenied) dryRunMessage(user string, args [][]byte) string {
	switch d.reason {
	case acl.DeniedKey:
		return "User " + user + " has no permissions to access the '" + string(args[d.arg]) + "' key"
	case acl.DeniedChannel:
		return "User " + user + " has no permissions to access the '" + string(args[d.arg]) + "' channel"
	}
	return "User " + user + " has no permissions to run the '" + d.cmd.Name + "' command"
}

// checkAccess refuses a request the session's user may not run: it
// answers NOPERM, adds to the ACL log and the server log, and returns
// false. A session without a user (the log's replay) may run anything.
func (s *Server) checkAccess(c *Session, cmd *command, args [][]byte, r *Reply) bool {
	u := c.user.Load()
	if u == nil || cmd.noauth {
		return true
	}
	rules := u.Rules()
	if rules.Unrestricted() {
		return true
	}
	d := aclCheck(rules, cmd, args)
	if d == nil {
		return true
	}
	r.Error(d.message(u.Name()))
	object := d.cmd.Name
	if d.reason != acl.DeniedCommand {
		object = string(args[d.arg])
	}
	s.aclDeny(c, d.reason, object, u.Name())
	return false
}

// aclDeny records a refusal (or a failed authentication) in the ACL log,
// the INFO counters and, rate-limited, the server log. Passwords are
// never recorded.
func (s *Server) aclDeny(c *Session, reason acl.Reason, object, user string) {
	ctx := "toplevel"
	if c.multi != nil || c.inExec {
		ctx = "multi"
	}
	s.aclCounts[reason].Add(1)
	s.acllog.Add(acl.Entry{Reason: reason, Context: ctx, Object: object, Username: user, ClientInfo: s.clientLine(c, c)},
		time.Now(), int(s.set.aclLogMaxLen.Load()))
	if reason == acl.DeniedAuth {
		s.metrics.authFailures.Inc()
	}
	now := time.Now().Unix()
	last := s.aclLogged.Load()
	if now > last && s.aclLogged.CompareAndSwap(last, now) {
		msg := "ACL: command refused"
		if reason == acl.DeniedAuth {
			msg = "ACL: authentication failed"
		}
		s.log.Warn(msg, "reason", reason.String(), "object", trimArg([]byte(object)), "user", trimArg([]byte(user)),
			"addr", c.Addr, "suppressed", s.aclSuppressed.Swap(0))
	} else {
		s.aclSuppressed.Add(1)
	}
}

// authRequired reports whether new connections must authenticate: the
// default user has passwords (requirepass) or is off.
func (s *Server) authRequired() bool {
	r := s.users.Default().Rules()
	return !r.NoPass() || !r.Enabled()
}

// authenticate checks a user name and password (AUTH, HELLO AUTH) and, if
// they are right, makes the session that user.
func (s *Server) authenticate(c *Session, name, pass []byte, cmdName []byte) bool {
	u := s.users.Authenticate(string(name), string(pass))
	if u == nil {
		s.aclDeny(c, acl.DeniedAuth, string(cmdName), string(name))
		return false
	}
	s.setUser(c, u)
	c.authed = true
	return true
}

// setUser changes the session's user (under db.mu: CLIENT LIST reads it).
func (s *Server) setUser(c *Session, u *acl.User) {
	c.user.Store(u)
}

// closeUserSessions closes the connections authenticated as the given
// users (deleted, or gone with ACL LOAD), as Redis does; the session
// asking is closed after its reply.
func (s *Server) closeUserSessions(me *Session, users []*acl.User) {
	if len(users) == 0 {
		return
	}
	gone := map[*acl.User]bool{}
	for _, u := range users {
		gone[u] = true
	}
	for _, sc := range s.sessionList() {
		if u := sc.user.Load(); u != nil && gone[u] {
			if sc == me {
				me.closing.Store(true)
			} else {
				sc.disconnect()
			}
		}
	}
}

// closeRevokedSubscribers disconnects the subscribers whose user may no
// longer receive one of the channels or patterns they are subscribed to,
// after ACL SETUSER or ACL LOAD changed the rules, as Redis 7 does: a
// subscription is checked when it is made, so one the rules no longer
// allow would otherwise go on delivering. The session asking is closed
// after its reply.
func (s *Server) closeRevokedSubscribers(me *Session) {
	revoked := map[*Session]bool{}
	s.pubsub.mu.RLock()
	for _, m := range []struct {
		subs    map[string]map[*Session]struct{}
		pattern bool
	}{{s.pubsub.channels, false}, {s.pubsub.patterns, true}} {
		for name, subs := range m.subs {
			for c := range subs {
				if u := c.user.Load(); u != nil && !u.Rules().CanChannel([]byte(name), m.pattern) {
					revoked[c] = true
				}
			}
		}
	}
	s.pubsub.mu.RUnlock()
	for c := range revoked {
		if c == me {
			me.closing.Store(true)
		} else {
			c.disconnect()
		}
	}
}

// initUsers sets up the users at start: requirepass as the default user's
// password, then the config file's user lines or the aclfile (not both,
// as Redis refuses).
func (s *Server) initUsers(cfg *Config) error {
	s.users = acl.NewUsers(catalog())
	s.users.SetPubsubDefault(cfg.ACLPubsubDefault == "allchannels")
	if cfg.RequirePass != "" {
		s.users.SetDefaultPassword(cfg.RequirePass)
	}
	if cfg.ACLFile != "" && len(cfg.Users) > 0 {
		return errors.New("server: users are defined both in the config file and in aclfile " + cfg.ACLFile + "; define them in one place")
	}
	if len(cfg.Users) > 0 {
		// As Redis: the default user, if named, starts again from reset.
		seen := map[string]bool{}
		for _, d := range cfg.Users {
			if seen[d.Name] {
				return fmt.Errorf("server: %s: Duplicate user found. A user can only be defined once in config files", d.Where)
			}
			seen[d.Name] = true
			if !acl.ValidName(d.Name) {
				return fmt.Errorf("server: %s: Spaces not allowed in ACL usernames", d.Where)
			}
			rules := d.Rules
			if d.Name == acl.DefaultUser {
				rules = append([]string{"reset"}, rules...)
			}
			if err := s.users.SetUser(d.Name, rules); err != nil {
				var re *acl.RuleError
				if errors.As(err, &re) {
					return fmt.Errorf("server: %s: Error loading ACL rule for the user named '%s': %v", d.Where, d.Name, re.Err)
				}
				return fmt.Errorf("server: %s: %w", d.Where, err)
			}
		}
		return nil
	}
	if cfg.ACLFile != "" {
		if err := s.loadACLFile(nil); err != nil {
			return fmt.Errorf("server: %w", err)
		}
	}
	return nil
}

// loadACLFile replaces the users with the aclfile's (ACL LOAD, start-up);
// on any error nothing changes. Connections of users that are gone are
// closed.
func (s *Server) loadACLFile(me *Session) error {
	data, err := os.ReadFile(s.cfg.ACLFile)
	if err != nil {
		return fmt.Errorf("Error loading ACLs, opening file '%s': %v", s.cfg.ACLFile, errors.Unwrap(err))
	}
	removed, err := s.users.LoadFile(s.cfg.ACLFile, data)
	if err != nil {
		return err
	}
	s.closeUserSessions(me, removed)
	s.closeRevokedSubscribers(me)
	return nil
}

// saveACLFile writes every user to the aclfile, atomically: a temporary
// file beside it, fsynced, renamed over it, the directory fsynced.
func (s *Server) saveACLFile() error {
	return writeFileAtomic(s.cfg.ACLFile, s.users.FileContents(), 0o600)
}

// writeFileAtomic replaces path with data so that a crash leaves the old
// file or the new one, never a part.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp := fmt.Sprintf("%s.tmp-%d-%d", path, os.Getpid(), time.Now().UnixNano())
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// aclStats are INFO's ACL counters (Redis's acl_access_denied_*).
type aclStats [4]atomic.Int64

// startSession makes a new connection the default user, authenticated
// unless the default user needs a password (or is off).
func (s *Server) startSession(c *Session) {
	c.user.Store(s.users.Default())
	c.authed = !s.authRequired()
}
