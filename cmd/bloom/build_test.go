package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuildAndTestKeys(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	writeFile(t, dir, "blacklist.txt", "spam@example.com\nphish@example.net\r\n\nscam@example.org")
	bloomIn(t, dir, "", "build", "-n", "1000", "-p", "0.1%", "-o", "bl.bf", "blacklist.txt").want(t, exitOK, "build")

	r := bloomIn(t, dir, "", "test", "bl.bf", "spam@example.com", "alice@example.org").want(t, exitOK, "test keys")
	if r.stdout != "spam@example.com\tpresent\nalice@example.org\tabsent\n" {
		t.Errorf("test keys: %q", r.stdout)
	}
	// \r\n endings are not part of a key, nor is a missing final newline.
	bloomIn(t, dir, "", "test", "bl.bf", "phish@example.net", "scam@example.org").want(t, exitOK, "crlf and last line")
	r = bloomIn(t, dir, "", "test", "bl.bf", "alice@example.org").want(t, exitNo, "only absent")
	if r.stdout != "alice@example.org\tabsent\n" {
		t.Errorf("absent key: %q", r.stdout)
	}
	bloomIn(t, dir, "", "test", "-v", "bl.bf", "alice@example.org").want(t, exitOK, "-v with an absent key")
	bloomIn(t, dir, "", "test", "-v", "bl.bf", "spam@example.com").want(t, exitNo, "-v with a present key")
	r = bloomIn(t, dir, "", "test", "-q", "bl.bf", "spam@example.com").want(t, exitOK, "-q")
	if r.stdout != "" {
		t.Errorf("-q printed %q", r.stdout)
	}
	// Flags after the file, and "--" before a key that looks like a flag.
	bloomIn(t, dir, "", "test", "bl.bf", "-q", "spam@example.com").want(t, exitOK, "flag after file")
	r = bloomIn(t, dir, "", "test", "bl.bf", "--", "-v").want(t, exitNo, "key after --")
	if r.stdout != "-v\tabsent\n" {
		t.Errorf("key after --: %q", r.stdout)
	}
}

func TestTestStdinLikeGrep(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	bloomIn(t, dir, keys("bad", 1000), "build", "-n", "1000", "-p", "1e-6", "-o", "bad.bf").want(t, exitOK, "build from stdin")
	in := "bad1\ngood1\nbad999\r\ngood2\nbad5"
	r := bloomIn(t, dir, in, "test", "bad.bf").want(t, exitOK, "grep")
	if r.stdout != "bad1\nbad999\r\nbad5\n" {
		t.Errorf("present lines: %q", r.stdout)
	}
	r = bloomIn(t, dir, in, "test", "-v", "bad.bf").want(t, exitOK, "grep -v")
	if r.stdout != "good1\ngood2\n" {
		t.Errorf("absent lines: %q", r.stdout)
	}
	r = bloomIn(t, dir, "good1\ngood2\n", "test", "bad.bf").want(t, exitNo, "nothing present")
	if r.stdout != "" {
		t.Errorf("nothing present printed %q", r.stdout)
	}
	bloomIn(t, dir, "", "test", "bad.bf").want(t, exitNo, "empty stdin")
	bloomIn(t, dir, in, "test", "-q", "bad.bf").want(t, exitOK, "-q stdin")
	bloomIn(t, dir, "good\n", "test", "-q", "bad.bf").want(t, exitNo, "-q stdin, no match")
}

