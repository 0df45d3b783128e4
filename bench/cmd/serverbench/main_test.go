package main

import (
	"flag"
	"strings"
	"testing"
)

// TestCommandLineNamesNoMachinePath checks that the command a report quotes
// keeps the flags that shape the run but not the absolute paths given to
// -module, -repo, -redis-server or -redis-benchmark.
func TestCommandLineNamesNoMachinePath(t *testing.T) {
	fs := flag.NewFlagSet("serverbench", flag.ContinueOnError)
	fs.String("module", "", "")
	fs.String("repo", "..", "")
	fs.String("redis-server", "redis-server", "")
	fs.String("redis-benchmark", "redis-benchmark", "")
	fs.String("out", "SERVER.md", "")
	fs.Int("reps", 5, "")
	err := fs.Parse([]string{"-module", "/srv/mods/redisbloom.so", "-repo", "/srv/trees/old-build",
		"-redis-server", "/opt/redis7/bin/redis-server", "-redis-benchmark", "/opt/redis7/bin/redis-benchmark",
		"-out", "/srv/out/SERVER.md", "-reps", "3"})
	if err != nil {
		t.Fatal(err)
	}
	got := commandLine(fs)
	for _, p := range []string{"/srv", "/opt"} {
		if strings.Contains(got, p) {
			t.Errorf("command line %q names the path %s", got, p)
		}
	}
	for _, want := range []string{`-module "$BLOOMKIT_REDISBLOOM_MODULE"`, "-reps 3", "-repo ", "-redis-server ", "-redis-benchmark "} {
		if !strings.Contains(got, want) {
			t.Errorf("command line %q lacks %q", got, want)
		}
	}
}

// TestCommandLineKeepsRelativePaths checks that a path relative to bench/,
// which names no machine, is quoted as given.
func TestCommandLineKeepsRelativePaths(t *testing.T) {
	fs := flag.NewFlagSet("serverbench", flag.ContinueOnError)
	fs.String("repo", "..", "")
	if err := fs.Parse([]string{"-repo", "../../other"}); err != nil {
		t.Fatal(err)
	}
	if got := commandLine(fs); !strings.Contains(got, "-repo ../../other") {
		t.Errorf("command line %q does not quote -repo ../../other", got)
	}
}
