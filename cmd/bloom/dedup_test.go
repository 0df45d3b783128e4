package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// exactDedup is what awk '!seen[$0]++' prints.
func exactDedup(in string) string {
	seen := map[string]bool{}
	var b strings.Builder
	for len(in) > 0 {
		line, rest, _ := strings.Cut(in, "\n")
		key := strings.TrimSuffix(line, "\r")
		if !seen[key] {
			seen[key] = true
			b.WriteString(line)
			if len(rest) > 0 || strings.HasSuffix(in, "\n") {
				b.WriteByte('\n')
			}
		}
		in = rest
	}
	return b.String()
}

// urlLines returns lines URL lines of which about dup are repeats.
func urlLines(lines int, dup float64, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	distinct := 0
	for range lines {
		i := distinct
		if distinct > 0 && r.Float64() < dup {
			i = r.IntN(distinct)
		} else {
			distinct++
		}
		fmt.Fprintf(&b, "https://example.com/page/%d?x=%d\n", i, i*7919%1000)
	}
	return b.String()
}

func TestDedupExact(t *testing.T) {
	outputOnly(t)
	in := urlLines(50000, 0.3, 1)
	// At a rate of 1e-9 a false positive among 35,000 lines is very unlikely:
	// the output must be awk's.
	r := bloomIn(t, "", in, "dedup", "-n", "50000", "-p", "1e-9").want(t, exitOK, "dedup")
	if want := exactDedup(in); r.stdout != want {
		t.Fatalf("dedup output differs from awk's: %d bytes, want %d", len(r.stdout), len(want))
	}
	if r.stderr != "" {
		t.Errorf("stderr: %q", r.stderr)
	}
	// Line endings and a last line without a newline are copied unchanged;
	// empty lines are not keys and are all copied.
	edge := "a\nb\r\na\nb\n\n\nc"
	r = bloomIn(t, "", edge, "dedup").want(t, exitOK, "dedup edge cases")
	if r.stdout != "a\nb\r\n\n\nc" {
		t.Errorf("edge cases: %q", r.stdout)
	}
	bloomIn(t, "", "", "dedup").want(t, exitOK, "empty input")
}

// Wrongly dropped lines (false positives) stay near the configured rate, and
// the output is always the exact answer with some lines missing.
func TestDedupRate(t *testing.T) {
	outputOnly(t)
	in := urlLines(100000, 0.3, 2)
	want := strings.SplitAfter(exactDedup(in), "\n")
	r := bloomIn(t, "", in, "dedup", "-n", "70000", "-p", "1%", "--stats").want(t, exitOK, "dedup")
	got := strings.SplitAfter(r.stdout, "\n")
	j := 0
	for _, line := range got {
		for j < len(want) && want[j] != line {
			j++
		}
		if j == len(want) {
			t.Fatalf("output line %q is not a first occurrence in order", line)
		}
		j++
	}
	dropped := len(want) - len(got)
	// Filling to n, a blocked filter at 1% drops about 0.3% of new lines.
	if dropped == 0 || float64(dropped) > 0.01*float64(len(want)-1) {
		t.Errorf("%d of %d distinct lines dropped, want a few hundred", dropped, len(want)-1)
	}
	if !strings.Contains(r.stderr, "100,000 lines read") {
		t.Errorf("--stats: %q", r.stderr)
	}
}

func TestDedupField(t *testing.T) {
	outputOnly(t)
	in := "1,a,x\n2,b,x\n3,a,y\n4,\"a\",z\n5\n6\n"
	r := bloomIn(t, "", in, "dedup", "--field", "2").want(t, exitOK, "dedup --field")
	// Lines without the column are copied through, counted, and reported:
	// they do not share an empty key (which dropped all but the first).
	if r.stdout != "1,a,x\n2,b,x\n5\n6\n" {
		t.Errorf("dedup --field: %q", r.stdout)
	}
	if !strings.Contains(r.stderr, "2 lines had no column 2 (the first is line 5)") {
		t.Errorf("dedup --field: stderr %q", r.stderr)
	}
	r = bloomIn(t, "", in, "dedup", "--field", "2", "--strict").want(t, exitError, "dedup --field --strict")
	if r.stdout != "1,a,x\n2,b,x\n" || !strings.Contains(r.stderr, "line 5 has no column 2") {
		t.Errorf("dedup --field --strict: stdout %q stderr %q", r.stdout, r.stderr)
	}
	for _, cmd := range [][]string{{"dedup"}, {"build", "-n", "10", "-o", "x.bf"}, {"test", "x.bf"}} {
		r = bloomIn(t, t.TempDir(), in, append(cmd, "--field", "0")...).want(t, exitError, "--field 0")
		if !strings.Contains(r.stderr, "--field 0: columns are numbered from 1") {
			t.Errorf("%v --field 0: %q", cmd, r.stderr)
		}
	}
}