// Every key added tests present (no false negatives), and keys never added
// test present at about the planned rate.
func TestBuildRates(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	const n = 20000
	writeFile(t, dir, "in.txt", keys("https://example.com/in/", n))
	out := keys("https://example.com/out/", n)
	for _, typ := range []string{"classic", "blocked"} {
		t.Run(typ, func(t *testing.T) {
			f := typ + ".bf"
			bloomIn(t, dir, "", "build", "-n", fmt.Sprint(n), "-p", "1%", "--type", typ, "-o", f, "in.txt").want(t, exitOK, "build")
			r := bloomIn(t, dir, keys("https://example.com/in/", n), "test", "-v", f).want(t, exitNo, "false negatives")
			if r.stdout != "" {
				t.Fatalf("false negatives:\n%.300s", r.stdout)
			}
			r = bloomIn(t, dir, out, "test", f)
			fp := strings.Count(r.stdout, "\n")
			// 1% of 20,000 is 200; sd about 14. Allow a wide band.
			if fp < 120 || fp > 290 {
				t.Errorf("%d false positives in %d, want about 200", fp, n)
			}
			r = bloomIn(t, dir, "", "info", "--json", f).want(t, exitOK, "info")
			if !strings.Contains(r.stdout, `"type": "`+typ+`"`) {
				t.Errorf("info: %s", r.stdout)
			}
		})
	}
}

func TestBuildCountsLinesWithoutN(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", keys("a", 300))
	writeFile(t, dir, "b.txt", keys("b", 200)+"last-without-newline")
	bloomIn(t, dir, "", "build", "-p", "1%", "-o", "ab.bf", "a.txt", "b.txt").want(t, exitOK, "build")
	r := bloomIn(t, dir, "", "info", "ab.bf").want(t, exitOK, "info")
	if !strings.Contains(r.stdout, "planned:      501 keys at 1%") {
		t.Errorf("-n from line count:\n%s", r.stdout)
	}
	bloomIn(t, dir, "", "test", "ab.bf", "a0", "b199", "last-without-newline").want(t, exitOK, "test")
	r = bloomIn(t, dir, "x\n", "build", "-p", "1%", "-o", "x.bf").want(t, exitError, "stdin without -n")
	if !strings.Contains(r.stderr, "-n is required: stdin is a pipe") {
		t.Errorf("stdin without -n: %q", r.stderr)
	}
}

func TestBuildFieldCSV(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	writeFile(t, dir, "users.csv", `id,name,email
1,"Smith, Jane",jane@example.com
2,Bob,"bob@example.com"
3,"Say ""hi""",quote@example.com
4,short
5,"x,y","a,b@example.com"
`)
	r := bloomIn(t, dir, "", "build", "-n", "100", "-p", "1e-6", "--field", "3", "--header", "-o", "emails.bf", "users.csv").
		want(t, exitOK, "build --field")
	if !strings.Contains(r.stderr, "users.csv: 1 line has no column 3 (the first is line 5); skipped") {
		t.Errorf("missing-column warning: %q", r.stderr)
	}
	bloomIn(t, dir, "", "test", "emails.bf", "jane@example.com", "bob@example.com", "quote@example.com", "a,b@example.com").
		want(t, exitOK, "columns")
	r = bloomIn(t, dir, "", "test", "emails.bf", "email", "short", `"bob@example.com"`, "Smith").want(t, exitNo, "not keys")
	if strings.Contains(r.stdout, "present") {
		t.Errorf("header, short line or quotes taken as keys:\n%s", r.stdout)
	}
	// Column 2 with quotes and escaped quotes.
	bloomIn(t, dir, "", "build", "-n", "100", "-p", "1e-6", "--field", "2", "--header", "-o", "names.bf", "users.csv").want(t, exitOK, "build col 2")
	bloomIn(t, dir, "", "test", "names.bf", "Smith, Jane", `Say "hi"`, "x,y").want(t, exitOK, "quoted columns")

	// TSV, and test --field printing whole lines.
	writeFile(t, dir, "ids.tsv", "a\t1\nb\t2\n")
	bloomIn(t, dir, "", "build", "-n", "10", "-p", "1e-6", "--field", "2", "--delim", "tab", "-o", "ids.bf", "ids.tsv").want(t, exitOK, "tsv")
	r = bloomIn(t, dir, "h\tid\nx\t2\ny\t3\nz\n", "test", "--field", "2", "--delim", `\t`, "--header", "ids.bf").want(t, exitOK, "test --field")
	if r.stdout != "h\tid\nx\t2\n" {
		t.Errorf("test --field: %q", r.stdout)
	}
}

