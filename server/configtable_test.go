package server

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bloomkit/bloomkit/server/internal/acl"
)

// configLog is a log destination the test reads while the server writes.
type configLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *configLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *configLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Every password parameter is marked secret in the table, and the value a
// CONFIG SET gives a secret parameter shows neither in SLOWLOG GET (as
// "(redacted)", as in Redis) nor in the server's log.
func TestConfigSecretsRedacted(t *testing.T) {
	var secrets []string
	for _, st := range settingList {
		looksSecret := strings.Contains(st.name, "pass") || strings.HasSuffix(st.name, "auth")
		if looksSecret != st.secret {
			t.Errorf("parameter %s: secret is %v", st.name, st.secret)
		}
		if st.secret {
			secrets = append(secrets, st.name)
		}
	}
	for _, want := range []string{"requirepass", "masterauth", "tls-key-file-pass", "tls-client-key-file-pass"} {
		if !isSecretParam(want) {
			t.Errorf("%s is not secret", want)
		}
	}
	var log configLog
	s := startServer(t, Config{NoPersistence: true, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	rc := dialRaw(t, s.Addr())
	if got := rc.do("CONFIG", "SET", "slowlog-log-slower-than", "0"); got != "+OK" {
		t.Fatal(got)
	}
	for _, name := range secrets {
		if name == "requirepass" {
			continue // would lock this client out of SLOWLOG GET
		}
		rc.do("CONFIG", "SET", name, "s3cr3t-"+name)
		// Several pairs: each secret value is redacted wherever it stands.
		rc.do("CONFIG", "SET", "slowlog-max-len", "128", strings.ToUpper(name), "s3cr3t-"+name)
	}
	rc.do("CONFIG", "SET", "requirepass", "s3cr3t-requirepass")
	rc.do("AUTH", "s3cr3t-requirepass")
	got := rc.do("SLOWLOG", "GET", "-1")
	if strings.Contains(got, "s3cr3t") {
		t.Errorf("SLOWLOG GET shows a secret: %s", got)
	}
	if n := strings.Count(got, `"(redacted)"`); n < 2*len(secrets)-1 {
		t.Errorf("SLOWLOG GET has %d redacted values, want at least %d: %s", n, 2*len(secrets)-1, got)
	}
	if strings.Contains(log.String(), "s3cr3t") {
		t.Errorf("the server's log shows a secret:\n%s", log.String())
	}
}

// A rule is written to the config file (CONFIG REWRITE) and the ACL file
// (ACL SAVE) so that it reads back as the one rule it is: a rule whose
// first argument holds a newline, which would start a "user" line of its
// own there, is refused; other characters the config file's reader treats
// specially are quoted.
func TestACLRulesWrittenAsOneWord(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "bloomkit.conf")
	if err := os.WriteFile(conf, []byte("user default on nopass ~* &* +@all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, Config{NoPersistence: true, ConfigFile: conf})
	rc := dialRaw(t, s.Addr())
	for _, rule := range []string{"+get|x\nuser evil on nopass ~* &* +@all", "+get|x\ruser", "+select|0 1", "+get|\tx"} {
		if got := rc.do("ACL", "SETUSER", "u", "on", ">pw", rule); !strings.HasPrefix(got, "-ERR") {
			t.Errorf("ACL SETUSER u %q: %s, want an error", rule, got)
		}
	}
	odd := `~a"b'c\d#e`
	if got := rc.do("ACL", "SETUSER", "u", "on", ">pw", odd, `&ch"an`, "+select|'0"); got != "+OK" {
		t.Fatal(got)
	}
	if got := rc.do("CONFIG", "REWRITE"); got != "+OK" {
		t.Fatal(got)
	}
	raw, _ := os.ReadFile(conf)
	var cfg Config
	if err := ReadConfigFile(conf, &cfg); err != nil {
		t.Fatalf("the rewritten file does not read back: %v\n%s", err, raw)
	}
	var names []string
	var rules []string
	for _, u := range cfg.Users {
		names = append(names, u.Name)
		if u.Name == "u" {
			rules = u.Rules
		}
	}
	if strings.Join(names, " ") != "default u" {
		t.Errorf("users read back: %v\n%s", names, raw)
	}
	for _, want := range []string{odd, `&ch"an`, "+select|'0"} {
		if !slices.Contains(rules, want) {
			t.Errorf("user u's rules read back from the config file %q lack %q\n%s", rules, want, raw)
		}
	}
	// The ACL file: Redis's format, words split at spaces.
	defs, err := acl.ParseFile("users.acl", s.users.FileContents())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs {
		if d.Name == "u" && !slices.Contains(d.Rules, odd) {
			t.Errorf("ACL file rules %q lack %q", d.Rules, odd)
		}
	}
}

// Every CONFIG parameter of the table is a directive the config file's
// reader knows (the round trip in cmd/bloom checks that it also means the
// same), and a directive the reader does not know is refused.
func TestConfigParamsAreDirectives(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.conf")
	for _, st := range settingList {
		os.WriteFile(p, []byte(st.name+" 1\n"), 0o600)
		var cfg Config
		if err := ReadConfigFile(p, &cfg); err != nil && strings.Contains(err.Error(), "unknown directive") {
			t.Errorf("%s: %v", st.name, err)
		}
	}
	os.WriteFile(p, []byte("protected-mdoe no\n"), 0o600)
	var cfg Config
	if err := ReadConfigFile(p, &cfg); err == nil || !strings.Contains(err.Error(), `unknown directive "protected-mdoe"`) {
		t.Errorf("a misspelt directive: %v", err)
	}
}

// paramsDoc is the list of CONFIG parameters docs/operations.md holds
// between its markers, made from the table.
func paramsDoc() string {
	aliases := map[string][]string{}
	for _, p := range ConfigParams() {
		if p.AliasOf != "" {
			aliases[p.AliasOf] = append(aliases[p.AliasOf], "`"+p.Name+"`")
		}
	}
	var b strings.Builder
	b.WriteString("| parameter | default | `CONFIG SET` | |\n|---|---|---|---|\n")
	for _, p := range ConfigParams() {
		if p.AliasOf != "" {
			continue
		}
		name := "`" + p.Name + "`"
		if a := aliases[p.Name]; len(a) > 0 {
			name += " (also " + strings.Join(a, ", ") + ")"
		}
		set, note := "no: at start", ""
		if p.Mutable {
			set = "yes"
		}
		if p.Secret {
			note = "secret: `(redacted)` in `SLOWLOG` and the log"
		}
		def := "`" + p.Default + "`"
		switch {
		case p.Name == "maxmemory":
			def = "`0`: 90 % of the memory the process may use"
		case p.Default == "":
			def = "none"
		}
		b.WriteString("| " + name + " | " + strings.ReplaceAll(def, "|", "\\|") + " | " + set + " | " + note + " |\n")
	}
	return b.String()
}

// docs/operations.md lists every CONFIG parameter as the table has it
// (name, aliases, whether CONFIG SET changes it, whether it is secret).
// BLOOMKIT_WRITE_DOCS=1 writes the list into the file.
func TestConfigParamsDocumented(t *testing.T) {
	const path = "../docs/operations.md"
	const begin, end = "<!-- config parameters: begin (generated from the parameter table; see TestConfigParamsDocumented) -->\n", "<!-- config parameters: end -->"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers %q and %q", path, begin, end)
	}
	want := paramsDoc()
	if got := doc[i+len(begin) : j]; got != want {
		if os.Getenv("BLOOMKIT_WRITE_DOCS") == "1" {
			if err := os.WriteFile(path, []byte(doc[:i+len(begin)]+want+doc[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s's parameter list differs from the table (BLOOMKIT_WRITE_DOCS=1 rewrites it); want:\n%s", path, want)
	}
}

// The config file and CONFIG SET take the same values for every mutable
// parameter: a value one accepts and the other refuses would make a line
// CONFIG REWRITE wrote, or a CONFIG SET a file allows, fail. (tls-* and
// the ports are left out: whether their CONFIG SET succeeds depends on the
// certificate files and on the ports being free, not on the value alone.)
func TestConfigFileAndSetAgree(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	rc := dialRaw(t, s.Addr())
	p := filepath.Join(t.TempDir(), "c.conf")
	probes := []string{"-1", "0", "1", "5", "1023", "1024", "16384", "65535", "65536", "2147483647", "2147483648",
		"abc", "yes", "no", "1mb", "5s", "0.5", "", "1e3", "allchannels", "always"}
	for _, st := range settingList {
		if st.set == nil || st.tls || st.name == "tls-port" || st.name == "port" {
			continue
		}
		for _, v := range probes {
			os.WriteFile(p, []byte(st.name+" "+configQuote(v)+"\n"), 0o600)
			var cfg Config
			ferr := ReadConfigFile(p, &cfg)
			if ferr == nil && len(cfg.FilterParams) > 0 {
				_, ferr = newFilterConfig(cfg.FilterParams)
			}
			old := st.get(s)
			got := rc.do("CONFIG", "SET", st.name, v)
			if r := rc.do("CONFIG", "SET", st.name, old); r != "+OK" {
				t.Fatalf("CONFIG SET %s back to %q: %s", st.name, old, r)
			}
			if (ferr == nil) != (got == "+OK") {
				t.Errorf("%s %q: the config file says %v, CONFIG SET %s", st.name, v, ferr, got)
			}
		}
	}
}

// Each parameter's default in the table is what CONFIG GET answers on a
// server nothing configured (the port, the data directory and maxmemory's
// 0, which depend on where and on what machine it runs, aside).
func TestConfigDefaults(t *testing.T) {
	s := startServer(t, Config{Dir: t.TempDir()})
	rc := dialRaw(t, s.Addr())
	for _, st := range settingList {
		switch st.name {
		case "port", "dir", "maxmemory":
			continue
		}
		if got, want := rc.do("CONFIG", "GET", st.name), "{"+st.name+":"+strconv.Quote(st.def)+"}"; got != want && got != "["+strconv.Quote(st.name)+" "+strconv.Quote(st.def)+"]" {
			t.Errorf("CONFIG GET %s = %s, the table's default is %q", st.name, got, st.def)
		}
	}
}
