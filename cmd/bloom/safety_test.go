package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Tests of the CLI's safety: outputs that never destroy what they point at, inputs
// read once and decompressed, overfill said loudly, memory checked first.

func TestOutputStdoutDashAndDevice(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	writeFile(t, dir, "list.txt", keys("k", 100))
	// "-" is stdout: no file named "-", and info/test read "-" as stdin.
	r := bloomIn(t, dir, "", "build", "-n", "100", "-o", "-", "list.txt").want(t, exitOK, "build -o -")
	if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
		t.Error(`build -o - created a file named "-"`)
	}
	if len(r.stdout) < 64 {
		t.Fatalf("build -o -: %d bytes on stdout", len(r.stdout))
	}
	info := bloomIn(t, dir, r.stdout, "info", "-").want(t, exitOK, "info -")
	if !strings.Contains(info.stdout, "planned:      100 keys at 1%") {
		t.Errorf("info -:\n%s", info.stdout)
	}
	bloomIn(t, dir, r.stdout, "test", "-", "k7").want(t, exitOK, "test - KEY")
	bloomIn(t, dir, r.stdout, "test", "-").want(t, exitError, "test - without keys")

	// A device: /dev/stdout is a link to /proc/self/fd/1; it must stay a
	// link and the filter must come out on stdout.
	if fi, err := os.Lstat("/dev/stdout"); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		r2 := bloomIn(t, dir, "", "build", "-n", "100", "-o", "/dev/stdout", "list.txt").want(t, exitOK, "build -o /dev/stdout")
		if r2.stdout != r.stdout {
			t.Errorf("-o /dev/stdout wrote %d bytes to stdout, want the %d of -o -", len(r2.stdout), len(r.stdout))
		}
		if fi, err := os.Lstat("/dev/stdout"); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("/dev/stdout is no longer a symbolic link: %v", err)
		}
	}
}

func TestOutputFIFOAndSymlink(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "list.txt", keys("k", 100))
	want := bloomIn(t, dir, "", "build", "-n", "100", "-o", "-", "list.txt").want(t, exitOK, "build -o -").stdout

	// A FIFO is written in place (streamed), not replaced by a file.
	fifo := filepath.Join(dir, "out.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan []byte)
	go func() {
		data, _ := os.ReadFile(fifo) // blocks until the writer opens it
		got <- data
	}()
	bloomIn(t, dir, "", "build", "-n", "100", "-o", "out.fifo", "list.txt").want(t, exitOK, "build -o FIFO")
	select {
	case data := <-got:
		if string(data) != want {
			t.Errorf("FIFO got %d bytes, want %d", len(data), len(want))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing arrived on the FIFO")
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", fi.Mode(), err)
	}

	// A symbolic link is followed: its target is replaced, the link stays.
	if err := os.Symlink("2024-06-01.bf", filepath.Join(dir, "current.bf")); err != nil {
		t.Fatal(err)
	}
	for range 2 { // once creating the target, once replacing it
		bloomIn(t, dir, "", "build", "-n", "100", "-o", "current.bf", "list.txt").want(t, exitOK, "build -o link")
		fi, err := os.Lstat(filepath.Join(dir, "current.bf"))
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("current.bf is no longer a link: %v", err)
		}
		if data, err := os.ReadFile(filepath.Join(dir, "2024-06-01.bf")); err != nil || string(data) != want {
			t.Fatalf("the link's target does not hold the filter: %v", err)
		}
	}
}

func TestOutputIsInputRefused(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	content := keys("k", 100)
	writeFile(t, dir, "list.txt", content)
	if err := os.Symlink("list.txt", filepath.Join(dir, "alias.txt")); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{"list.txt", "alias.txt", "./list.txt"} {
		r := bloomIn(t, dir, "", "build", "-n", "100", "-o", out, "list.txt").want(t, exitError, "build -o "+out+" list.txt")
		if !strings.Contains(r.stderr, "is also an input") {
			t.Errorf("-o %s: %q", out, r.stderr)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "list.txt")); string(data) != content {
		t.Error("the input was overwritten")
	}
}

