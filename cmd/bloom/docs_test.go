package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/doctest"
	"github.com/bloomkit/bloomkit/internal/poll"
)

// TestDocCommands runs every command that README.md and docs/*.md show
// (package doctest says how blocks are read), with the test's bloom binary
// first on PATH and "go run ./cmd/bloom" meaning that binary, so that the
// documents cannot drift from the program. The examples' READMEs are run by
// the examples module's TestReadmeCommands.
func TestDocCommands(t *testing.T) {
	outputOnly(t)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is needed to run the documented commands")
	}
	root := filepath.Join("..", "..")
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "README.zh-CN.md")}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, docs...)
	shims := t.TempDir()
	if err := os.WriteFile(filepath.Join(shims, "go"), []byte(goShim), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+shims+string(os.PathListSeparator)+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	// The documents run in parallel, except those that use the same TCP
	// port (a server's), which take turns: each holds the locks of its
	// ports, taken in order.
	var mu sync.Mutex
	ran := 0
	portLocks := map[string]*sync.Mutex{}
	docPorts := map[string][]string{}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		docPorts[file] = portsOf(string(src))
		for _, p := range docPorts[file] {
			if portLocks[p] == nil {
				portLocks[p] = new(sync.Mutex)
			}
		}
	}
	t.Cleanup(func() { // after the parallel subtests
		if ran < 30 {
			t.Errorf("only %d documented commands found: is the parser still reading the documents?", ran)
		}
	})
	for _, file := range files {
		rel, _ := filepath.Rel(root, file)
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			for _, p := range docPorts[file] {
				portLocks[p].Lock()
				defer portLocks[p].Unlock()
				if p == defaultPort {
					defaultPortFree(t)
				}
			}
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			d := doctest.Parse(string(src))
			for _, s := range d.Skips {
				t.Logf("skipped: %s", s)
			}
			mu.Lock()
			for _, b := range d.Blocks {
				ran += len(b.Script) + len(b.Console)
			}
			mu.Unlock()
			r := &doctest.Runner{Dir: t.TempDir(), Env: env}
			fails, err := r.Run(d)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fails {
				t.Errorf("%s: %s", rel, f)
			}
		})
	}
}

// defaultPort is bloom serve's port when none is given.
const defaultPort = "6479"

// defaultPortFree fails the test unless 127.0.0.1:6479 is free, waiting a
// few seconds for the server of the document before to go: a document
// that starts bloom serve on the default port would otherwise send its
// commands to whatever server listens there (a developer's own, say), and
// write into it.
func defaultPortFree(t *testing.T) {
	t.Helper()
	err := poll.Wait(10*time.Second, func() error {
		l, err := net.Listen("tcp", "127.0.0.1:"+defaultPort)
		if err != nil {
			return err
		}
		return l.Close()
	})
	if err != nil {
		t.Fatalf("port %s, bloom serve's default, is in use (%v): the documents' commands would talk to the server there; stop it and run the test again", defaultPort, err)
	}
}

// portNumber is a number that may be a TCP port in a document: after a
// colon (host:port), -p, --port or "port ".
var portNumber = regexp.MustCompile(`(?::|-p |--port |port )([0-9]{4,5})\b`)

// serveDefault is a line that starts bloom serve (outside inline code);
// without --addr or --port it listens on the default port, 6479.
var serveDefault = regexp.MustCompile(`(^|[\s$])(bloom|go run \./cmd/bloom) serve\b`)

// portsOf lists, sorted, the numbers in a document that may be ports it
// listens on. A number that is not one only makes two documents take turns.
func portsOf(src string) []string {
	set := map[string]bool{}
	for _, m := range portNumber.FindAllStringSubmatch(src, -1) {
		set[m[1]] = true
	}
	for _, line := range strings.Split(src, "\n") {
		if serveDefault.MatchString(line) && !strings.Contains(line, "`") &&
			!strings.Contains(line, "--addr") && !strings.Contains(line, "--port") {
			set[defaultPort] = true
		}
	}
	var ports []string
	for p := range set {
		ports = append(ports, p)
	}
	sort.Strings(ports)
	return ports
}

// goShim stands in for go on PATH: "go run ./cmd/bloom ARGS" runs the test's
// binary; anything else goes to the real go.
const goShim = `#!/usr/bin/env bash
if [ "$1" = run ] && [ "$2" = ./cmd/bloom ]; then shift 2; exec bloom "$@"; fi
PATH="${PATH#*:}" exec go "$@"
`

// TestMakeBuild checks what docs/cli.md and README.md say about building:
// `make build` puts the binary in ./bin/bloom, not in the bloom/ package
// folder where `go build -o bloom ./cmd/bloom` lands in a clone, and stamps
// the version, commit and date `bloom --version` prints.
func TestMakeBuild(t *testing.T) {
	outputOnly(t)
	root := filepath.Join("..", "..")
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "\nBIN ?= bin/bloom\n") {
		t.Fatal("the Makefile's build rule no longer builds bin/bloom, as the docs say")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	out := filepath.Join(t.TempDir(), "bin", "bloom")
	const commit = "0123456789abcdef0123456789abcdef01234567"
	cmd := exec.Command("make", "-s", "build", "BIN="+out, "VERSION=v9.8.7", "COMMIT="+commit, "DATE=2026-11-25T18:00:00Z")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, b)
	}
	b, err := exec.Command(out, "--version").CombinedOutput()
	want := "bloom 9.8.7 (commit 0123456789ab, 2026-11-25T18:00:00Z, go"
	got := string(b)
	// A build from a working tree with changes says ", modified" (when go
	// stamps version control information: -buildvcs): the edit-compile
	// loop runs this test on such a tree.
	if st, _ := exec.Command("git", "-C", root, "status", "--porcelain").Output(); len(st) > 0 {
		got = strings.Replace(got, ", modified", "", 1)
	}
	if err != nil || !strings.HasPrefix(got, want) {
		t.Errorf("bin/bloom --version: %v %q, want %q...", err, b, want)
	}
}

// The documents that listen on the default port take turns; the others run
// in parallel.
func TestPortsOf(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"go run ./cmd/bloom serve &   # 127.0.0.1:6479\n", "6479"},
		{"bloom serve --addr 127.0.0.1:26480 &\n", "26480"},
		{"`bloom serve` answers BF.ADD\nredis-cli -p 26473 ping\n", "26473"},
		{"bloom build -n 1000 -o f.bf\n", ""},
	} {
		if got := strings.Join(portsOf(c.src), " "); got != c.want {
			t.Errorf("portsOf(%q) = %q, want %q", c.src, got, c.want)
		}
	}
}