// A line longer than the read buffer is one key, not two.
func TestBuildLongLines(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	long := strings.Repeat("0123456789abcdef", 3<<20/16) // 3 MiB
	writeFile(t, dir, "long.txt", "short\n"+long+"\nafter\n")
	bloomIn(t, dir, "", "build", "-n", "10", "-p", "1e-9", "-o", "long.bf", "long.txt").want(t, exitOK, "build")
	bloomIn(t, dir, long+"\n", "test", "-q", "long.bf").want(t, exitOK, "long line present")
	for _, part := range []string{long[:chunkSize], long[chunkSize:], long[:len(long)-1]} {
		bloomIn(t, dir, part+"\n", "test", "long.bf").want(t, exitNo, "part of the long line")
	}
	bloomIn(t, dir, "", "test", "long.bf", "short", "after").want(t, exitOK, "neighbours")
	r := bloomIn(t, dir, "x\n"+long+"\nafter\n", "test", "long.bf").want(t, exitOK, "grep long")
	if r.stdout != long+"\nafter\n" {
		t.Errorf("grep of a long line returned %d bytes", len(r.stdout))
	}
}

func TestBuildTypes(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	writeFile(t, dir, "k.txt", keys("k", 100))
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			r := bloomIn(t, dir, "", "build", "-n", "100", "--type", k.name, "-o", k.name+".bf", "k.txt")
			if k.make == nil {
				r.want(t, exitError, "missing type")
				if !strings.Contains(r.stderr, "not available in this build") {
					t.Errorf("missing type: %q", r.stderr)
				}
				if _, err := os.Stat(filepath.Join(dir, k.name+".bf")); err == nil {
					t.Errorf("a file was written for a missing type")
				}
				return
			}
			r.want(t, exitOK, "build")
			bloomIn(t, dir, keys("k", 100), "test", "-v", k.name+".bf").want(t, exitNo, "no false negatives")
			r = bloomIn(t, dir, "", "info", k.name+".bf").want(t, exitOK, "info")
			if !strings.Contains(r.stdout, "type:         "+k.name) {
				t.Errorf("info:\n%s", r.stdout)
			}
		})
	}
	r := bloomIn(t, dir, "", "build", "-n", "10", "--type", "xor", "-o", "x.bf", "k.txt").want(t, exitError, "unknown type")
	if !strings.Contains(r.stderr, `unknown --type "xor"`) {
		t.Errorf("unknown type: %q", r.stderr)
	}
}