// TestSignalRemovesTemp interrupts a build while it writes a large filter:
// the temporary file beside the target must not survive.
func TestSignalRemovesTemp(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "list.txt", keys("k", 10))
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		// 1.2 GB at 1e-9: long enough to write that the signal lands mid-write.
		cmd := exec.Command(bin, "build", "-n", "60M", "-p", "1e-9", "-o", "big.bf", "list.txt")
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sawTemp := false
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			m, _ := filepath.Glob(filepath.Join(dir, ".big.bf.tmp-*"))
			if len(m) > 0 {
				if fi, err := os.Stat(m[0]); err == nil && fi.Size() > 0 {
					sawTemp = true
					break
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
		cmd.Process.Signal(sig)
		err := cmd.Wait()
		if !sawTemp {
			t.Skipf("the write finished before the temporary file was seen (%v)", err)
		}
		if m, _ := filepath.Glob(filepath.Join(dir, ".big.bf.tmp-*")); len(m) > 0 {
			t.Errorf("%v left %v behind", sig, m)
		}
		if _, err := os.Stat(filepath.Join(dir, "big.bf")); err == nil {
			t.Errorf("%v: big.bf exists after an interrupted write", sig)
		}
		if code := cmd.ProcessState.ExitCode(); code != 128+int(sig) {
			t.Errorf("%v: exit code %d, want %d", sig, code, 128+int(sig))
		}
	}
}

func TestPipeInputs(t *testing.T) {
	dir := t.TempDir()
	// A FIFO without -n: refused at once, never a hang on a second open.
	fifo := filepath.Join(dir, "in.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	r := bloomIn(t, dir, "", "build", "-o", "f.bf", "in.fifo").want(t, exitError, "FIFO without -n")
	if !strings.Contains(r.stderr, "-n is required: in.fifo is a pipe") {
		t.Errorf("FIFO without -n: %q", r.stderr)
	}
	// With -n it is read once, all of it.
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.WriteString(keys("f", 1000))
		f.Close()
	}()
	bloomIn(t, dir, "", "build", "-n", "1000", "-o", "f.bf", "in.fifo").want(t, exitOK, "FIFO with -n")
	bloomIn(t, dir, "", "test", "f.bf", "f0", "f999").want(t, exitOK, "keys from the FIFO")
	info := bloomIn(t, dir, "", "info", "f.bf").want(t, exitOK, "info")
	if !strings.Contains(info.stdout, "items:        about 99") && !strings.Contains(info.stdout, "items:        about 1,0") {
		t.Errorf("FIFO filter:\n%s", info.stdout)
	}
	// Process substitution, as a user types it: a /dev/fd pipe.
	if _, err := exec.LookPath("bash"); err == nil {
		cmd := exec.Command("bash", "-c", bin+" build -o ps.bf <(seq 1000)")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "-n is required") {
			t.Errorf("build <(seq 1000) without -n: %v %s", err, out)
		}
		cmd = exec.Command("bash", "-c", bin+" build -n 1000 -o ps.bf <(seq 1000) && "+bin+" info --json ps.bf")
		cmd.Dir = dir
		out, err = cmd.Output()
		var res infoResult
		if err != nil || json.Unmarshal(out, &res) != nil || res.Items == nil || *res.Items < 950 {
			t.Errorf("build -n 1000 <(seq 1000): %v %s", err, out)
		}
	}
}

func TestCompressedInputs(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	content := keys("z", 5000)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(content))
	zw.Close()
	enc, _ := zstd.NewWriter(nil)
	zs := enc.EncodeAll([]byte(content), nil)
	// Named without a telling extension: the magic bytes decide.
	writeFile(t, dir, "keys.gz", gz.String())
	writeFile(t, dir, "keys.data", string(zs))
	writeFile(t, dir, "keys.txt", content)
	plain := bloomIn(t, dir, "", "build", "-o", "-", "keys.txt").want(t, exitOK, "plain").stdout
	for _, name := range []string{"keys.gz", "keys.data"} {
		// Counted (decompressed) without -n, like the plain file.
		r := bloomIn(t, dir, "", "build", "-o", "-", name).want(t, exitOK, name)
		if r.stdout != plain {
			t.Errorf("%s: the filter differs from the one built from the plain file", name)
		}
		// And from stdin, with -n.
		data, _ := os.ReadFile(filepath.Join(dir, name))
		r = bloomIn(t, dir, string(data), "build", "-n", "5000", "-o", "-").want(t, exitOK, name+" on stdin")
		if r.stdout != plain {
			t.Errorf("%s on stdin: the filter differs from the one built from the plain file", name)
		}
	}
	// dedup and test read compressed stdin too.
	writeFile(t, dir, "plain.bf", plain)
	if r := bloomIn(t, dir, gz.String(), "test", "-v", "plain.bf"); r.code != exitNo || r.stdout != "" {
		t.Errorf("test of gzip stdin: every key is in the filter, yet %d and %q", r.code, r.stdout)
	}
	d := bloomIn(t, dir, gz.String(), "dedup").want(t, exitOK, "dedup of gzip")
	if d.stdout != content {
		t.Errorf("dedup of gzip stdin: %d bytes, want %d", len(d.stdout), len(content))
	}
}

