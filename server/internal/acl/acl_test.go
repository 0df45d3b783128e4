package acl

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// testCatalog is a small command table in the shape of the server's.
func testCatalog() *Catalog {
	cat := NewCatalog(strings.Fields("keyspace read write string admin fast slow dangerous connection bloom"))
	cat.Add("get", []string{"read", "string", "fast"})
	cat.Add("set", []string{"write", "string", "slow"})
	cat.Add("del", []string{"keyspace", "write", "slow"})
	cat.Add("flushall", []string{"keyspace", "write", "slow", "dangerous"})
	cat.Add("select", []string{"fast", "connection"})
	cat.Add("bf.add", []string{"write", "bloom"})
	cat.Add("bf.exists", []string{"read", "bloom"})
	cfg := cat.Add("config", []string{"slow"})
	cat.AddSub(cfg, "get", []string{"admin", "slow", "dangerous"})
	cat.AddSub(cfg, "set", []string{"admin", "slow", "dangerous"})
	cat.AddSub(cfg, "help", []string{"slow"})
	return cat
}

func set(t *testing.T, us *Users, name string, rules ...string) {
	t.Helper()
	if err := us.SetUser(name, rules); err != nil {
		t.Fatalf("SETUSER %s %v: %v", name, rules, err)
	}
}