func TestBuildErrors(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	writeFile(t, dir, "k.txt", "a\n")
	if err := os.WriteFile(filepath.Join(dir, "keep.bf"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-n", "10", "k.txt"}, "-o FILE is required"},
		{[]string{"-n", "10", "-o", "keep.bf", "k.txt", "missing.txt"}, "missing.txt: no such file"},
		{[]string{"-n", "10", "-o", "keep.bf", "."}, ".: is a directory"},
		{[]string{"-n", "10", "-o", "keep.bf", "--field", "-1", "k.txt"}, "numbered from 1"},
		{[]string{"-n", "10", "-o", "keep.bf", "--field", "1", "--delim", "ab", "k.txt"}, "want one character"},
		{[]string{"-n", "10", "-o", "keep.bf", "--seed", "x", "k.txt"}, "--seed"},
		{[]string{"-n", "10", "-o", "keep.bf", "--progress", "maybe", "k.txt"}, "--progress"},
		{[]string{"-n", "10", "-o", "no-such-dir/x.bf", "k.txt"}, "no-such-dir/x.bf"},
	} {
		r := bloomIn(t, dir, "", append([]string{"build"}, c.args...)...).want(t, exitError, strings.Join(c.args, " "))
		if !strings.Contains(r.stderr, c.msg) {
			t.Errorf("build %v: stderr %q, want %q", c.args, r.stderr, c.msg)
		}
	}
	// A failed build leaves an existing output alone and no temporary files.
	if b, _ := os.ReadFile(filepath.Join(dir, "keep.bf")); string(b) != "old" {
		t.Errorf("failed build changed its output: %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("files left behind: %v", ents)
	}
}

func TestBuildSeedAndProgress(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "k.txt", keys("k", 5000))
	r := bloomIn(t, dir, "", "build", "-n", "5000", "--seed", "0x2a", "--progress", "always", "-o", "s.bf", "k.txt").want(t, exitOK, "build")
	_ = r // progress may not have ticked on a fast build; the line is cleared at the end
	if !strings.Contains(r.stderr, "\r\x1b[K") {
		t.Errorf("--progress always drew nothing: %q", r.stderr)
	}
	r = bloomIn(t, dir, "", "info", "s.bf").want(t, exitOK, "info")
	if !strings.Contains(r.stdout, "seed:         42\n") {
		t.Errorf("seed not recorded:\n%s", r.stdout)
	}
	r = bloomIn(t, dir, "", "build", "-n", "5000", "-o", "q.bf", "k.txt").want(t, exitOK, "build")
	if r.stderr != "" {
		t.Errorf("progress drawn on a non-terminal: %q", r.stderr)
	}
	// Warnings with a progress line, over two inputs.
	writeFile(t, dir, "a.csv", "x,1\ny\nz\n")
	r = bloomIn(t, dir, "", "build", "-n", "10", "--field", "2", "--progress", "always", "-o", "f.bf", "a.csv", "a.csv").want(t, exitOK, "build")
	if strings.Count(r.stderr, "a.csv: 2 lines have no column 2 (the first is line 2); skipped") != 2 {
		t.Errorf("warnings with progress: %q", r.stderr)
	}
	// Overfilling warns.
	r = bloomIn(t, dir, "", "build", "-n", "1000", "-o", "over.bf", "k.txt").want(t, exitOK, "overfilled build")
	if !strings.Contains(r.stderr, "more than -n 1,000") {
		t.Errorf("no overfill warning: %q", r.stderr)
	}
}

// TestBuildCuckooDistinctAndOverfill: build --type cuckoo stores each
// distinct key once (a repeated line takes no slot and cannot grow the
// filter), and more distinct keys than -n is an overfill as for the other
// types: a warning, or with --strict exit 2 and no file.
func TestBuildCuckooDistinctAndOverfill(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	same := strings.Repeat("same-line\n", 170)
	bloomIn(t, dir, same, "build", "--type", "cuckoo", "-n", "1000", "-o", "same.bf", "-").want(t, exitOK, "one line 170 times")
	if fi, err := os.Stat(filepath.Join(dir, "same.bf")); err != nil || fi.Size() > 4096 {
		t.Fatalf("a filter of one repeated line: %v, %d bytes", err, fi.Size())
	}
	info := bloomIn(t, dir, "", "info", "same.bf").want(t, exitOK, "info")
	if !strings.Contains(info.stdout, "items:        1\n") || !strings.Contains(info.stdout, "tables:       1\n") {
		t.Errorf("one line 170 times:\n%s", info.stdout)
	}
	thrice := keys("k", 2000) + keys("k", 2000) + keys("k", 2000)
	bloomIn(t, dir, thrice, "build", "--type", "cuckoo", "-n", "2000", "-o", "thrice.bf", "-").want(t, exitOK, "2,000 keys three times")
	info = bloomIn(t, dir, "", "info", "thrice.bf").want(t, exitOK, "info")
	if !strings.Contains(info.stdout, "tables:       1\n") || strings.Contains(info.stdout, "items:        6,000") {
		t.Errorf("2,000 keys three times:\n%s", info.stdout)
	}

	writeFile(t, dir, "many.txt", keys("m", 5000))
	r := bloomIn(t, dir, "", "build", "--type", "cuckoo", "-n", "100", "-o", "over.bf", "many.txt").want(t, exitOK, "overfilled")
	if !strings.Contains(r.stderr, "more than -n 100") {
		t.Errorf("no overfill warning: %q", r.stderr)
	}
	r = bloomIn(t, dir, "", "build", "--type", "cuckoo", "-n", "100", "--strict", "-o", "strict.bf", "many.txt").want(t, exitError, "--strict")
	if !strings.Contains(r.stderr, "--strict") {
		t.Errorf("--strict: %q", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "strict.bf")); err == nil {
		t.Error("--strict wrote the filter")
	}
}
