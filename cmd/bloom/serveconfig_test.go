package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"

	"github.com/redis/go-redis/v9"
)

// freePort returns a port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// confServer is a bloom serve process started from a config file.
type confServer struct {
	cmd  *exec.Cmd
	log  *strings.Builder
	done chan struct{}
}

// startConf runs the built binary with --config file (and args) and waits
// until port answers a connection; the process is stopped at the end of
// the test if stop was not called.
func startConf(t *testing.T, file string, port int, args ...string) *confServer {
	t.Helper()
	return startServeArgs(t, filepath.Dir(file), port, append([]string{"--config", file}, args...)...)
}

// startServeArgs runs the built binary's serve with args in dir and waits
// until port answers a connection, as startConf.
func startServeArgs(t *testing.T, dir string, port int, args ...string) *confServer {
	t.Helper()
	file := strings.Join(args, " ")
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	cmd.Dir = dir
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s := &confServer{cmd: cmd, log: &log}
	t.Cleanup(func() { s.stopped(t, exited) })
	err := poll.Wait(15*time.Second, func() error {
		select {
		case <-exited:
			return fmt.Errorf("bloom serve %s exited", file)
		default:
		}
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err != nil {
			return fmt.Errorf("bloom serve did not listen on %d: %w", port, err)
		}
		// Listening is not loaded: it answers LOADING meanwhile.
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte("PING\r\n"))
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if strings.HasPrefix(line, "-LOADING") {
			return fmt.Errorf("bloom serve on %d is loading", port)
		}
		return nil
	})
	if err != nil {
		// The log is read once the process has gone (or at the end).
		cmd.Process.Kill()
		<-exited
		t.Fatalf("%v: %s", err, log.String())
	}
	s.done = exited
	return s
}

func (s *confServer) stopped(t *testing.T, exited chan struct{}) {
	select {
	case <-exited:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-exited
		t.Errorf("bloom serve did not stop on SIGTERM")
	}
}

// stop ends the server with SIGTERM and waits for it.
func (s *confServer) stop(t *testing.T) {
	t.Helper()
	s.stopped(t, s.done)
}

func confClient(t *testing.T, port int, user, pass string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), Protocol: 2, Username: user, Password: pass,
		MaxRetries: -1, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	// A server answers LOADING until its data is in memory; a client that
	// may not run PING (NOAUTH) cannot tell, and startServeArgs returns
	// once it listens.
	poll.True(t, 15*time.Second, "the data loaded", func() bool {
		err := c.Ping(context.Background()).Err()
		return err == nil || !strings.HasPrefix(err.Error(), "LOADING ")
	})
	return c
}

// writeConf writes a config file listening on port, with lines after it.
func writeConf(t *testing.T, dir string, port int, lines ...string) string {
	t.Helper()
	file := filepath.Join(dir, "bloomkit.conf")
	body := fmt.Sprintf("bind 127.0.0.1\nport %d\ndir %s\n", port, filepath.Join(dir, "data")) + strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// A config file's user lines define the users: the default user needs
// its password, the other user logs in with its own, and CONFIG REWRITE
// keeps them (written, read back after a restart). Every other setting
// of the file reaches the server (bloom serve starts from the file's
// whole configuration), and CONFIG REWRITE does not write defaults over
// them.
func TestServeConfigFileUsersAndSettings(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	file := writeConf(t, dir, port,
		"user default on >pw ~* &* +@all",
		"user admin on >pw2 ~* &* +@all",
		"bf-error-rate 0.001", "bf-initial-size 1234", "cf-max-expansions 7", "acllog-max-len 9", "acl-pubsub-default allchannels")
	srv := startConf(t, file, port)
	ctx := context.Background()
	if err := confClient(t, port, "", "").Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("PING without AUTH: %v, want NOAUTH (the user lines give default a password)", err)
	}
	admin := confClient(t, port, "admin", "pw2")
	if err := admin.Ping(ctx).Err(); err != nil {
		t.Fatalf("AUTH admin pw2: %v", err)
	}
	for k, want := range map[string]string{"bf-error-rate": "0.001", "bf-initial-size": "1234", "cf-max-expansions": "7",
		"acllog-max-len": "9", "acl-pubsub-default": "allchannels"} {
		if got, err := admin.ConfigGet(ctx, k).Result(); err != nil || got[k] != want {
			t.Errorf("CONFIG GET %s = %v %v, want %q (the file's)", k, got, err, want)
		}
	}
	if err := admin.Do(ctx, "ACL", "SETUSER", "later", "on", ">pw3", "~*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.ConfigRewrite(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(file)
	for _, want := range []string{"bf-error-rate 0.001\n", "bf-initial-size 1234\n", "cf-max-expansions 7\n", "acllog-max-len 9\n", "user admin on ", "user later on ", "user default on "} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("rewritten file lacks %q:\n%s", want, raw)
		}
	}
	srv.stop(t)
	startConf(t, file, port)
	if err := confClient(t, port, "", "").Ping(ctx).Err(); err == nil {
		t.Error("after the restart, PING without AUTH succeeded")
	}
	for _, u := range [][2]string{{"admin", "pw2"}, {"later", "pw3"}, {"default", "pw"}} {
		if err := confClient(t, port, u[0], u[1]).Ping(ctx).Err(); err != nil {
			t.Errorf("after CONFIG REWRITE and a restart, AUTH %s: %v", u[0], err)
		}
	}
}

