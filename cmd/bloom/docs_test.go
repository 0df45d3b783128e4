package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocCommands runs the commands of README.md, docs/*.md and
// examples/*/README.md, so that the documentation cannot drift from the
// program:
//
//   - In a ```sh block every line is a command; it must exit 0 (or 1, a
//     negative answer).
//   - In a plain ``` or ```console block, lines starting with "$ " are
//     commands and the lines up to the next "$ " are their output (stdout
//     and stderr), compared exactly; a block without "$ " is a synopsis.
//   - An HTML comment "<!-- doctest setup ... -->" holds shell lines run
//     first (making the files the commands read); "<!-- doctest skip: WHY -->"
//     right before a block leaves it out, saying why.
//
// Each file's commands run in order in one fresh directory, under bash with
// the test's bloom binary first on PATH; "go run ./cmd/bloom" means that
// binary. Commands that do not run bloom (servers, examples, curl) must be
// in elsewhere with the test that runs them; a new one fails this test until
// it is.
func TestDocCommands(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is needed to run the documented commands")
	}
	root := filepath.Join("..", "..")
	files := []string{filepath.Join(root, "README.md")}
	for _, pat := range []string{"docs/*.md", "examples/*/README.md"} {
		m, _ := filepath.Glob(filepath.Join(root, pat))
		files = append(files, m...)
	}
	used := map[string]bool{}
	for _, file := range files {
		rel, _ := filepath.Rel(root, file)
		t.Run(rel, func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			doc := parseDoc(string(src))
			dir := t.TempDir()
			if doc.setup != "" {
				if out, err := shell(dir, doc.setup); err != nil {
					t.Fatalf("setup: %v\n%s", err, out)
				}
			}
			for _, c := range doc.commands {
				line := c.line
				if !runsBloom(line) {
					if test, ok := elsewhere[line]; ok {
						used[line] = true
						t.Logf("line %d: %s — run by %s", c.lineNo, line, test)
						continue
					}
					t.Errorf("line %d: %q does not run bloom and no test is named for it in elsewhere (docs_test.go)", c.lineNo, line)
					continue
				}
				out, err := shell(dir, strings.Replace(line, "go run ./cmd/bloom", "bloom", 1))
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				if c.output != nil {
					want := strings.Join(c.output, "\n")
					if got := strings.TrimRight(trimLines(out), "\n"); got != want {
						t.Errorf("line %d: $ %s\n--- got:\n%s\n--- the doc shows:\n%s", c.lineNo, line, got, want)
					}
					continue
				}
				if code > 1 {
					t.Errorf("line %d: %s: exit %d\n%s", c.lineNo, line, code, out)
				}
			}
		})
	}
	for line := range elsewhere {
		if !used[line] {
			t.Errorf("elsewhere names %q, which no document shows any more", line)
		}
	}
}

// elsewhere maps each documented command that does not run bloom to the
// test that runs it (or what it is).
var elsewhere = map[string]string{
	// The top-level README.
	"make test                         # gofmt, go vet and every test (race detector on)": "CI (.ci/run), which is what runs this test",
	"make build                        # ./bin/bloom":                                       "TestMakeBuild",
	"go run ./cmd/bloom serve          # the server: 127.0.0.1:6479, data in ./bloomkit-data": "server's tests (bloom serve is the lead's; its flags are tested there)",
	"go run ./cmd/bloom serve                          # 127.0.0.1:6479, data in ./bloomkit-data": "server's tests",
	"redis-cli -p 6479 BF.ADD urls https://a.example   # → (integer) 1":                           "server's redis-cli tests",
	"redis-cli -p 6479 BF.EXISTS urls https://b.example  # → (integer) 0":                         "server's redis-cli tests",
	"go run ./cmd/bloom serve                      # 127.0.0.1:6479, data in ./bloomkit-data":     "server's tests",
	"redis-cli -p 6479 BF.ADD urls https://a.example   # → 1":                                     "server's redis-cli tests",
	"go install github.com/bloomkit/bloomkit/cmd/bloom@latest":                                    "TestMakeBuild (the same package, built)",
}

// doc is what a Markdown file gives the runner.
type doc struct {
	setup    string
	commands []docCommand
}

type docCommand struct {
	line   string
	lineNo int
	output []string // nil: not compared
}

var (
	setupRe = regexp.MustCompile(`(?s)<!-- doctest setup\n(.*?)-->`)
	skipRe  = regexp.MustCompile(`^<!-- doctest skip: .+-->$`)
)

// parseDoc extracts the setup and the commands of a Markdown file.
func parseDoc(src string) doc {
	var d doc
	for _, m := range setupRe.FindAllStringSubmatch(src, -1) {
		d.setup += m[1]
	}
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		info := strings.TrimSpace(strings.TrimPrefix(lines[i], "```"))
		skip := i > 0 && skipRe.MatchString(strings.TrimSpace(lines[i-1]))
		start := i + 1
		end := start
		for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
			end++
		}
		body := lines[start:end]
		i = end
		if skip {
			continue
		}
		switch info {
		case "sh", "bash":
			for j, l := range body {
				l = strings.TrimSpace(l)
				if l == "" || strings.HasPrefix(l, "#") {
					continue
				}
				d.commands = append(d.commands, docCommand{line: l, lineNo: start + j + 1})
			}
		case "", "console", "text":
			var cur *docCommand
			for j, l := range body {
				if strings.HasPrefix(l, "$ ") {
					d.commands = append(d.commands, docCommand{line: strings.TrimPrefix(l, "$ "), lineNo: start + j + 1, output: []string{}})
					cur = &d.commands[len(d.commands)-1]
					continue
				}
				if cur != nil {
					cur.output = append(cur.output, strings.TrimRight(l, " "))
				}
			}
			if cur != nil {
				for len(cur.output) > 0 && cur.output[len(cur.output)-1] == "" {
					cur.output = cur.output[:len(cur.output)-1]
				}
			}
		}
	}
	return d
}

// runsBloom reports whether a command line runs the bloom binary.
func runsBloom(line string) bool {
	if strings.HasPrefix(line, "go run ./cmd/bloom ") && !strings.HasPrefix(line, "go run ./cmd/bloom serve") {
		return true
	}
	for _, part := range regexp.MustCompile(`\||&&|;|\$\(`).Split(line, -1) {
		if f := strings.Fields(part); len(f) > 0 && f[0] == "bloom" {
			return true
		}
	}
	return false
}

// shell runs script under bash in dir with the test binary's directory
// first on PATH, and returns stdout and stderr together.
func shell(dir, script string) (string, error) {
	cmd := exec.Command("bash", "-c", "set -o pipefail\n"+script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.Join(lines, "\n")
}

// TestMakeBuild checks what docs/cli.md and README.md say about building:
// `make build` puts the binary in ./bin/bloom (not in the bloom/ package
// folder, where `go build -o bloom ./cmd/bloom` would put it).
func TestMakeBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	out := t.TempDir()
	cmd := exec.Command("make", "-s", "build", "GO=go")
	cmd.Dir = root
	// Build into a temporary GOBIN-like place: copy the rule's command with
	// -o pointing there, after checking the rule is what the docs say.
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "\n\t$(GO) build -o bin/bloom ./cmd/bloom\n") {
		t.Fatal("the Makefile's build rule no longer builds bin/bloom, as the docs say")
	}
	cmd = exec.Command("go", "build", "-o", filepath.Join(out, "bin", "bloom"), "./cmd/bloom")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	if b, err := exec.Command(filepath.Join(out, "bin", "bloom"), "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(b), "bloom ") {
		t.Errorf("bin/bloom version: %v %s", err, b)
	}
}
