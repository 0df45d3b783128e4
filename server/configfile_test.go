package server

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestConfigRewriteAnyBytes: any byte string set with CONFIG SET survives
// CONFIG REWRITE and a restart unchanged. A requirepass of
// "s3cret\nrequirepass" used to be written with a raw newline: after the
// restart the server needed no password (and "s3cret\nbind" made the next
// start panic).
func TestConfigRewriteAnyBytes(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for _, pass := range []string{"s3cret\nrequirepass", "s3cret\nbind", string(all), `"'\x41 #x`, "a\r\n\"\\", "é\xff\x00"} {
		file := filepath.Join(t.TempDir(), "bloomkit.conf")
		if err := os.WriteFile(file, []byte("maxclients 10\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s := startServer(t, Config{NoPersistence: true, ConfigFile: file})
		rc := dialRaw(t, s.Addr())
		if got := rc.do("CONFIG", "SET", "requirepass", pass); got != "+OK" {
			t.Fatal(got)
		}
		if got := rc.do("CONFIG", "REWRITE"); got != "+OK" {
			t.Fatal(got)
		}
		s.Close()
		cfg := Config{NoPersistence: true}
		if err := ReadConfigFile(file, &cfg); err != nil {
			raw, _ := os.ReadFile(file)
			t.Fatalf("%q: reading the rewritten file: %v\n%s", pass, err, raw)
		}
		cfg.Addr = "127.0.0.1:0"
		s2 := startServer(t, cfg)
		rc2 := dialRaw(t, s2.Addr())
		if got := rc2.do("PING"); !strings.HasPrefix(got, "-NOAUTH") {
			t.Fatalf("%q: after restart PING answered %s without AUTH", pass, got)
		}
		if got := rc2.do("AUTH", pass); got != "+OK" {
			t.Fatalf("%q: AUTH with the password after restart: %s", pass, got)
		}
		if got := rc2.do("CONFIG", "GET", "requirepass"); got != `["requirepass" `+strconv.Quote(pass)+`]` {
			t.Fatalf("%q: CONFIG GET after restart: %s", pass, got)
		}
	}
}

// TestConfigFileBadLines: a bad line is an error naming file:line, never a
// panic (a bare "bind" used to crash start-up with index out of range).
func TestConfigFileBadLines(t *testing.T) {
	for _, line := range []string{"bind", "bind   ", "port", `requirepass "unclosed`, `requirepass "a"b`, "maxclients 1 2"} {
		file := filepath.Join(t.TempDir(), "bloomkit.conf")
		os.WriteFile(file, []byte("# ok\n"+line+"\n"), 0o600)
		var cfg Config
		err := ReadConfigFile(file, &cfg)
		if err == nil || !strings.Contains(err.Error(), file+":2:") {
			t.Errorf("%q: %v, want an error naming %s:2", line, err, file)
		}
	}
}

// FuzzConfigFile: the config file reader never panics, and every value
// configQuote writes reads back unchanged.
func FuzzConfigFile(f *testing.F) {
	f.Add([]byte("bind\n"), "s3cret\nbind")
	f.Add([]byte("requirepass \"a\\x41\\n\" \nport 1\n"), "\xff\"")
	f.Add([]byte("maxmemory 1gb\nappendonly 'no'\n"), "")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, file []byte, value string) {
		path := filepath.Join(dir, "fuzz.conf")
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		var cfg Config
		ReadConfigFile(path, &cfg)
		words, err := splitConfigLine("requirepass " + configQuote(value))
		if err != nil || len(words) != 2 || words[1] != value {
			t.Fatalf("%q quoted as %s reads back as %q (%v)", value, configQuote(value), words, err)
		}
	})
}