func args(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

// run reports whether u may run the request line (command check only).
func run(us *Users, user, line string) bool {
	a := args(line)
	cmd := us.Catalog().Lookup(string(a[0]))
	if cmd.HasSubs() && len(a) > 1 {
		if s := cmd.Sub(string(a[1])); s != nil {
			cmd = s
		}
	}
	return us.Get(user).Rules().CanRun(cmd, a)
}

func TestDefaultUser(t *testing.T) {
	us := NewUsers(testCatalog())
	if got, want := us.List(), []string{"user default on nopass sanitize-payload ~* &* +@all"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("ACL LIST = %q, want %q", got, want)
	}
	if !us.Default().Rules().Unrestricted() {
		t.Fatal("the default user is not unrestricted")
	}
	if us.Authenticate("default", "anything") == nil {
		t.Fatal("nopass default user refused a password")
	}
	us.SetDefaultPassword("s3cret")
	if us.Authenticate("default", "anything") != nil || us.Authenticate("default", "s3cret") == nil {
		t.Fatal("requirepass: wrong password accepted or right one refused")
	}
	if got := us.List()[0]; got != "user default on sanitize-payload #"+HashPassword("s3cret")+" ~* &* +@all" {
		t.Fatalf("after requirepass: %q", got)
	}
	us.SetDefaultPassword("")
	if !us.Default().Rules().NoPass() {
		t.Fatal("requirepass \"\" did not make the default user nopass")
	}
}

// TestDescribe checks ACL LIST's description against the strings Redis 7
// prints for the same rules.
func TestDescribe(t *testing.T) {
	cases := []struct {
		rules []string
		want  string
	}{
		{nil, "off sanitize-payload resetchannels -@all"},
		{[]string{"on", ">pw", "~*", "+@read"}, "on sanitize-payload #" + HashPassword("pw") + " ~* resetchannels -@all +@read"},
		{[]string{"on", "nopass", "allkeys", "allchannels", "allcommands", "-flushall"}, "on nopass sanitize-payload ~* &* +@all -flushall"},
		{[]string{"~user:*", "%R~cache:*", "%W~log:*", "%RW~x", "&news.*"}, "off sanitize-payload ~user:* %R~cache:* %W~log:* ~x resetchannels &news.* -@all"},
		{[]string{"%R~a", "%W~a"}, "off sanitize-payload ~a resetchannels -@all"},
		// A later rule on the same command replaces the earlier one;
		// a whole-command rule replaces its subcommand rules.
		{[]string{"+get", "+set", "-get"}, "off sanitize-payload resetchannels -@all +set -get"},
		{[]string{"+config|get", "+config"}, "off sanitize-payload resetchannels -@all +config"},
		{[]string{"+@all", "-@dangerous", "+@read", "nocommands", "+del"}, "off sanitize-payload resetchannels -@all +del"},
		{[]string{"+select|0", "+SELECT|1"}, "off sanitize-payload resetchannels -@all +select|0 +select|1"},
		{[]string{"skip-sanitize-payload", "on", "reset"}, "off sanitize-payload resetchannels -@all"},
	}
	for _, c := range cases {
		us := NewUsers(testCatalog())
		set(t, us, "u", c.rules...)
		if got := us.Get("u").Rules().String(); got != c.want {
			t.Errorf("%v:\n got %q\nwant %q", c.rules, got, c.want)
		}
		// The description is itself a rule list that gives the same user.
		again := NewUsers(testCatalog())
		set(t, again, "u", strings.Fields(us.Get("u").Rules().String())...)
		if got := again.Get("u").Rules().String(); got != c.want {
			t.Errorf("%v described and applied again: %q", c.rules, got)
		}
	}
}

func TestCommandRules(t *testing.T) {
	us := NewUsers(testCatalog())
	set(t, us, "reader", "on", "+@read")
	set(t, us, "nodanger", "on", "+@all", "-@dangerous")
	set(t, us, "cfg", "on", "+config|get", "+select|0")
	set(t, us, "bloom", "on", "+@bloom", "-bf.add")
	cases := []struct {
		user, line string
		want       bool
	}{
		{"reader", "get k", true}, {"reader", "set k v", false}, {"reader", "bf.exists f x", true}, {"reader", "bf.add f x", false},
		{"reader", "config get x", false},
		{"nodanger", "set k v", true}, {"nodanger", "flushall", false}, {"nodanger", "config get x", false}, {"nodanger", "config help", true},
		{"cfg", "config get maxmemory", true}, {"cfg", "config set a b", false}, {"cfg", "select 0", true}, {"cfg", "select 1", false},
		{"cfg", "select", false}, {"cfg", "get k", false},
		{"bloom", "bf.exists f x", true}, {"bloom", "bf.add f x", false}, {"bloom", "get k", false},
	}
	for _, c := range cases {
		if got := run(us, c.user, c.line); got != c.want {
			t.Errorf("%s: %q allowed = %v, want %v", c.user, c.line, got, c.want)
		}
	}
}

func TestKeyAndChannelRules(t *testing.T) {
	us := NewUsers(testCatalog())
	set(t, us, "u", "~user:*", "%R~cache:*", "%W~log:*", "&news.*")
	r := us.Get("u").Rules()
	cases := []struct {
		key  string
		perm Perm
		want bool
	}{
		{"user:1", Read | Write, true}, {"user:1", Read, true}, {"other", 0, false},
		{"cache:x", Read, true}, {"cache:x", Write, false}, {"cache:x", Read | Write, false}, {"cache:x", 0, true},
		{"log:x", Write, true}, {"log:x", Read, false},
	}
	for _, c := range cases {
		if got := r.CanKey([]byte(c.key), c.perm); got != c.want {
			t.Errorf("key %q perm %d: %v, want %v", c.key, c.perm, got, c.want)
		}
	}
	if !r.CanChannel([]byte("news.tech"), false) || r.CanChannel([]byte("sport"), false) {
		t.Error("channel name matching")
	}
	// A pattern (PSUBSCRIBE) must be one of the user's patterns literally.
	if !r.CanChannel([]byte("news.*"), true) || r.CanChannel([]byte("news.t*"), true) {
		t.Error("channel pattern matching")
	}
}

func TestRuleErrors(t *testing.T) {
	us := NewUsers(testCatalog())
	cases := []struct {
		rules []string
		want  string
	}{
		{[]string{"bogus"}, "Error in ACL SETUSER modifier 'bogus': Syntax error"},
		{[]string{"+nosuch"}, "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"},
		{[]string{"+@nosuch"}, "Unknown command or category name in ACL"},
		{[]string{"-select|0"}, "Unknown command or category name in ACL"},
		{[]string{"+config|get|x"}, "Allowing first-arg of a subcommand is not supported"},
		{[]string{"+get|"}, "Syntax error"},
		{[]string{"~*", "~a"}, "Adding a pattern after the * pattern (or the 'allkeys' flag)"},
		{[]string{"&*", "&a"}, "Adding a pattern after the * pattern (or the 'allchannels' flag)"},
		{[]string{"<never"}, "The password you are trying to remove from the user does not exist"},
		{[]string{"#abc"}, "The password hash must be exactly 64 characters"},
		{[]string{"%X~a"}, "Syntax error"},
		{[]string{"%R"}, "Syntax error"},
		{[]string{"%~a"}, "Syntax error"},
		{[]string{"(+get)"}, "Selectors are not supported"},
	}
	for _, c := range cases {
		err := us.SetUser("u", c.rules)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.rules, err, c.want)
		}
	}
	// Nothing of a failed SETUSER applies: not even its valid rules.
	set(t, us, "v", "on", ">pw", "+get")
	if err := us.SetUser("v", []string{"off", "+set", "+nosuch"}); err == nil {
		t.Fatal("bad rule accepted")
	}
	if r := us.Get("v").Rules(); !r.Enabled() || run(us, "v", "set k v") {
		t.Fatal("a failed SETUSER changed the user")
	}
	if us.Get("u") != nil {
		t.Fatal("a failed SETUSER created the user")
	}
}

