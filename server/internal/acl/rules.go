package acl

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/bloomkit/bloomkit/server/internal/glob"
)

// Perm is the access a command needs to a key: Read, Write, both, or
// neither (0: any key pattern that matches will do, as Redis lets a
// command that neither reads nor writes a key's value, EXISTS say, through
// a %R~ or a %W~ pattern alike).
type Perm uint8

// The key permissions of %R~, %W~ and ~ (%RW~) patterns.
const (
	Read  Perm = 1
	Write Perm = 2
)

// KeyPattern is one ~pattern rule with the access it grants.
type KeyPattern struct {
	Pattern string
	Perm    Perm
}

func (p KeyPattern) String() string {
	switch {
	case p.Perm == Read:
		return "%R~" + p.Pattern
	case p.Perm == Write:
		return "%W~" + p.Pattern
	case p.Pattern == "*":
		// A "*" pattern that is not allkeys (%RW~*, which Redis keeps as a
		// pattern): written "~*" it would read back as allkeys, after
		// which any other pattern is refused, and an aclfile holding such
		// a user would no longer load.
		return "%RW~*"
	}
	return "~" + p.Pattern
}

// Rules is everything a user may do, and how it authenticates. A Rules
// value is never changed once a User holds it: a change makes a new one,
// so that a connection checking a command needs no lock.
type Rules struct {
	cat *Catalog

	enabled        bool
	nopass         bool
	skipSanitize   bool
	passwords      []string // SHA-256 hex digests
	allKeys        bool
	allChannels    bool
	allCommands    bool
	future         bool // +@all: commands added later are allowed too
	allowed        []uint64
	firstArgs      map[int][]string
	keys           []KeyPattern
	channels       []string
	commandRules   []string // "+get", "-@write": the rules ACL LIST shows, in order
	unrestrictedOK bool     // allCommands && allKeys && allChannels, cached
	// pubsubAll is the users' acl-pubsub-default (nil: resetchannels);
	// "reset" reads it when applied, as Redis's does.
	pubsubAll *atomic.Bool
}

// newRules is a new user's rules: off, no password, no commands, no keys,
// and no channels, or every channel when pubsubAll says so
// (acl-pubsub-default resetchannels, Redis 7's default, or allchannels).
func newRules(cat *Catalog, pubsubAll *atomic.Bool) *Rules {
	r := &Rules{cat: cat, allowed: make([]uint64, (len(cat.all)+63)/64), pubsubAll: pubsubAll}
	r.allChannels = pubsubAll != nil && pubsubAll.Load()
	return r
}

func (r *Rules) clone() *Rules {
	n := *r
	n.passwords = append([]string(nil), r.passwords...)
	n.allowed = append([]uint64(nil), r.allowed...)
	n.keys = append([]KeyPattern(nil), r.keys...)
	n.channels = append([]string(nil), r.channels...)
	n.commandRules = append([]string(nil), r.commandRules...)
	if r.firstArgs != nil {
		n.firstArgs = make(map[int][]string, len(r.firstArgs))
		for k, v := range r.firstArgs {
			n.firstArgs[k] = append([]string(nil), v...)
		}
	}
	return &n
}

// Enabled reports whether the user may authenticate (on).
func (r *Rules) Enabled() bool { return r.enabled }

// NoPass reports whether any password authenticates the user.
func (r *Rules) NoPass() bool { return r.nopass }

// Unrestricted reports whether every command may run on every key and
// channel (the default user's rules): the server skips the checks.
func (r *Rules) Unrestricted() bool { return r.unrestrictedOK }

// HashPassword is the form a password is kept in: SHA-256, lower-case hex.
func HashPassword(pass string) string {
	h := sha256.Sum256([]byte(pass))
	return hex.EncodeToString(h[:])
}

// CheckPassword reports whether pass is one of the user's passwords (or
// the user is nopass). It takes the same time wherever a hash differs.
func (r *Rules) CheckPassword(pass string) bool {
	if r.nopass {
		return true
	}
	h := HashPassword(pass)
	ok := 0
	for _, p := range r.passwords {
		ok |= subtle.ConstantTimeCompare([]byte(h), []byte(p))
	}
	return ok == 1
}