func TestSaturatedCounts(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	writeFile(t, dir, "many.txt", keys("s", 2000))
	r := bloomIn(t, dir, "", "build", "-n", "3", "-o", "tiny.bf", "many.txt").want(t, exitOK, "build overfilled")
	if strings.Contains(r.stderr, "18,446,744") || !strings.Contains(r.stderr, "saturated (> ") {
		t.Errorf("build warning: %q", r.stderr)
	}
	info := bloomIn(t, dir, "", "info", "tiny.bf").want(t, exitOK, "info")
	if strings.Contains(info.stdout, "18,446,744") || !strings.Contains(info.stdout, "items:        saturated (> ") {
		t.Errorf("info of a saturated filter:\n%s", info.stdout)
	}
	js := bloomIn(t, dir, "", "info", "--json", "tiny.bf").want(t, exitOK, "info --json")
	var m map[string]any
	if err := json.Unmarshal([]byte(js.stdout), &m); err != nil {
		t.Fatal(err)
	}
	if v, ok := m["items"]; !ok || v != nil || m["saturated"] != true {
		t.Errorf("info --json: items %v (present %v), saturated %v", v, ok, m["saturated"])
	}
	// dedup: the warning never prints MaxUint64 either.
	d := bloomIn(t, dir, keys("d", 20000), "dedup", "-n", "10").want(t, exitOK, "dedup overfilled")
	if strings.Contains(d.stderr, "18,446,744") {
		t.Errorf("dedup: %q", d.stderr)
	}
}

// TestNoFalseOverfill builds filters from exactly N keys: none may be
// called overfilled, while 1.3 N is.
func TestNoFalseOverfill(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	writeFile(t, dir, "three.txt", "a\nb\nc\n")
	r := bloomIn(t, dir, "", "build", "-n", "3", "-o", "three.bf", "three.txt").want(t, exitOK, "3 keys, -n 3")
	if r.stderr != "" {
		t.Errorf("-n 3 with 3 keys warns: %q", r.stderr)
	}
	for i, n := range []int{100, 1000, 5000, 20000} {
		writeFile(t, dir, fmt.Sprintf("n%d.txt", n), keys(fmt.Sprintf("key%d-", i), n))
		for _, typ := range []string{"classic", "blocked"} {
			for seed := range 3 {
				out := fmt.Sprintf("%s-%d-%d.bf", typ, n, seed)
				r := bloomIn(t, dir, "", "build", "-n", fmt.Sprint(n), "--type", typ, "--seed", fmt.Sprint(seed), "-o", out, fmt.Sprintf("n%d.txt", n))
				info := bloomIn(t, dir, "", "info", out).want(t, exitOK, "info")
				if r.stderr != "" || strings.Contains(info.stdout, "more than planned") {
					t.Errorf("%s built from exactly %d keys: build %q\n%s", out, n, r.stderr, info.stdout)
				}
			}
		}
	}
	// Clearly overfilled: said.
	writeFile(t, dir, "over.txt", keys("o", 1300))
	r = bloomIn(t, dir, "", "build", "-n", "1000", "-o", "over.bf", "over.txt").want(t, exitOK, "1.3 N")
	if !strings.Contains(r.stderr, "more than -n 1,000") {
		t.Errorf("1.3 N: %q", r.stderr)
	}
	if info := bloomIn(t, dir, "", "info", "over.bf"); !strings.Contains(info.stdout, "more than planned") {
		t.Errorf("info of 1.3 N:\n%s", info.stdout)
	}
	// --strict makes the overfill an error and writes nothing.
	r = bloomIn(t, dir, "", "build", "-n", "1000", "--strict", "-o", "strict.bf", "over.txt").want(t, exitError, "--strict")
	if !strings.Contains(r.stderr, "--strict") {
		t.Errorf("--strict: %q", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "strict.bf")); err == nil {
		t.Error("--strict wrote the filter")
	}
}