func TestPasswords(t *testing.T) {
	us := NewUsers(testCatalog())
	h := HashPassword("two")
	set(t, us, "u", "on", ">one", "#"+h)
	if us.Authenticate("u", "one") == nil || us.Authenticate("u", "two") == nil || us.Authenticate("u", "three") != nil {
		t.Fatal("passwords")
	}
	set(t, us, "u", "<one")
	if us.Authenticate("u", "one") != nil {
		t.Fatal("<one did not remove the password")
	}
	set(t, us, "u", "!"+h)
	if us.Authenticate("u", "two") != nil {
		t.Fatal("!hash did not remove the password")
	}
	set(t, us, "u", ">x", "off")
	if us.Authenticate("u", "x") != nil {
		t.Fatal("a user that is off authenticated")
	}
	set(t, us, "u", "on", "nopass")
	if us.Authenticate("u", "whatever") == nil {
		t.Fatal("nopass user refused")
	}
	set(t, us, "u", "resetpass")
	if us.Authenticate("u", "") != nil {
		t.Fatal("resetpass left a way in")
	}
	if strings.Contains(strings.Join(us.List(), " "), "one") {
		t.Fatal("a clear-text password in ACL LIST")
	}
}

func TestDeleteAndReplace(t *testing.T) {
	us := NewUsers(testCatalog())
	set(t, us, "a", "on", ">pw")
	set(t, us, "b", "on", ">pw")
	a, def := us.Get("a"), us.Default()
	if _, err := us.Delete("a", "default"); err == nil || us.Get("a") == nil {
		t.Fatal("deleting default must fail and delete nothing")
	}
	defs, err := ParseFile("users.acl", []byte("user a on >new +@all ~*\n\nuser c off\n"))
	if err != nil {
		t.Fatal(err)
	}
	removed, err := us.Replace(defs)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].Name() != "b" {
		t.Fatalf("removed %v, want b", removed)
	}
	if us.Get("a") != a || us.Default() != def {
		t.Fatal("a user that stays lost its identity (its connections would be closed)")
	}
	if us.Authenticate("a", "new") == nil || !us.Default().Rules().Unrestricted() {
		t.Fatal("the file's rules were not applied")
	}
	gone, err := us.Delete("a", "nobody")
	if err != nil || len(gone) != 1 || gone[0] != a {
		t.Fatalf("Delete: %v %v", gone, err)
	}
}