// aclfile in a config file is the users' file: its users log in, CONFIG
// GET shows it, ACL SAVE writes it and ACL LOAD reads it.
func TestServeConfigFileACLFile(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	acl := filepath.Join(dir, "users.acl")
	if err := os.WriteFile(acl, []byte("user default on >pw ~* &* +@all\nuser admin on >pw2 ~* &* +@all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := writeConf(t, dir, port, "aclfile "+acl)
	srv := startConf(t, file, port)
	ctx := context.Background()
	if err := confClient(t, port, "", "").Ping(ctx).Err(); err == nil {
		t.Fatal("PING without AUTH succeeded: the aclfile's default user has a password")
	}
	admin := confClient(t, port, "admin", "pw2")
	if got, err := admin.ConfigGet(ctx, "aclfile").Result(); err != nil || got["aclfile"] != acl {
		t.Fatalf("CONFIG GET aclfile = %v %v, want %s", got, err, acl)
	}
	if err := admin.Do(ctx, "ACL", "SETUSER", "later", "on", ">pw3", "~*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do(ctx, "ACL", "SAVE").Err(); err != nil {
		t.Fatalf("ACL SAVE: %v", err)
	}
	if err := admin.Do(ctx, "ACL", "LOAD").Err(); err != nil {
		t.Fatalf("ACL LOAD: %v", err)
	}
	srv.stop(t)
	startConf(t, file, port)
	if err := confClient(t, port, "later", "pw3").Ping(ctx).Err(); err != nil {
		t.Errorf("a user ACL SAVE wrote, after a restart: %v", err)
	}
}

// Users made with ACL SETUSER in a server whose config file had none are
// written by CONFIG REWRITE and exist again after a restart.
func TestServeConfigRewriteUsersSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	file := writeConf(t, dir, port)
	srv := startConf(t, file, port)
	ctx := context.Background()
	c := confClient(t, port, "", "")
	for _, cmd := range [][]any{
		{"ACL", "SETUSER", "admin", "on", ">pw2", "~*", "&*", "+@all"},
		{"ACL", "SETUSER", "default", "resetpass", ">pw"},
		{"CONFIG", "REWRITE"},
	} {
		if err := c.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	srv.stop(t)
	startConf(t, file, port)
	if err := confClient(t, port, "", "").Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("after the restart, PING without AUTH: %v, want NOAUTH", err)
	}
	if err := confClient(t, port, "admin", "pw2").Ping(ctx).Err(); err != nil {
		t.Errorf("after the restart, AUTH admin: %v", err)
	}
}

// Every flag of bloom serve has the environment variable its name gives
// (BLOOMKIT_ and the name in capitals), and docs/operations.md's table
// lists both.
func TestServeFlagsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range serveFlags {
		if want := "BLOOMKIT_" + strings.ToUpper(strings.ReplaceAll(f.name, "-", "_")); f.env != want {
			t.Errorf("--%s: environment variable %s, want %s", f.name, f.env, want)
		}
		if !strings.Contains(string(doc), "`--"+f.name) || !strings.Contains(string(doc), "`"+f.env+"`") {
			t.Errorf("docs/operations.md does not list --%s and %s", f.name, f.env)
		}
	}
}

// An environment variable wins over the config file and a flag over both;
// a setting neither gives keeps the file's value; a bad value in the
// environment stops start-up naming the flag.
func TestServeEnvironmentOverFile(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	file := writeConf(t, dir, port, "maxclients 33", "timeout 40", "slowlog-max-len 5")
	t.Setenv("BLOOMKIT_MAXCLIENTS", "55")
	t.Setenv("BLOOMKIT_TIMEOUT", "60")
	startConf(t, file, port, "--timeout", "70")
	got, err := confClient(t, port, "", "").ConfigGet(context.Background(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"maxclients": "55", "timeout": "70", "slowlog-max-len": "5"} {
		if got[k] != want {
			t.Errorf("CONFIG GET %s = %q, want %q", k, got[k], want)
		}
	}
	t.Setenv("BLOOMKIT_MAXCLIENTS", "many")
	r := bloomIn(t, dir, "", "serve", "--config", file)
	if r.code != exitError || !strings.Contains(r.stderr, "--maxclients") {
		t.Errorf("BLOOMKIT_MAXCLIENTS=many: exit %d, %s", r.code, r.stderr)
	}
}

// bloom serve --help shows the flags' defaults, not the environment's
// values: BLOOMKIT_REQUIREPASS is a password.
func TestServeHelpHidesEnvironment(t *testing.T) {
	t.Setenv("BLOOMKIT_REQUIREPASS", "hunter2-secret")
	t.Setenv("BLOOMKIT_MASTERAUTH", "hunter3-secret")
	r := bloomIn(t, t.TempDir(), "", "serve", "--help")
	if r.code != 0 || strings.Contains(r.stdout+r.stderr, "-secret") {
		t.Errorf("bloom serve --help: exit %d, shows a password from the environment:\n%s", r.code, r.stdout)
	}
}