func (r *Rules) bit(id int) bool { return r.allowed[id/64]&(1<<(id%64)) != 0 }

func (r *Rules) setBit(id int, on bool) {
	if on {
		r.allowed[id/64] |= 1 << (id % 64)
	} else {
		r.allowed[id/64] &^= 1 << (id % 64)
		r.allCommands = false
	}
}

// CanRun reports whether the rules allow cmd (a command, or a resolved
// subcommand). args is the request (args[0] the command name): a command
// allowed only with a first argument (+select|0) needs it there.
func (r *Rules) CanRun(cmd *Command, args [][]byte) bool {
	if r.allCommands || r.bit(cmd.id) {
		return true
	}
	allowed := r.firstArgs[cmd.id]
	idx := 1
	if cmd.parent != nil {
		idx = 2
	}
	if len(allowed) == 0 || len(args) <= idx {
		return false
	}
	for _, a := range allowed {
		if strings.EqualFold(a, string(args[idx])) {
			return true
		}
	}
	return false
}

// CanKey reports whether the rules let a command with access need touch
// key.
func (r *Rules) CanKey(key []byte, need Perm) bool {
	if r.allKeys {
		return true
	}
	for _, p := range r.keys {
		if p.Perm&need == need && glob.Match(p.Pattern, string(key)) {
			return true
		}
	}
	return false
}

// CanChannel reports whether the rules allow channel: a channel name
// (PUBLISH, SUBSCRIBE) is matched against the channel patterns; a pattern
// (PSUBSCRIBE) must equal one of them literally, as Redis does.
func (r *Rules) CanChannel(channel []byte, isPattern bool) bool {
	if r.allChannels {
		return true
	}
	for _, p := range r.channels {
		if isPattern && p == string(channel) || !isPattern && glob.Match(p, string(channel)) {
			return true
		}
	}
	return false
}

// Errors of a rule, with Redis's messages (ACL SETUSER wraps them).
var (
	errSyntax       = errors.New("Syntax error")
	errUnknown      = errors.New("Unknown command or category name in ACL")
	errKeyAfterAll  = errors.New("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
	errChanAfterAll = errors.New("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels")
	errNoSuchPass   = errors.New("The password you are trying to remove from the user does not exist")
	errBadHash      = errors.New("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
	errSubFirstArg  = errors.New("Allowing first-arg of a subcommand is not supported")
	errNoSelectors  = errors.New("Selectors are not supported")
)

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if (c < 'a' || c > 'f') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// hasSpace is Redis's ACLStringHasSpaces: user names and patterns may not
// hold white space or NUL.
func hasSpace(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\v', '\f', '\r', 0:
			return true
		}
	}
	return false
}

// apply applies one rule to r (changing it: callers apply rules to a
// clone). The order and meaning are Redis 7's ACLSetUser/ACLSetSelector.
func (r *Rules) apply(op string) error {
	if op == "" {
		return nil
	}
	lower := strings.ToLower(op)
	switch lower {
	case "on":
		r.enabled = true
	case "off":
		r.enabled = false
	case "skip-sanitize-payload":
		r.skipSanitize = true
	case "sanitize-payload":
		r.skipSanitize = false
	case "nopass":
		r.nopass = true
		r.passwords = nil
	case "resetpass":
		r.nopass = false
		r.passwords = nil
	case "clearselectors":
	case "reset":
		r.nopass, r.passwords = false, nil
		r.allKeys, r.keys = false, nil
		r.allChannels, r.channels = r.pubsubAll != nil && r.pubsubAll.Load(), nil
		r.enabled = false
		r.skipSanitize = false
		r.apply("-@all")
	case "allkeys", "~*":
		r.allKeys, r.keys = true, nil
	case "resetkeys":
		r.allKeys, r.keys = false, nil
	case "allchannels", "&*":
		r.allChannels, r.channels = true, nil
	case "resetchannels":
		r.allChannels, r.channels = false, nil
	case "allcommands", "+@all":
		for i := range r.allowed {
			r.allowed[i] = ^uint64(0)
		}
		r.allCommands, r.future = true, true
		r.commandRules, r.firstArgs = nil, nil
	case "nocommands", "-@all":
		clear(r.allowed)
		r.allCommands, r.future = false, false
		r.commandRules, r.firstArgs = nil, nil
	default:
		if err := r.applyOther(op); err != nil {
			return err
		}
	}
	r.unrestrictedOK = r.allCommands && r.allKeys && r.allChannels
	return nil
}

