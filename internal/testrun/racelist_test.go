package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// raceExempt are the packages with locks, atomics or goroutines that make
// test runs without the race detector, and why.
var raceExempt = map[string]string{
	"./bloom":            "one goroutine's code but for its Sync views, whose tests run under -race (BLOOM_RACE_RUN)",
	"./redisbloom":       "its one atomic is a cache of logarithms filled by whoever asks first; the server's tests, under -race, ask from every goroutine",
	"./internal/testrun": "make test's reporter, a tool: a failure in it shows in every make test",
}

// TestRaceListHoldsConcurrentPackages: every package of the module that
// imports sync or sync/atomic is in the Makefile's RACE list (make test
// runs it under the race detector) or in raceExempt, and every package the
// list names exists. A new package with locks or atomics cannot slip out
// of the race detector's sight unnoticed.
func TestRaceListHoldsConcurrentPackages(t *testing.T) {
	root := filepath.Join("..", "..")
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^RACE := (.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("no RACE := line in the Makefile")
	}
	race := map[string]bool{}
	for _, p := range strings.Fields(string(m[1])) {
		race[p] = true
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	const module = "github.com/bloomkit/bloomkit"
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		pkg := "." + strings.TrimPrefix(f[0], module)
		listed[pkg] = true
		concurrent := false
		for _, imp := range f[1:] {
			concurrent = concurrent || imp == "sync" || imp == "sync/atomic"
		}
		if concurrent && !race[pkg] && raceExempt[pkg] == "" {
			t.Errorf("%s imports sync or sync/atomic but is not in the Makefile's RACE list: add it there (or to raceExempt, saying why)", pkg)
		}
	}
	for p := range race {
		if !listed[p] {
			t.Errorf("the Makefile's RACE list names %s, which is no package of the module", p)
		}
	}
	for p := range raceExempt {
		if !listed[p] {
			t.Errorf("raceExempt names %s, which is no package of the module", p)
		}
	}
}
