// Package examples_test runs the commands of every example's README, as a
// user would type them from the repository's root, so that the READMEs
// cannot drift from the programs (package internal/doctest says how blocks
// are read).
package examples_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/examples/internal/pgtest"
	"github.com/bloomkit/bloomkit/examples/internal/prebuilt"
	"github.com/bloomkit/bloomkit/internal/doctest"
)

// goShim stands in for go on PATH: "go run ./NAME ARGS" runs the example
// built by the test; anything else goes to the real go.
const goShim = `#!/usr/bin/env bash
if [ "$1" = run ] && [ -x "$EXAMPLES_BIN/${2#./}" ]; then b="$EXAMPLES_BIN/${2#./}"; shift 2; exec "$b" "$@"; fi
PATH="${PATH#*:}" exec go "$@"
`

func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every example")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is needed to run the documented commands")
	}
	readmes, _ := filepath.Glob("*/README.md")
	if len(readmes) < 6 {
		t.Fatalf("found %d example READMEs", len(readmes))
	}
	// The examples and bloom itself, built once (or prebuilt by make test:
	// package prebuilt).
	bin := prebuilt.Dir()
	if bin == "" {
		bin = t.TempDir()
		progs := []string{prebuilt.Bloom(t)}
		for _, r := range readmes {
			progs = append(progs, prebuilt.Example(t, filepath.Dir(r)))
		}
		for _, p := range progs {
			if err := os.Rename(p, filepath.Join(bin, filepath.Base(p))); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		for _, r := range readmes {
			prebuilt.Example(t, filepath.Dir(r)) // fails the test when missing
		}
		prebuilt.Bloom(t)
	}
	shims := t.TempDir()
	if err := os.WriteFile(filepath.Join(shims, "go"), []byte(goShim), 0o755); err != nil {
		t.Fatal(err)
	}
	path := shims + string(os.PathListSeparator) + bin + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, readme := range readmes {
		name := filepath.Dir(readme)
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(readme)
			if err != nil {
				t.Fatal(err)
			}
			d := doctest.Parse(string(src))
			if len(d.Blocks) == 0 {
				t.Fatalf("%s shows no commands", readme)
			}
			env := append(os.Environ(), "PATH="+path, "EXAMPLES_BIN="+bin)
			text := string(src)
			if strings.Contains(text, "$DATABASE_URL") {
				env = append(env, "DATABASE_URL="+pgtest.Start(t))
			}
			if strings.Contains(text, "redis-server") {
				if _, err := exec.LookPath("redis-server"); err != nil {
					if os.Getenv("BLOOMKIT_REQUIRE_REDIS") == "1" {
						t.Fatal("redis-server is not installed, and BLOOMKIT_REQUIRE_REDIS=1")
					}
					t.Skip("redis-server is not installed (make deps installs it)")
				}
			}
			// The directory a user runs the README from: the repository's
			// root, holding examples/.
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "examples"), 0o755); err != nil {
				t.Fatal(err)
			}
			r := &doctest.Runner{Dir: dir, Env: env}
			fails, err := r.Run(d)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fails {
				t.Errorf("%s: %s", readme, f)
			}
		})
	}
}