func (r *Rules) applyOther(op string) error {
	switch c := op[0]; {
	case c == '>' || c == '#':
		h := HashPassword(op[1:])
		if c == '#' {
			if h = op[1:]; !validHash(h) {
				return errBadHash
			}
		}
		if !contains(r.passwords, h) {
			r.passwords = append(r.passwords, h)
		}
		r.nopass = false
	case c == '<' || c == '!':
		h := HashPassword(op[1:])
		if c == '!' {
			if h = op[1:]; !validHash(h) {
				return errBadHash
			}
		}
		i := index(r.passwords, h)
		if i < 0 {
			return errNoSuchPass
		}
		r.passwords = append(r.passwords[:i:i], r.passwords[i+1:]...)
	case c == '(':
		return errNoSelectors
	case c == '~' || c == '%':
		if r.allKeys {
			return errKeyAfterAll
		}
		var perm Perm
		off := 1
		if c == '%' {
			for ; ; off++ {
				if off >= len(op) {
					return errSyntax
				}
				switch ch := op[off]; {
				case (ch == 'R' || ch == 'r') && perm&Read == 0:
					perm |= Read
					continue
				case (ch == 'W' || ch == 'w') && perm&Write == 0:
					perm |= Write
					continue
				case ch == '~' && perm != 0:
					off++
				default:
					return errSyntax
				}
				break
			}
		} else {
			perm = Read | Write
		}
		pat := op[off:]
		if hasSpace(pat) {
			return errSyntax
		}
		found := false
		for i := range r.keys {
			if r.keys[i].Pattern == pat {
				r.keys[i].Perm |= perm
				found = true
				break
			}
		}
		if !found {
			r.keys = append(r.keys, KeyPattern{Pattern: pat, Perm: perm})
		}
		r.allKeys = false
	case c == '&':
		if r.allChannels {
			return errChanAfterAll
		}
		pat := op[1:]
		if hasSpace(pat) {
			return errSyntax
		}
		if !contains(r.channels, pat) {
			r.channels = append(r.channels, pat)
		}
		r.allChannels = false
	case (c == '+' || c == '-') && len(op) > 1 && op[1] == '@':
		name := r.cat.category(op[2:])
		if name == "" {
			return errUnknown
		}
		allow := c == '+'
		r.updateCommandRules("@"+strings.ToLower(op[2:]), allow)
		for _, cmd := range r.cat.top {
			if cmd.in(name) {
				r.changePerm(cmd, allow)
			}
			for _, s := range cmd.subList {
				if s.in(name) {
					r.changePerm(s, allow)
				}
			}
		}
	case c == '+':
		name := op[1:]
		bar := strings.LastIndexByte(name, '|')
		if bar < 0 {
			cmd := r.cat.Lookup(name)
			if cmd == nil {
				return errUnknown
			}
			r.changePerm(cmd, true)
			r.updateCommandRules(cmd.Name, true)
			return nil
		}
		cmd := r.cat.Lookup(name[:bar])
		if cmd == nil {
			return errUnknown
		}
		if cmd.parent != nil {
			return errSubFirstArg
		}
		sub := name[bar+1:]
		if sub == "" || hasSpace(sub) {
			// A first argument with white space could not be read back
			// from an ACL file or a config file as one rule (a newline
			// in it would start a line of its own there).
			return errSyntax
		}
		if cmd.HasSubs() {
			s := r.cat.Lookup(name)
			if s == nil {
				return errUnknown
			}
			r.changePerm(s, true)
		} else {
			// +select|0: the command with this first argument only.
			if r.firstArgs == nil {
				r.firstArgs = map[int][]string{}
			}
			if !containsFold(r.firstArgs[cmd.id], sub) {
				r.firstArgs[cmd.id] = append(r.firstArgs[cmd.id], sub)
			}
		}
		r.updateCommandRules(name, true)
	case c == '-':
		cmd := r.cat.Lookup(op[1:])
		if cmd == nil {
			return errUnknown
		}
		r.changePerm(cmd, false)
		r.updateCommandRules(cmd.Name, false)
	default:
		return errSyntax
	}
	return nil
}

