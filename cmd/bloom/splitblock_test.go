package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/bloom"
)

// TestBuildSplitBlock: build --type split-block writes Parquet's
// split-block filter bit for bit as the bloom package makes it (a power
// of two of bytes, k = 8, seed 0), info describes it, test finds every key
// and few others, merge unions two; a seed and an impossible size are
// refused.
func TestBuildSplitBlock(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", keys("a", 1000))
	writeFile(t, dir, "b.txt", keys("b", 1000))
	bloomIn(t, dir, "", "build", "--type", "split-block", "-n", "2000", "-p", "1%", "-o", "a.sbbf", "a.txt").want(t, exitOK, "build")
	got, err := os.ReadFile(filepath.Join(dir, "a.sbbf"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := bloom.NewSplitBlock(2000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		want.AddString("a" + strconv.Itoa(i))
	}
	wb, _ := want.MarshalBinary()
	if !bytes.Equal(got, wb) {
		t.Errorf("the file (%d bytes) is not bloom.NewSplitBlock(2000, 0.01) holding the keys (%d bytes)", len(got), len(wb))
	}

	r := bloomIn(t, dir, "", "info", "a.sbbf").want(t, exitOK, "info")
	for _, w := range []string{"type:         split-block\n", "bits (m):     32,768\n", "probes (k):   8\n", "seed:         0\n", "planned:      2,000 keys at 1%\n", "checksum:     ok"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("info lacks %q:\n%s", w, r.stdout)
		}
	}
	if res := infoJSON(t, dir, "a.sbbf"); res.Type != "split-block" || res.K != 8 || res.Items == nil || *res.Items < 950 || *res.Items > 1050 {
		t.Errorf("info --json: %+v", res)
	}
	bloomIn(t, dir, keys("a", 1000), "test", "-v", "a.sbbf").want(t, exitNo, "no false negatives")
	r = bloomIn(t, dir, keys("b", 1000), "test", "a.sbbf")
	if fp := strings.Count(r.stdout, "\n"); fp > 20 {
		t.Errorf("%d of 1,000 absent keys test present, want about 1%% or less", fp)
	}
	r = bloomIn(t, dir, "", "test", "a.sbbf", "a7", "zzz").want(t, exitOK, "test keys")
	if r.stdout != "a7\tpresent\nzzz\tabsent\n" {
		t.Errorf("test keys: %q", r.stdout)
	}

	// Merge: the union is the filter built from both files.
	bloomIn(t, dir, "", "build", "--type", "split-block", "-n", "2000", "-p", "1%", "-o", "b.sbbf", "b.txt").want(t, exitOK, "build b")
	bloomIn(t, dir, "", "build", "--type", "split-block", "-n", "2000", "-p", "1%", "-o", "ab.sbbf", "a.txt", "b.txt").want(t, exitOK, "build a and b")
	bloomIn(t, dir, "", "merge", "-o", "merged.sbbf", "a.sbbf", "b.sbbf").want(t, exitOK, "merge")
	m, _ := os.ReadFile(filepath.Join(dir, "merged.sbbf"))
	ab, _ := os.ReadFile(filepath.Join(dir, "ab.sbbf"))
	if len(m) == 0 || !bytes.Equal(m, ab) {
		t.Errorf("merge of a and b (%d bytes) differs from the filter built from both (%d bytes)", len(m), len(ab))
	}
	bloomIn(t, dir, "", "build", "--type", "split-block", "-n", "100", "-o", "small.sbbf", "a.txt").want(t, exitOK, "build small")
	r = bloomIn(t, dir, "", "merge", "-o", "x.sbbf", "a.sbbf", "small.sbbf").want(t, exitError, "merge of sizes")
	if !strings.Contains(r.stderr, "cannot be merged") {
		t.Errorf("merge of two sizes: %q", r.stderr)
	}

	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--seed", "7"}, "a split-block filter has no seed"},
		{[]string{"--seed", "random"}, "a split-block filter has no seed"},
		{[]string{"-n", "1e12"}, "no split-block filter holds 1,000,000,000,000 keys at 1%: the largest is 128.0 MiB"},
	} {
		args := append([]string{"build", "--type", "split-block", "-n", "1000", "-p", "1%", "-o", "bad.sbbf", "a.txt"}, c.args...)
		r := bloomIn(t, dir, "", args...).want(t, exitError, strings.Join(c.args, " "))
		if !strings.Contains(r.stderr, c.msg) {
			t.Errorf("build %v: %q, want %q", c.args, r.stderr, c.msg)
		}
		if _, err := os.Stat(filepath.Join(dir, "bad.sbbf")); err == nil {
			t.Fatalf("build %v wrote a file", c.args)
		}
	}
	r = bloomIn(t, dir, "", "build", "--help").want(t, exitOK, "build --help")
	if !strings.Contains(r.stdout, "\n  split-block Parquet's split-block filter") {
		t.Errorf("build --help does not list split-block:\n%s", r.stdout)
	}
}
