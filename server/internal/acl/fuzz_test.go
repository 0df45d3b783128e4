package acl

import (
	"strings"
	"testing"
)

// FuzzRules applies arbitrary rules: no panic, an error leaves the user
// as it was, and a user's description, applied to a new user, describes
// the same user (ACL SAVE then ACL LOAD changes nothing).
func FuzzRules(f *testing.F) {
	for _, s := range []string{
		"on >pw ~* +@read", "+@all -@dangerous +config|get", "%RW~a:* %R~b &c* resetchannels",
		"reset nopass allkeys allchannels allcommands", "+select|0 -select", "#" + strings.Repeat("a", 64),
		"%R~ %W~x ~* ~y", "<x !y (+get) +get|", "+@BLOOM -BF.ADD +Config|Get",
		"%RW~* ~", // a "*" pattern that is not allkeys, then another pattern
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		us := NewUsers(testCatalog())
		rules := strings.Split(line, " ")
		if err := us.SetUser("u", []string{"on", ">pw", "+get"}); err != nil {
			t.Fatal(err)
		}
		before := us.Get("u").Rules().String()
		if err := us.SetUser("u", rules); err != nil {
			if got := us.Get("u").Rules().String(); got != before {
				t.Fatalf("failed SETUSER %q changed the user: %q -> %q", line, before, got)
			}
			return
		}
		desc := us.Get("u").Rules().String()
		again := NewUsers(testCatalog())
		if err := again.SetUser("u", strings.Split(desc, " ")); err != nil {
			t.Fatalf("description %q of %q does not apply: %v", desc, line, err)
		}
		if got := again.Get("u").Rules().String(); got != desc {
			t.Fatalf("rules %q: described %q, applied again %q", line, desc, got)
		}
		a, b := us.Get("u").Rules(), again.Get("u").Rules()
		for _, cmd := range us.Catalog().all {
			x := [][]byte{[]byte(cmd.Name), []byte("0")}
			if a.CanRun(cmd, x) != b.CanRun(again.Catalog().all[cmd.id], x) {
				t.Fatalf("rules %q: %s allowed differently after describe/apply", line, cmd.Name)
			}
		}
	})
}
