package acl

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

// DefaultUser is the name of the user every connection starts as.
const DefaultUser = "default"

// User is one user. Its name never changes; its rules are replaced as a
// whole (ACL SETUSER, ACL LOAD), so that connections authenticated as the
// user see a change from their next command on.
type User struct {
	name  string
	rules atomic.Pointer[Rules]
}

// Name is the user's name.
func (u *User) Name() string { return u.name }

// Rules are the user's rules in force.
func (u *User) Rules() *Rules { return u.rules.Load() }

// Users is the set of users: always with the default user.
type Users struct {
	cat *Catalog
	mu  sync.RWMutex
	m   map[string]*User
	// pubsubAll is acl-pubsub-default: whether a new user, and "reset",
	// start with every channel (allchannels) or none (resetchannels).
	pubsubAll atomic.Bool
}

// SetPubsubDefault sets acl-pubsub-default: allChannels true is
// allchannels, false resetchannels (Redis 7's default). It applies to
// users created, and rules reset, from then on.
func (us *Users) SetPubsubDefault(allChannels bool) { us.pubsubAll.Store(allChannels) }

// PubsubDefault reports acl-pubsub-default (true: allchannels).
func (us *Users) PubsubDefault() bool { return us.pubsubAll.Load() }

// NewUsers returns the users Redis starts with: only "default", on,
// nopass, with every command, key and channel.
func NewUsers(cat *Catalog) *Users {
	us := &Users{cat: cat, m: map[string]*User{}}
	us.m[DefaultUser] = newDefault(cat, &us.pubsubAll)
	return us
}

// Catalog is the catalog the rules refer to.
func (us *Users) Catalog() *Catalog { return us.cat }

func newDefault(cat *Catalog, pubsubAll *atomic.Bool) *User {
	u := &User{name: DefaultUser}
	u.rules.Store(defaultRules(cat, pubsubAll))
	return u
}

func defaultRules(cat *Catalog, pubsubAll *atomic.Bool) *Rules {
	r := newRules(cat, pubsubAll)
	for _, op := range []string{"+@all", "~*", "&*", "on", "nopass"} {
		r.apply(op)
	}
	return r
}

// Get returns the user called name, or nil.
func (us *Users) Get(name string) *User {
	us.mu.RLock()
	defer us.mu.RUnlock()
	return us.m[name]
}

// Default is the default user.
func (us *Users) Default() *User { return us.Get(DefaultUser) }

// Names lists the user names in byte order (ACL USERS).
func (us *Users) Names() []string {
	us.mu.RLock()
	defer us.mu.RUnlock()
	return sortedNames(us.m)
}

// List describes every user as ACL LIST and ACL files do ("user name
// rules"), in name order.
func (us *Users) List() []string {
	us.mu.RLock()
	defer us.mu.RUnlock()
	out := make([]string, 0, len(us.m))
	for _, n := range sortedNames(us.m) {
		out = append(out, "user "+n+" "+us.m[n].Rules().String())
	}
	return out
}

// RuleError is a rule that could not be applied.
type RuleError struct {
	Rule string
	Err  error
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("Error in ACL SETUSER modifier '%s': %s", e.Rule, e.Err)
}

func (e *RuleError) Unwrap() error { return e.Err }

// ValidName reports whether name may be a user name (no spaces or NUL).
func ValidName(name string) bool { return !hasSpace(name) }

// SetUser applies rules to the user called name, creating it if needed.
// Either every rule applies or none does (Redis stages them on a copy).
func (us *Users) SetUser(name string, rules []string) error {
	us.mu.Lock()
	defer us.mu.Unlock()
	u := us.m[name]
	var r *Rules
	if u != nil {
		r = u.Rules().clone()
	} else {
		r = newRules(us.cat, &us.pubsubAll)
	}
	if err := applyAll(r, rules); err != nil {
		return err
	}
	if u == nil {
		u = &User{name: name}
		us.m[name] = u
	}
	u.rules.Store(r)
	return nil
}

func applyAll(r *Rules, rules []string) error {
	for _, op := range rules {
		if err := r.apply(op); err != nil {
			return &RuleError{Rule: op, Err: err}
		}
	}
	return nil
}

// CheckRules reports whether rules would apply to a new user, without
// creating one (the config file's user lines are checked before start).
func (us *Users) CheckRules(rules []string) error {
	return applyAll(newRules(us.cat, &us.pubsubAll), rules)
}

// Delete removes the named users and returns those that existed (their
// connections must be closed). The default user cannot be removed: then
// nothing is.
func (us *Users) Delete(names ...string) ([]*User, error) {
	for _, n := range names {
		if n == DefaultUser {
			return nil, fmt.Errorf("The 'default' user cannot be removed")
		}
	}
	us.mu.Lock()
	defer us.mu.Unlock()
	var gone []*User
	for _, n := range names {
		if u := us.m[n]; u != nil {
			delete(us.m, n)
			gone = append(gone, u)
		}
	}
	return gone, nil
}