func TestParseFileErrors(t *testing.T) {
	us := NewUsers(testCatalog())
	set(t, us, "keep", "on", ">pw")
	cases := []struct{ file, want string }{
		{"user a on\n# comment\n", "users.acl:2 should start with user keyword followed by the username."},
		{"user a on\nuser a off\n", "Duplicate user 'a' found on line 2"},
		{"user\n", "users.acl:1 should start with user keyword"},
	}
	for _, c := range cases {
		_, err := ParseFile("users.acl", []byte(c.file))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasSuffix(err.Error(), "no change to the previously active ACL rules was performed") {
			t.Errorf("%q: %v, want %q", c.file, err, c.want)
		}
	}
	defs, err := ParseFile("users.acl", []byte("user ok on\nuser a on >secret +nosuch\nuser b on bogus >secret2\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = us.Replace(defs)
	if err == nil {
		t.Fatal("bad rules accepted")
	}
	for _, want := range []string{"users.acl:2: Error in applying operation '+nosuch': Unknown command or category name in ACL.", "users.acl:3: Syntax error."} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("a password in the error: %q", err)
	}
	if us.Get("keep") == nil || us.Get("ok") != nil {
		t.Fatal("a failed load changed the users")
	}
}

func TestLog(t *testing.T) {
	var l Log
	t0 := time.Unix(1000, 0)
	e := Entry{Reason: DeniedCommand, Context: "toplevel", Object: "flushall", Username: "u"}
	l.Add(e, t0, 128)
	l.Add(e, t0.Add(10*time.Second), 128)
	other := e
	other.Object = "set"
	l.Add(other, t0.Add(11*time.Second), 128)
	l.Add(e, t0.Add(12*time.Second), 128) // grouped, moves to the front
	got := l.Entries(-1)
	if len(got) != 2 || got[0].Object != "flushall" || got[0].Count != 3 || got[0].ID != 0 || got[1].ID != 1 {
		t.Fatalf("entries %+v", got)
	}
	if got[0].Created != t0.UnixMilli() || got[0].Updated != t0.Add(12*time.Second).UnixMilli() {
		t.Fatalf("times %+v", got[0])
	}
	l.Add(e, t0.Add(200*time.Second), 128) // more than a minute later: new entry
	if got := l.Entries(-1); len(got) != 3 || got[0].Count != 1 || got[0].ID != 2 {
		t.Fatalf("after a pause: %+v", got)
	}
	for i := 0; i < 10; i++ {
		x := e
		x.Object = strings.Repeat("k", i+1)
		l.Add(x, t0.Add(300*time.Second), 4)
	}
	if got := l.Entries(-1); len(got) != 4 {
		t.Fatalf("maxLen 4: %d entries", len(got))
	}
	l.Reset()
	if got := l.Entries(10); len(got) != 0 {
		t.Fatal("Reset left entries")
	}
}

func TestCatalog(t *testing.T) {
	cat := testCatalog()
	names, ok := cat.InCategory("DANGEROUS")
	if !ok || strings.Join(names, " ") != "flushall config|get config|set" {
		t.Fatalf("InCategory dangerous = %v %v", names, ok)
	}
	if _, ok := cat.InCategory("nosuch"); ok {
		t.Fatal("unknown category found")
	}
	if cat.Lookup("CONFIG|GET") == nil || cat.Lookup("config").Sub("GET") == nil || cat.Lookup("get").HasSubs() {
		t.Fatal("Lookup")
	}
}

func TestRuleErrorUnwrap(t *testing.T) {
	us := NewUsers(testCatalog())
	err := us.SetUser("u", []string{"+nosuch"})
	var re *RuleError
	if !errors.As(err, &re) || re.Rule != "+nosuch" || !errors.Is(err, errUnknown) {
		t.Fatalf("%#v", err)
	}
}

// TestLoadFileAllErrors: a file's structural errors and its rules' errors
// are reported together, each with its line, as Redis's ACL LOAD does.
func TestLoadFileAllErrors(t *testing.T) {
	us := NewUsers(testCatalog())
	_, err := us.LoadFile("u.acl", []byte("user a on +nosuch\nbogus line\n"))
	if err == nil || !strings.Contains(err.Error(), "u.acl:1: Error in applying operation '+nosuch'") || !strings.Contains(err.Error(), "u.acl:2 should start with user") {
		t.Fatalf("%v", err)
	}
}
