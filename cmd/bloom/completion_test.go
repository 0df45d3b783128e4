package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// bloom completion: each script names every subcommand; the bash one is
// valid bash and completes subcommands and flags; zsh and fish check their
// own scripts when installed.
func TestCompletion(t *testing.T) {
	outputOnly(t)
	for _, shell := range []string{"bash", "zsh", "fish"} {
		r := bloomIn(t, t.TempDir(), "", "completion", shell).want(t, exitOK, "completion "+shell)
		for _, c := range commands {
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(c.name) + `\b`).MatchString(r.stdout) {
				t.Errorf("the %s script does not name %s", shell, c.name)
			}
		}
		script := filepath.Join(t.TempDir(), "bloom."+shell)
		if err := os.WriteFile(script, []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		sh, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("%s is not installed: its script's syntax is not checked", shell)
			continue
		}
		if out, err := exec.Command(sh, "-n", script).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", shell, err, out)
		}
		if shell != "bash" {
			continue
		}
		// What bash offers after "bloom b", "bloom bu" and "bloom build --st".
		complete := func(words ...string) string {
			probe := `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _bloom; echo "${COMPREPLY[*]}"`
			out, err := exec.Command(sh, append([]string{"-c", probe, "bash", script}, words...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("bash completion of %q: %v\n%s", words, err, out)
			}
			return strings.TrimSpace(string(out))
		}
		if got := complete("bloom", "b"); got != "build backup" {
			t.Errorf("bloom b<TAB>: %q, want build backup", got)
		}
		if got := complete("bloom", "bu"); got != "build" {
			t.Errorf("bloom bu<TAB>: %q, want build", got)
		}
		if got := complete("bloom", "build", "--st"); got != "--static --strict" {
			t.Errorf("bloom build --st<TAB>: %q, want --static --strict", got)
		}
		if got := complete("bloom", "ping", "--t"); got != "--timeout" {
			t.Errorf("bloom ping --t<TAB>: %q, want --timeout", got)
		}
	}
	r := bloomIn(t, t.TempDir(), "", "completion", "tcsh")
	if r.code != exitError || !strings.Contains(r.stderr, `unknown shell "tcsh"`) {
		t.Errorf("completion tcsh: exit %d, stderr %q", r.code, r.stderr)
	}
}

// bloom help lists the subcommands in two aligned columns, however long the
// longest name.
func TestHelpAligned(t *testing.T) {
	outputOnly(t)
	r := bloomIn(t, t.TempDir(), "", "help").want(t, exitOK, "help")
	_, list, _ := strings.Cut(r.stdout, "Subcommands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	col := -1
	lines := strings.Split(list, "\n")
	if len(lines) != len(commands) {
		t.Fatalf("%d lines for %d subcommands:\n%s", len(lines), len(commands), list)
	}
	for _, l := range lines {
		m := regexp.MustCompile(`^  (\S+) +`).FindStringIndex(l)
		if m == nil {
			t.Fatalf("not a subcommand line: %q", l)
		}
		if col == -1 {
			col = m[1]
		} else if m[1] != col {
			t.Errorf("summary starts at column %d, the first at %d:\n%s", m[1], col, list)
		}
	}
}
