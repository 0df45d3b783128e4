// Package doctest runs the shell commands that Markdown documents show, so
// that README.md, docs/*.md and the examples' READMEs cannot drift from the
// programs. cmd/bloom's tests run the bloom commands of README.md and docs/;
// the examples module's tests run the examples' READMEs.
//
// What a document holds, for the runner:
//
//   - A ```sh block is a script: its lines run in order in one bash (so a
//     "cd" carries on to the next line), and every line must exit 0 (a
//     command whose negative answer is shown ends in "|| true") without
//     printing a warning or a note on stderr ("warning:", "note:"): a
//     documented command shows the program used as it should be. A line
//     ending in "&" (before any comment) starts a
//     server: the runner waits until the first 127.0.0.1:PORT the line
//     names accepts connections before going on, and stops every
//     background process when the document is done.
//   - In a plain ``` or ```console block, lines starting with "$ " are
//     commands and the lines up to the next "$ " are their output (stdout
//     and stderr together), compared exactly; a block without "$ " is a
//     synopsis and is not run.
//   - "<!-- doctest setup" ... "-->" holds shell lines run before the
//     document's first command (making the files it reads).
//   - "<!-- doctest skip: WHY -->" on the line before a block leaves that
//     block out, and says why.
package doctest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// Doc is what a Markdown file gives the runner.
type Doc struct {
	Setup  string  // shell lines from doctest setup comments
	Blocks []Block // the blocks to run, in order
	Skips  []string
}

// Block is one fenced block to run.
type Block struct {
	Line    int       // line number of the opening fence
	Script  []Command // a ```sh block: its command lines
	Console []Command // a console block: commands with expected output
}

// Command is one command line, with its expected output in console blocks.
type Command struct {
	Line   int
	Text   string
	Output *string // nil: not compared
}

var (
	setupRe = regexp.MustCompile(`(?s)<!-- doctest setup\n(.*?)-->`)
	skipRe  = regexp.MustCompile(`^<!-- doctest skip: (.+?) ?-->$`)
)

// Parse extracts the setup and the runnable blocks of a Markdown file.
func Parse(src string) Doc {
	var d Doc
	for _, m := range setupRe.FindAllStringSubmatch(src, -1) {
		d.Setup += m[1]
	}
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		info := strings.TrimSpace(strings.TrimPrefix(lines[i], "```"))
		var skip []string
		if i > 0 {
			skip = skipRe.FindStringSubmatch(strings.TrimSpace(lines[i-1]))
		}
		open := i + 1
		end := open
		for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
			end++
		}
		body := lines[open:end]
		i = end
		if skip != nil {
			d.Skips = append(d.Skips, fmt.Sprintf("line %d: %s", open, skip[1]))
			continue
		}
		b := Block{Line: open}
		switch info {
		case "sh", "bash":
			for j, l := range body {
				t := strings.TrimSpace(l)
				if t == "" || strings.HasPrefix(t, "#") {
					continue
				}
				b.Script = append(b.Script, Command{Line: open + j + 1, Text: t})
			}
		case "", "console", "text":
			var out []string
			flush := func() {
				if len(b.Console) == 0 {
					return
				}
				for len(out) > 0 && out[len(out)-1] == "" {
					out = out[:len(out)-1]
				}
				s := strings.Join(out, "\n")
				b.Console[len(b.Console)-1].Output = &s
				out = nil
			}
			for j, l := range body {
				if strings.HasPrefix(l, "$ ") {
					flush()
					b.Console = append(b.Console, Command{Line: open + j + 1, Text: strings.TrimPrefix(l, "$ ")})
					continue
				}
				if len(b.Console) > 0 {
					out = append(out, strings.TrimRight(l, " "))
				}
			}
			flush()
		default:
			continue // go, ini, ...: not shell
		}
		if len(b.Script) > 0 || len(b.Console) > 0 {
			d.Blocks = append(d.Blocks, b)
		}
	}
	return d
}

// Runner runs documents' commands in a directory.
type Runner struct {
	Dir string   // the working directory, shared by every block of a document
	Env []string // the environment (PATH first on it decides which binaries run)
	// Timeout bounds one block; 0 is two minutes.
	Timeout time.Duration
}

// Failure is a command that did not do what the document says.
type Failure struct {
	Line int
	Text string
	Msg  string
}

func (f Failure) String() string { return fmt.Sprintf("line %d: %s: %s", f.Line, f.Text, f.Msg) }

// preamble is bash run before a script: a failing command is recorded,
// and waitport waits for a server to listen.
const preamble = `
doctest_fail() { echo "DOCTEST-FAIL $1 $2" >&3; }
doctest_err=$(mktemp)
trap 'rm -f "$doctest_err"' EXIT
doctest_warned() { grep -qiE '(^|: )(warning|note):' "$doctest_err" && doctest_fail "$1" "printed a warning: $(grep -iE '(^|: )(warning|note):' "$doctest_err" | head -1)"; return 0; }
waitport() { for _ in $(seq 1 600); do (exec 9<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; echo "DOCTEST-FAIL $2 nothing listens on port $1 after 60 s" >&3; }
`

