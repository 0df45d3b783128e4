package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The tests run the built binary, as users do: TestMain builds it once into
// a temporary directory.

var update = flag.Bool("update", false, "write golden files in testdata/ that are missing (never overwrites)")

// bin is the path of the built bloom binary.
var bin string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "bloom-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bin = filepath.Join(dir, "bloom")
	// make test builds bloom once (without -race) into $BLOOMKIT_TEST_BIN
	// for every package's tests: the same build as this one's.
	if prebuilt := os.Getenv("BLOOMKIT_TEST_BIN"); prebuilt != "" && !raceEnabled {
		bin = filepath.Join(prebuilt, "bloom")
		if _, err := os.Stat(bin); err != nil {
			fmt.Fprintln(os.Stderr, "BLOOMKIT_TEST_BIN:", err)
			os.Exit(2)
		}
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
		// A race makes the binary exit with status 66, which fails the test
		// that ran it; skip the race runtime's 1 s sleep at every exit.
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building bloom:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one run of the binary produced.
type result struct {
	stdout, stderr string
	code           int
}

// bloomIn runs the binary in dir with stdin and returns its output and exit
// code. A failure to start it fails the test.
func bloomIn(t *testing.T, dir, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running bloom %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

// want checks the exit code, and that stderr is empty on success.
func (r result) want(t *testing.T, code int, what string) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("%s: exit code %d, want %d\nstdout: %s\nstderr: %s", what, r.code, code, r.stdout, r.stderr)
	}
	return r
}

// golden compares got with testdata/name. With -update a missing file is
// written; an existing one is never overwritten, so a change in output is
// always a failing test first.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	want, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
		return
	}
	if err != nil {
		t.Fatalf("%v (run go test -update to create missing golden files)", err)
	}
	if string(want) != got {
		t.Errorf("output differs from %s\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

// writeFile writes content to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// keys returns lines "prefix0\n" ... "prefix<n-1>\n".
func keys(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s%d\n", prefix, i)
	}
	return b.String()
}

func TestHelpEverySubcommand(t *testing.T) {
	outputOnly(t)
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			for _, h := range []string{"--help", "-h"} {
				r := bloomIn(t, "", "", c.name, h).want(t, exitOK, c.name+" "+h)
				if !strings.Contains(r.stdout, "Usage:") || !strings.Contains(r.stdout, "Examples:") {
					t.Errorf("bloom %s %s lacks Usage or Examples:\n%s", c.name, h, r.stdout)
				}
				if !strings.Contains(r.stdout, "bloom "+c.name) {
					t.Errorf("bloom %s %s does not show its own usage line:\n%s", c.name, h, r.stdout)
				}
			}
			r := bloomIn(t, "", "", "help", c.name).want(t, exitOK, "help "+c.name)
			if !strings.Contains(r.stdout, "Examples:") {
				t.Errorf("bloom help %s:\n%s", c.name, r.stdout)
			}
		})
	}
}

func TestTopLevel(t *testing.T) {
	outputOnly(t)
	r := bloomIn(t, "", "", "help").want(t, exitOK, "help")
	for _, name := range []string{"calc", "build", "test", "dedup", "info", "merge"} {
		if !strings.Contains(r.stdout, "\n  "+name+" ") {
			t.Errorf("bloom help does not list %s:\n%s", name, r.stdout)
		}
	}
	r = bloomIn(t, "", "").want(t, exitError, "no arguments")
	if !strings.Contains(r.stderr, "Usage:") {
		t.Errorf("no arguments: usage not on stderr: %q", r.stderr)
	}
	r = bloomIn(t, "", "", "frobnicate").want(t, exitError, "unknown subcommand")
	if !strings.Contains(r.stderr, `unknown subcommand "frobnicate"`) {
		t.Errorf("unknown subcommand: %q", r.stderr)
	}
	r = bloomIn(t, "", "", "calc", "--nope").want(t, exitError, "unknown flag")
	if !strings.Contains(r.stderr, "bloom calc:") || !strings.Contains(r.stderr, "--help") {
		t.Errorf("unknown flag: %q", r.stderr)
	}
}

// outputOnly skips a test under the race detector. Such a test checks what
// one run of the binary prints or writes (golden files, errors, sizes); the
// binary's work there is one goroutine, so the race detector has nothing to
// watch and only makes every run several times slower. The skip message
// says "without -race": make test's reporter (internal/testrun) then runs
// exactly these tests again without the race detector. The tests of
// concurrent code (serve, push/pull, signals, progress, pipes) run under
// -race only.
func outputOnly(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("output-only test: runs in the pass without -race")
	}
}
