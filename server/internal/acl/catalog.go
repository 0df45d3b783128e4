// Package acl is the access-control model of Redis 7: users with hashed
// passwords, the commands, categories, keys and Pub/Sub channels each may
// use, the rule language of ACL SETUSER and of ACL files, and the ACL log.
// It knows nothing of the server: the server describes its commands in a
// Catalog, asks a user's Rules before it runs a command, and owns the
// connections and the files.
//
// Selectors (rules in parentheses, Redis 7's second and later permission
// sets of one user) are not supported: a rule starting with "(" is an
// error, "clearselectors" does nothing, and ACL GETUSER reports no
// selectors. Everything else follows Redis 7's acl.c: the order rules are
// applied in, how they are described back (ACL LIST, ACL GETUSER, ACL
// SAVE), and the error messages.
package acl

import (
	"sort"
	"strings"
)

// Command is one entry of a Catalog: a command or a subcommand.
type Command struct {
	// Name is the lower-case name ("config|get" for a subcommand).
	Name string
	// Categories are the command's ACL categories, without "@".
	Categories []string
	id         int
	parent     *Command
	subs       map[string]*Command
	subList    []*Command
}

// Parent is the container of a subcommand (nil for a command).
func (c *Command) Parent() *Command { return c.parent }

// Sub returns the subcommand name (case-insensitive) of a container
// command, or nil.
func (c *Command) Sub(name string) *Command {
	if c.subs == nil {
		return nil
	}
	return c.subs[strings.ToLower(name)]
}

// HasSubs reports whether c is a container command.
func (c *Command) HasSubs() bool { return len(c.subList) > 0 }

func (c *Command) in(cat string) bool {
	for _, x := range c.Categories {
		if x == cat {
			return true
		}
	}
	return false
}

// Catalog is the set of commands and categories rules can name. It is
// built once (Add, AddSub) before users are created and not changed
// afterwards: Rules refer to commands by their position in it.
type Catalog struct {
	categories []string
	byName     map[string]*Command
	all        []*Command // by id
	top        []*Command // commands (not subcommands) in the order added
}

// NewCatalog returns an empty catalog whose categories are listed (ACL
// CAT) in the given order.
func NewCatalog(categories []string) *Catalog {
	return &Catalog{categories: append([]string(nil), categories...), byName: map[string]*Command{}}
}

// Add adds a command with its categories and returns it.
func (cat *Catalog) Add(name string, categories []string) *Command {
	c := &Command{Name: strings.ToLower(name), Categories: categories, id: len(cat.all)}
	cat.all = append(cat.all, c)
	cat.top = append(cat.top, c)
	cat.byName[c.Name] = c
	return c
}

// AddSub adds the subcommand sub of parent ("get" of "config").
func (cat *Catalog) AddSub(parent *Command, sub string, categories []string) *Command {
	sub = strings.ToLower(sub)
	c := &Command{Name: parent.Name + "|" + sub, Categories: categories, id: len(cat.all), parent: parent}
	cat.all = append(cat.all, c)
	cat.byName[c.Name] = c
	if parent.subs == nil {
		parent.subs = map[string]*Command{}
	}
	parent.subs[sub] = c
	parent.subList = append(parent.subList, c)
	return c
}

// Lookup finds a command or "container|subcommand", case-insensitively.
func (cat *Catalog) Lookup(name string) *Command {
	return cat.byName[strings.ToLower(name)]
}

// Categories lists the category names in their order.
func (cat *Catalog) Categories() []string { return append([]string(nil), cat.categories...) }

// HasCategory reports whether name (without "@") is a category, as Redis
// compares them: case-insensitively.
func (cat *Catalog) HasCategory(name string) bool { return cat.category(name) != "" }

func (cat *Catalog) category(name string) string {
	for _, c := range cat.categories {
		if strings.EqualFold(c, name) {
			return c
		}
	}
	return ""
}

// InCategory lists the commands and subcommands in category name (ACL
// CAT name), in catalog order; ok is false for an unknown category.
func (cat *Catalog) InCategory(name string) (names []string, ok bool) {
	c := cat.category(name)
	if c == "" {
		return nil, false
	}
	names = []string{}
	for _, cmd := range cat.top {
		if cmd.in(c) {
			names = append(names, cmd.Name)
		}
		for _, s := range cmd.subList {
			if s.in(c) {
				names = append(names, s.Name)
			}
		}
	}
	return names, true
}

// Commands lists the commands (not the subcommands) in catalog order.
func (cat *Catalog) Commands() []*Command { return append([]*Command(nil), cat.top...) }

func sortedNames(m map[string]*User) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