func TestDedupOverfillWarnsAtOnce(t *testing.T) {
	outputOnly(t)
	in := keys("u", 30000)
	r := bloomIn(t, "", in, "dedup", "-n", "1000").want(t, exitOK, "overfilled dedup")
	if !strings.Contains(r.stderr, "more than the 1,000 distinct lines it was sized for (at input line 1,00") {
		t.Errorf("warning: %q", r.stderr)
	}
	r = bloomIn(t, "", in, "dedup", "-n", "1000", "--strict").want(t, exitError, "--strict")
	if got := strings.Count(r.stdout, "\n"); got != 1001 {
		// The line that takes the filter past 1,000 distinct lines is the
		// last one out.
		t.Errorf("--strict: %d lines out, want 1,001 (up to the line that overfilled)", got)
	}
}

func TestMemoryChecked(t *testing.T) {
	outputOnly(t)
	if _, _, ok := memoryLimit(); !ok {
		t.Skip("no MemAvailable or cgroup limit to read here")
	}
	for _, args := range [][]string{
		{"build", "-n", "1e11", "-o", "x.bf", "list.txt"},
		{"build", "-n", "1e12", "--type", "blocked", "-o", "x.bf", "list.txt"},
		{"build", "-n", "1e11", "--type", "counting", "-o", "x.bf", "list.txt"},
		{"dedup", "-n", "1e11"},
	} {
		dir := t.TempDir()
		writeFile(t, dir, "list.txt", "a\n")
		r := bloomIn(t, dir, "", args...).want(t, exitError, strings.Join(args, " "))
		if strings.Contains(r.stderr, "fatal error") || strings.Contains(r.stderr, "goroutine") ||
			!strings.Contains(r.stderr, "of memory but only") || !strings.Contains(r.stderr, "fits") {
			t.Errorf("%v: %q", args, r.stderr)
		}
	}
}

func TestSummaryAndQuiet(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	writeFile(t, dir, "list.txt", keys("k", 1000))
	r := bloomIn(t, dir, "", "build", "-n", "1000", "--progress", "always", "-o", "a.bf", "list.txt").want(t, exitOK, "--progress always")
	if !strings.Contains(r.stderr, "bloom build: a.bf: 1,000 keys read, about ") || !strings.Contains(r.stderr, "bits/key, rate about ") {
		t.Errorf("summary: %q", r.stderr)
	}
	r = bloomIn(t, dir, "", "build", "-n", "1000", "--progress", "always", "--quiet", "-o", "a.bf", "list.txt")
	if r.code != exitOK || r.stderr != "" {
		t.Errorf("--quiet: %d %q", r.code, r.stderr)
	}
	r = bloomIn(t, dir, keys("k", 100), "dedup", "--progress", "always")
	if r.code != exitOK || !strings.Contains(r.stderr, "bloom dedup: 100 lines read, 100 written, 0 dropped as seen; filter about 100 distinct") {
		t.Errorf("dedup summary: %q", r.stderr)
	}
}

func TestCalcPlainAndCurve(t *testing.T) {
	outputOnly(t)
	r := bloomIn(t, "", "", "calc", "-n", "1e9", "-p", "1e-9", "--curve").want(t, exitOK, "calc --curve")
	if regexp.MustCompile(`[0-9]e[-+]?[0-9]`).MatchString(r.stdout) {
		t.Errorf("calc prints exponents:\n%s", r.stdout)
	}
	for _, want := range []string{"250,000,000", "0.25n", "4,000,000,000", "4n", "at a false-positive rate of 0.0000001%\n", "1 in 1,000,000,000", "█"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("calc --curve lacks %q:\n%s", want, r.stdout)
		}
	}
	var res calcResult
	j := bloomIn(t, "", "", "calc", "-n", "1M", "-p", "1%", "--curve", "--json").want(t, exitOK, "calc --curve --json")
	if err := json.Unmarshal([]byte(j.stdout), &res); err != nil {
		t.Fatal(err)
	}
	for _, l := range res.Layouts {
		if len(l.Curve) != len(curveFills) {
			t.Fatalf("%s: %d curve points", l.Layout, len(l.Curve))
		}
		for i := 1; i < len(l.Curve); i++ {
			if l.Curve[i].Rate <= l.Curve[i-1].Rate {
				t.Errorf("%s: rate falls from %v to %v keys", l.Layout, l.Curve[i-1].Keys, l.Curve[i].Keys)
			}
		}
		if at := l.Curve[3]; at.Keys != 1_000_000 || at.Rate < 0.009 || at.Rate > 0.0101 {
			t.Errorf("%s: at n the rate is %v", l.Layout, at.Rate)
		}
	}
}