// Authenticate returns the user if name exists, is on, and pass is one of
// its passwords (or it is nopass); nil otherwise.
func (us *Users) Authenticate(name, pass string) *User {
	u := us.Get(name)
	if u == nil {
		return nil
	}
	r := u.Rules()
	if !r.Enabled() || !r.CheckPassword(pass) {
		return nil
	}
	return u
}

// SetDefaultPassword makes pass the default user's only password, or the
// default user nopass when pass is empty: what requirepass means.
func (us *Users) SetDefaultPassword(pass string) {
	rules := []string{"resetpass", "nopass"}
	if pass != "" {
		rules = []string{"resetpass", ">" + pass}
	}
	us.SetUser(DefaultUser, rules) // these rules cannot fail
}

// Definition is one user as a config file or an ACL file defines it.
type Definition struct {
	Name  string
	Rules []string
	// Where is "file:line" for messages.
	Where string
}

// Replace makes defs the whole set of users (ACL LOAD, start-up): the
// default user keeps its identity (connections authenticated as it stay)
// and gets the rules defs give it, or its initial rules if defs do not
// name it. Users that keep their name keep their identity too; removed
// holds the users that no longer exist, whose connections must be closed.
// Nothing changes when an error is returned.
func (us *Users) Replace(defs []Definition) (removed []*User, err error) {
	return us.replace(defs, nil)
}

// LoadFile replaces the users with those of an ACL file (see Replace and
// ParseFile); every error of the file is reported, with its line.
func (us *Users) LoadFile(name string, data []byte) (removed []*User, err error) {
	defs, errs := parseFile(name, data)
	return us.replace(defs, errs)
}

func (us *Users) replace(defs []Definition, errs []string) (removed []*User, err error) {
	staged := map[string]*Rules{}
	for _, d := range defs {
		if _, dup := staged[d.Name]; dup {
			errs = append(errs, fmt.Sprintf("WARNING: Duplicate user '%s' found on %s. ", d.Name, d.Where))
			continue
		}
		if hasSpace(d.Name) || d.Name == "" {
			errs = append(errs, fmt.Sprintf("%s: username '%s' contains invalid characters. ", d.Where, d.Name))
			continue
		}
		r := newRules(us.cat, &us.pubsubAll)
		for _, op := range d.Rules {
			if e := r.apply(op); e != nil {
				if e == errUnknown {
					errs = append(errs, fmt.Sprintf("%s: Error in applying operation '%s': %s. ", d.Where, op, e))
				} else {
					// Only the first other error: it may explain the rest
					// (and a password must not be echoed).
					errs = append(errs, fmt.Sprintf("%s: %s. ", d.Where, e))
					break
				}
			}
		}
		staged[d.Name] = r
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%sWARNING: ACL errors detected, no change to the previously active ACL rules was performed", strings.Join(errs, ""))
	}
	if _, ok := staged[DefaultUser]; !ok {
		staged[DefaultUser] = defaultRules(us.cat, &us.pubsubAll)
	}
	us.mu.Lock()
	defer us.mu.Unlock()
	next := make(map[string]*User, len(staged))
	for name, r := range staged {
		u := us.m[name]
		if u == nil {
			u = &User{name: name}
		}
		u.rules.Store(r)
		next[name] = u
	}
	for name, u := range us.m {
		if next[name] == nil {
			removed = append(removed, u)
		}
	}
	us.m = next
	return removed, nil
}

// ParseFile reads an ACL file: one "user <name> <rules...>" per line,
// rules separated by single spaces as Redis writes them; blank lines are
// allowed, comments are not (ACL SAVE would lose them). name is used in
// messages ("name:line"). Every malformed line is reported, in one error.
func ParseFile(name string, data []byte) ([]Definition, error) {
	defs, errs := parseFile(name, data)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%sWARNING: ACL errors detected, no change to the previously active ACL rules was performed", strings.Join(errs, ""))
	}
	return defs, nil
}

func parseFile(name string, data []byte) (defs []Definition, errs []string) {
	seen := map[string]int{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		where := fmt.Sprintf("%s:%d", name, i+1)
		args := strings.Split(line, " ")
		if args[0] != "user" || len(args) < 2 {
			errs = append(errs, where+" should start with user keyword followed by the username. ")
			continue
		}
		if prev, dup := seen[args[1]]; dup {
			errs = append(errs, fmt.Sprintf("WARNING: Duplicate user '%s' found on line %d (first on line %d). ", args[1], i+1, prev))
			continue
		}
		seen[args[1]] = i + 1
		rules := make([]string, 0, len(args)-2)
		for _, a := range args[2:] {
			rules = append(rules, strings.Trim(a, "\t\r\n"))
		}
		defs = append(defs, Definition{Name: args[1], Rules: rules, Where: where})
	}
	return defs, errs
}

// FileContents is what ACL SAVE writes: ACL LIST's lines.
func (us *Users) FileContents() []byte {
	var b strings.Builder
	for _, l := range us.List() {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}