// changePerm allows or denies a command, and a container's subcommands
// with it (ACLChangeSelectorPerm).
func (r *Rules) changePerm(cmd *Command, allow bool) {
	r.setBit(cmd.id, allow)
	delete(r.firstArgs, cmd.id)
	for _, s := range cmd.subList {
		r.setBit(s.id, allow)
	}
}

// updateCommandRules keeps the command rules in the order they were
// given, a later rule on the same command (or on a whole container)
// replacing an earlier one (ACLUpdateCommandRules).
func (r *Rules) updateCommandRules(rule string, allow bool) {
	rule = strings.ToLower(rule)
	kept := r.commandRules[:0]
	for _, e := range r.commandRules {
		body := e[1:]
		if body == rule || strings.HasPrefix(body, rule) && len(body) > len(rule) && body[len(rule)] == '|' {
			continue
		}
		kept = append(kept, e)
	}
	sign := "-"
	if allow {
		sign = "+"
	}
	r.commandRules = append(kept, sign+rule)
}

// CommandRules describes the command rules as ACL GETUSER's "commands"
// field: +@all or -@all, then the rules in order.
func (r *Rules) CommandRules() string {
	s := "-@all"
	if r.future {
		s = "+@all"
	}
	if len(r.commandRules) > 0 {
		s += " " + strings.Join(r.commandRules, " ")
	}
	return s
}

// KeyRules describes the key patterns as ACL GETUSER's "keys" field.
func (r *Rules) KeyRules() string {
	if r.allKeys {
		return "~*"
	}
	parts := make([]string, len(r.keys))
	for i, p := range r.keys {
		parts[i] = p.String()
	}
	return strings.Join(parts, " ")
}

// ChannelRules describes the channel patterns as ACL GETUSER's
// "channels" field.
func (r *Rules) ChannelRules() string {
	if r.allChannels {
		return "&*"
	}
	parts := make([]string, len(r.channels))
	for i, p := range r.channels {
		parts[i] = "&" + p
	}
	return strings.Join(parts, " ")
}

// Flags lists the user's flags in Redis's order (ACL GETUSER "flags").
func (r *Rules) Flags() []string {
	f := []string{"off"}
	if r.enabled {
		f[0] = "on"
	}
	if r.nopass {
		f = append(f, "nopass")
	}
	if r.skipSanitize {
		f = append(f, "skip-sanitize-payload")
	} else {
		f = append(f, "sanitize-payload")
	}
	return f
}

// Passwords lists the password hashes (ACL GETUSER "passwords").
func (r *Rules) Passwords() []string { return append([]string(nil), r.passwords...) }

// String describes the rules as ACL LIST and ACL files do: applied to a
// new user, they give these rules back.
func (r *Rules) String() string {
	var b strings.Builder
	for _, f := range r.Flags() {
		b.WriteString(f)
		b.WriteByte(' ')
	}
	for _, p := range r.passwords {
		b.WriteString("#" + p + " ")
	}
	if r.allKeys {
		b.WriteString("~* ")
	} else {
		for _, p := range r.keys {
			b.WriteString(p.String() + " ")
		}
	}
	if r.allChannels {
		b.WriteString("&* ")
	} else {
		b.WriteString("resetchannels ")
		for _, p := range r.channels {
			b.WriteString("&" + p + " ")
		}
	}
	b.WriteString(r.CommandRules())
	return b.String()
}

func contains(list []string, s string) bool { return index(list, s) >= 0 }

func index(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