func TestDedupState(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	bloomIn(t, dir, "a\nb\na\n", "dedup", "-n", "1000", "--state", "seen.bf").want(t, exitOK, "first run")
	r := bloomIn(t, dir, "b\nc\na\nd\nc\n", "dedup", "--state", "seen.bf").want(t, exitOK, "second run")
	if r.stdout != "c\nd\n" {
		t.Errorf("second run printed %q, want the lines not seen before", r.stdout)
	}
	r = bloomIn(t, dir, "", "info", "seen.bf").want(t, exitOK, "info state")
	if !strings.Contains(r.stdout, "type:         blocked") || !strings.Contains(r.stdout, "planned:      1,000 keys at 0.1%") {
		t.Errorf("state file:\n%s", r.stdout)
	}
	// The state is a filter file like any other.
	bloomIn(t, dir, "", "test", "seen.bf", "a", "b", "c", "d").want(t, exitOK, "test state")
	// -n for an existing state is noted, not applied.
	r = bloomIn(t, dir, "e\n", "dedup", "-n", "5", "--state", "seen.bf").want(t, exitOK, "third run")
	if !strings.Contains(r.stderr, "only size a new state file") {
		t.Errorf("no note about -n: %q", r.stderr)
	}
	// A classic filter from build works as a state too.
	writeFile(t, dir, "old.txt", "x\ny\n")
	bloomIn(t, dir, "", "build", "-n", "100", "-o", "classic.bf", "old.txt").want(t, exitOK, "build")
	r = bloomIn(t, dir, "x\nz\ny\nz\n", "dedup", "--state", "classic.bf").want(t, exitOK, "classic state")
	if r.stdout != "z\n" {
		t.Errorf("classic state: %q", r.stdout)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// A damaged state file is reported and left alone, not replaced by an
// empty filter.
func TestDedupCorruptState(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	bloomIn(t, dir, keys("u", 100), "dedup", "-n", "1000", "--state", "seen.bf").want(t, exitOK, "first run")
	path := filepath.Join(dir, "seen.bf")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{
		"truncated": data[:len(data)/2],
		"bit flip":  flip(data, len(data)/2),
		"not ours":  []byte("hello, world\n"),
	} {
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		r := bloomIn(t, dir, "new\n", "dedup", "--state", "seen.bf").want(t, exitError, name)
		if r.stdout != "" || !strings.Contains(r.stderr, "seen.bf") {
			t.Errorf("%s: stdout %q stderr %q", name, r.stdout, r.stderr)
		}
		if now, _ := os.ReadFile(path); !bytes.Equal(now, bad) {
			t.Errorf("%s: the state file was changed", name)
		}
	}
	// An empty file (as mktemp makes) is no state yet, not a truncated one.
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bloomIn(t, dir, "new\nnew\n", "dedup", "--state", "seen.bf").want(t, exitOK, "empty state")
	bloomIn(t, dir, "", "test", "seen.bf", "new").want(t, exitOK, "state saved from an empty file")
}

func flip(data []byte, i int) []byte {
	c := bytes.Clone(data)
	c[i] ^= 0x10
	return c
}

// SIGTERM in the middle of a stream: what was read is flushed and the state
// saved.
func TestDedupSignalSavesState(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(bin, "dedup", "-n", "1000", "--state", "seen.bf")
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out := bufio.NewReader(stdout)
	for _, line := range []string{"one\n", "two\n", "one\n", "three\n"} {
		io.WriteString(stdin, line)
	}
	// Lines come out while stdin is still open: dedup does not wait for a
	// full buffer.
	for _, want := range []string{"one\n", "two\n", "three\n"} {
		got, err := readLineTimeout(out, 10*time.Second)
		if err != nil || got != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(out)
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitError {
		t.Fatalf("exit code %d (%v), want 2; stderr %q", code, err, stderr.String())
	}
	if len(rest) != 0 || !strings.Contains(stderr.String(), "seen.bf saved after 4 lines") {
		t.Errorf("after SIGTERM: stdout %q, stderr %q", rest, stderr.String())
	}
	bloomIn(t, dir, "", "test", "seen.bf", "one", "two", "three").want(t, exitOK, "saved state")
	r := bloomIn(t, dir, "", "test", "seen.bf", "four").want(t, exitNo, "saved state")
	_ = r
}

func readLineTimeout(r *bufio.Reader, d time.Duration) (string, error) {
	type res struct {
		s   string
		err error
	}
	c := make(chan res, 1)
	go func() {
		s, err := r.ReadString('\n')
		c <- res{s, err}
	}()
	select {
	case x := <-c:
		return x.s, x.err
	case <-time.After(d):
		return "", fmt.Errorf("no line within %v", d)
	}
}

func TestDedupErrors(t *testing.T) {
	outputOnly(t)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"file.txt"}, "dedup reads stdin"},
		{[]string{"-p", "2"}, "not between 0 and 1"},
		{[]string{"--state", "."}, "is a directory"},
		{[]string{"--field", "-2"}, "numbered from 1"},
		{[]string{"--state", "no/such/dir/seen.bf"}, "state no/such/dir/seen.bf cannot be written"},
	} {
		r := bloomIn(t, "", "x\n", append([]string{"dedup"}, c.args...)...).want(t, exitError, strings.Join(c.args, " "))
		if !strings.Contains(r.stderr, c.msg) || r.stdout != "" {
			t.Errorf("dedup %v: stdout %q stderr %q, want %q", c.args, r.stdout, r.stderr, c.msg)
		}
	}
}