var (
	portRe = regexp.MustCompile(`127\.0\.0\.1:(\d+)`)
	// bgRe matches a line that ends in "&", before any comment.
	bgRe = regexp.MustCompile(`[^&]&\s*(#.*)?$`)
)

// Run runs the document's setup and blocks and returns what failed.
func (r *Runner) Run(d Doc) ([]Failure, error) {
	if d.Setup != "" {
		if out, err := r.bash(d.Setup); err != nil {
			return nil, fmt.Errorf("doctest setup: %v\n%s", err, out)
		}
	}
	var fails []Failure
	for _, b := range d.Blocks {
		if len(b.Script) > 0 {
			fails = append(fails, r.script(b)...)
		}
		for _, c := range b.Console {
			out, err := r.bash(c.Text)
			if _, exit := err.(*exec.ExitError); err != nil && !exit {
				return fails, err
			}
			got := strings.TrimRight(trimLines(out), "\n")
			if c.Output != nil && got != *c.Output {
				fails = append(fails, Failure{c.Line, c.Text, fmt.Sprintf("output differs\n--- got:\n%s\n--- the document shows:\n%s", got, *c.Output)})
			}
		}
	}
	return fails, nil
}

// script runs a sh block as one bash script, each line followed by a check
// of its status, servers waited for.
func (r *Runner) script(b Block) []Failure {
	var s strings.Builder
	s.WriteString(preamble)
	byLine := map[int]Command{}
	for _, c := range b.Script {
		byLine[c.Line] = c
		if bgRe.MatchString(c.Text) {
			s.WriteString(c.Text + "\n")
			if m := portRe.FindStringSubmatch(c.Text); m != nil {
				fmt.Fprintf(&s, "waitport %s %d\n", m[1], c.Line)
			}
			continue
		}
		fmt.Fprintf(&s, "{ %s\n} 2>\"$doctest_err\"\nst=$?; cat \"$doctest_err\" >&2; [ $st = 0 ] || doctest_fail %d \"exit status $st\"; doctest_warned %d\n", c.Text, c.Line, c.Line)
	}
	out, fails, err := r.bashFD3(s.String())
	var res []Failure
	for _, f := range fails {
		var line int
		var msg string
		fmt.Sscanf(f, "%d", &line)
		if i := strings.IndexByte(f, ' '); i >= 0 {
			msg = f[i+1:]
		}
		res = append(res, Failure{line, byLine[line].Text, msg + "\n" + out})
	}
	if err != nil {
		res = append(res, Failure{b.Line, "(block)", fmt.Sprintf("%v\n%s", err, out)})
	}
	return res
}

// bash runs a script and returns stdout and stderr together.
func (r *Runner) bash(script string) (string, error) {
	out, _, err := r.bashFD3(script)
	return out, err
}

// bashFD3 runs a script in its own process group, collecting the lines it
// writes to file descriptor 3 ("DOCTEST-FAIL ..."), and kills whatever it
// left running in the background when it ends.
func (r *Runner) bashFD3(script string) (string, []string, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return "", nil, err
	}
	// Output goes to a file, not a pipe: a server left running in the
	// background would hold a pipe open and Wait would wait for it.
	outFile, err := os.CreateTemp("", "doctest-out-")
	if err != nil {
		pw.Close()
		pr.Close()
		return "", nil, err
	}
	defer os.Remove(outFile.Name())
	defer outFile.Close()
	// The commands' temporary files and directories (a document's
	// `mktemp -d`) go under Dir, so they go when Dir goes.
	tmp := filepath.Join(r.Dir, ".tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		pw.Close()
		pr.Close()
		return "", nil, err
	}
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = r.Dir
	env := r.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(append([]string(nil), env...), "TMPDIR="+tmp)
	cmd.Stdout, cmd.Stderr = outFile, outFile
	cmd.ExtraFiles = []*os.File{pw}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		pr.Close()
		return "", nil, err
	}
	pw.Close()
	var fd3 bytes.Buffer
	copied := make(chan struct{})
	go func() { fd3.ReadFrom(pr); close(copied) }()
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(timeout):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		runErr = fmt.Errorf("still running after %v", timeout)
		<-done
	}
	// Servers started with "&" are still running: stop them, then let them
	// go (their pipes close when they exit).
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	time.Sleep(50 * time.Millisecond)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-copied
	pr.Close()
	outBytes, _ := os.ReadFile(outFile.Name())
	out := string(outBytes)
	var fails []string
	for _, l := range strings.Split(fd3.String(), "\n") {
		if f, ok := strings.CutPrefix(l, "DOCTEST-FAIL "); ok {
			fails = append(fails, f)
		}
	}
	return out, fails, runErr
}

func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.Join(lines, "\n")
}