func TestDedupScalable(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	in := urlLines(20000, 0.3, 3)
	// Sized for 1,000 lines, a scalable filter grows instead of overfilling.
	r := bloomIn(t, dir, in, "dedup", "--type", "scalable", "-n", "1000", "-p", "1e-6", "--state", "s.bf").want(t, exitOK, "scalable")
	if want := exactDedup(in); r.stdout != want {
		t.Errorf("scalable dedup: %d bytes, want %d", len(r.stdout), len(want))
	}
	if r.stderr != "" {
		t.Errorf("stderr: %q", r.stderr)
	}
	r = bloomIn(t, dir, "", "info", "s.bf").want(t, exitOK, "info")
	if !strings.Contains(r.stdout, "type:         scalable") {
		t.Errorf("info:\n%s", r.stdout)
	}
	// A blocked filter that small overfills, and says so.
	r = bloomIn(t, dir, in, "dedup", "-n", "1000", "-p", "1e-6").want(t, exitOK, "overfilled")
	if !strings.Contains(r.stderr, "more than the 1,000 distinct lines it was sized for (at input line") {
		t.Errorf("no overfill warning: %q", r.stderr)
	}
	bloomIn(t, dir, in, "dedup", "--type", "cuckoo").want(t, exitError, "bad type")
	// A filter without a test-and-add cannot be a state.
	writeFile(t, dir, "k.txt", "a\n")
	bloomIn(t, dir, "", "build", "-n", "10", "--type", "cuckoo", "-o", "c.bf", "k.txt").want(t, exitOK, "build cuckoo")
	r = bloomIn(t, dir, "a\n", "dedup", "--state", "c.bf").want(t, exitError, "cuckoo state")
	if !strings.Contains(r.stderr, "c.bf: a cuckoo filter cannot be used for dedup") {
		t.Errorf("cuckoo state: %q", r.stderr)
	}
}

// TestEmptyLinesOneRule: an empty line is not a key in build, test and
// dedup alike. build skips it; test answers absent for "" (from arguments
// or stdin, whatever the filter holds); dedup copies every empty line
// through (it used to treat "" as a key and drop the second blank line).
func TestEmptyLinesOneRule(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	bloomIn(t, dir, "a\n\nb\n\n", "build", "-n", "10", "-o", "e.bf", "-").want(t, exitOK, "build")
	r := bloomIn(t, dir, "", "test", "e.bf", "", "a").want(t, exitOK, "test")
	if r.stdout != "\tabsent\na\tpresent\n" {
		t.Errorf("test of an empty key: %q", r.stdout)
	}
	// Even a filter whose every bit is set says absent for "".
	full := keys("f", 2000)
	bloomIn(t, dir, full, "build", "-n", "1", "-o", "full.bf", "-").want(t, exitOK, "build an overfull filter")
	if r := bloomIn(t, dir, "", "test", "full.bf", "", "zzz"); r.stdout != "\tabsent\nzzz\tpresent\n" {
		t.Errorf("test of an empty key on a saturated filter: %q", r.stdout)
	}
	if r := bloomIn(t, dir, "x\n\ny\n", "test", "-v", "full.bf"); r.stdout != "\n" {
		t.Errorf("test -v from stdin on a saturated filter: %q", r.stdout)
	}
	r = bloomIn(t, dir, "a\n\nb\n\na\n\n", "dedup").want(t, exitOK, "dedup")
	if r.stdout != "a\n\nb\n\n\n" {
		t.Errorf("dedup of blank lines: %q", r.stdout)
	}
	r = bloomIn(t, dir, "1,a\n2,\n3,b\n4,\n", "dedup", "--field", "2").want(t, exitOK, "dedup --field")
	if r.stdout != "1,a\n2,\n3,b\n4,\n" {
		t.Errorf("dedup --field of empty columns: %q", r.stdout)
	}
}
