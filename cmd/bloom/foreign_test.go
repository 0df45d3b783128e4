package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/bitsandblooms"
	"github.com/bloomkit/bloomkit/frozen"
	"github.com/bloomkit/bloomkit/guava"
	"github.com/bloomkit/bloomkit/redisbloom"
)

func writeKeys(t *testing.T, dir string, from, n int) string {
	t.Helper()
	var b strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, "user-%d@example.com\n", i)
	}
	path := filepath.Join(dir, fmt.Sprintf("keys-%d-%d.txt", from, n))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func infoJSON(t *testing.T, dir, file string) infoResult {
	t.Helper()
	r := bloomIn(t, dir, "", "info", "--json", file).want(t, 0, "info "+file)
	var res infoResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("info --json %s: %v\n%s", file, err, r.stdout)
	}
	return res
}

// TestBuildStatic: build --static writes a frozen set that info describes
// (exact count, 8 or 16 bits), test finds every key in, and that the frozen
// package reads as the same set.
func TestBuildStatic(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	keys := writeKeys(t, dir, 0, 20000)
	absent := writeKeys(t, dir, 20000, 20000)
	for _, bits := range []int{8, 16} {
		out := fmt.Sprintf("set%d.frozen", bits)
		bloomIn(t, dir, "", "build", "--static", "--bits", fmt.Sprint(bits), "-o", out, keys).want(t, 0, "build --static")
		res := infoJSON(t, dir, out)
		if res.Type != "frozen" || res.K != uint32(bits) || res.Items == nil || *res.Items != 20000 || !res.ItemsExact || res.Checksum != "ok" {
			t.Errorf("%d-bit info: %+v", bits, res)
		}
		in, _ := os.ReadFile(keys)
		r := bloomIn(t, dir, string(in), "test", "-v", out)
		if r.code != 1 || r.stdout != "" {
			t.Errorf("%d-bit: keys built in test absent: %q", bits, r.stdout)
		}
		ab, _ := os.ReadFile(absent)
		r = bloomIn(t, dir, string(ab), "test", out)
		fp := strings.Count(r.stdout, "\n")
		if want := 20000.0 / float64(int(1)<<bits); float64(fp) > 2*want+5 {
			t.Errorf("%d-bit: %d of 20000 absent keys test present, expected about %.0f", bits, fp, want)
		}
		f, err := os.Open(filepath.Join(dir, out))
		if err != nil {
			t.Fatal(err)
		}
		g, err := frozen.Read(f)
		f.Close()
		if err != nil || !g.TestString("user-7@example.com") {
			t.Errorf("frozen.Read: %v", err)
		}
	}
	for _, args := range [][]string{
		{"--static", "--bits", "12"},
		{"--static", "-p", "1%", "--bits", "8"},
		{"--static", "-p", "60%"},
		{"--static", "-p", "1e-10"},
		{"--static", "--type", "blocked"},
		{"--bits", "16"},
		{"--format", "guava", "--type", "blocked"},
		{"--format", "protobuf"},
		{"--format", "guava", "--seed", "7"},
	} {
		r := bloomIn(t, dir, "", append([]string{"build", "-o", "x.out", keys}, args...)...)
		if r.code != 2 || r.stderr == "" {
			t.Errorf("build %v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}

// TestBuildStaticRibbon: build --static -p writes a ribbon filter at that
// rate that info describes (type, exact count, bits a key, the rate), test
// finds every key in, and that the frozen package reads.
func TestBuildStaticRibbon(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	keys := writeKeys(t, dir, 0, 20000)
	absent := writeKeys(t, dir, 20000, 20000)
	bloomIn(t, dir, "", "build", "--static", "-p", "1%", "--seed", "7", "-o", "set.ribbon", keys).want(t, 0, "build --static -p")
	res := infoJSON(t, dir, "set.ribbon")
	if res.Type != "ribbon" || res.K != 6 || res.PlannedP != 0.01 || res.Items == nil || *res.Items != 20000 || !res.ItemsExact ||
		res.Checksum != "ok" || res.EstimatedFPR == nil || *res.EstimatedFPR > 0.01 || res.Seed != 7 {
		t.Errorf("info: %+v", res)
	}
	if perKey := float64(res.TotalBits) / 20000; perKey < 6.64 || perKey > 7.6 {
		t.Errorf("info: %.2f bits a key at 1%%", perKey)
	}
	text := bloomIn(t, dir, "", "info", "set.ribbon").want(t, 0, "info")
	for _, want := range []string{"type:         ribbon", "of 6 or 7 result bits", "bits/key:", "at 1%"} {
		if !strings.Contains(text.stdout, want) {
			t.Errorf("info does not say %q:\n%s", want, text.stdout)
		}
	}
	in, _ := os.ReadFile(keys)
	if r := bloomIn(t, dir, string(in), "test", "-v", "set.ribbon"); r.code != 1 || r.stdout != "" {
		t.Errorf("keys built in test absent: %q", r.stdout)
	}
	ab, _ := os.ReadFile(absent)
	r := bloomIn(t, dir, string(ab), "test", "set.ribbon")
	if fp := strings.Count(r.stdout, "\n"); fp > 2*200+5 {
		t.Errorf("%d of 20000 absent keys test present, expected about 200", fp)
	}
	f, err := os.Open(filepath.Join(dir, "set.ribbon"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := frozen.ReadRibbon(f)
	f.Close()
	if err != nil || !g.TestString("user-7@example.com") || g.Rate() != 0.01 {
		t.Errorf("frozen.ReadRibbon: %v", err)
	}
}

// TestBuildForeign: build --format writes exactly the bytes the format's
// own package builds from the same keys and sizing (which bench/interop and
// guava's test tie to the real libraries), and info and test read them.
func TestBuildForeign(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	keys := writeKeys(t, dir, 0, 5000)
	gf, _ := guava.New(5000, 0.01)
	bf, _ := bitsandblooms.NewWithEstimates(5000, 0.01)
	for i := range 5000 {
		k := fmt.Sprintf("user-%d@example.com", i)
		gf.AddString(k)
		bf.AddString(k)
	}
	var gb, bb bytes.Buffer
	gf.WriteTo(&gb)
	bf.WriteTo(&bb)
	for format, want := range map[string][]byte{"guava": gb.Bytes(), "bitsandblooms": bb.Bytes()} {
		out := format + ".bin"
		bloomIn(t, dir, "", "build", "-n", "5000", "-p", "1%", "--format", format, "-o", out, keys).want(t, 0, "build --format "+format)
		got, err := os.ReadFile(filepath.Join(dir, out))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("--format %s: %d bytes unlike the package's %d", format, len(got), len(want))
		}
		res := infoJSON(t, dir, out)
		if res.Type != format || res.Checksum != "none" || res.Items == nil || *res.Items < 4800 || *res.Items > 5200 {
			t.Errorf("info %s: %+v", out, res)
		}
		r := bloomIn(t, dir, "", "test", out, "user-1@example.com", "nobody@example.com").want(t, 0, "test "+out)
		if r.stdout != "user-1@example.com\tpresent\nnobody@example.com\tabsent\n" {
			t.Errorf("test %s: %q", out, r.stdout)
		}
		// The filter from stdin too.
		r = bloomIn(t, dir, string(got), "test", "-", "user-2@example.com").want(t, 0, "test - "+format)
		// Cut short: an error that says so.
		os.WriteFile(filepath.Join(dir, "cut-"+out), got[:len(got)-8], 0o644)
		r = bloomIn(t, dir, "", "info", "cut-"+out)
		if r.code != 2 || !strings.Contains(r.stderr, "cut-"+out) {
			t.Errorf("info of a cut %s file: exit %d %q", format, r.code, r.stderr)
		}
	}
}

// TestDumpFileInfoTest: info and test read a RedisBloom dump file (a saved
// SCANDUMP stream) of either family, with the answers of the filter.
func TestDumpFileInfoTest(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	b, err := redisbloom.NewBloom(1000, 0.01, 2, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := redisbloom.NewCuckoo(1000, 2, 20, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 { // past the first link: a chain of links
		b.Add(fmt.Appendf(nil, "item:%d", i))
	}
	c.Insert([]byte("item:1"))
	for name, f := range map[string]redisbloom.Dumpable{"bf.dump": b, "cf.dump": c} {
		var buf bytes.Buffer
		if _, err := redisbloom.WriteDump(&buf, f); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644)
		r := bloomIn(t, dir, "", "test", name, "item:1", "other").want(t, 0, "test "+name)
		if r.stdout != "item:1\tpresent\nother\tabsent\n" {
			t.Errorf("test %s: %q", name, r.stdout)
		}
		res := infoJSON(t, dir, name)
		if res.Checksum != "ok" || res.Items == nil {
			t.Errorf("info %s: %+v", name, res)
		}
		buf.Bytes()[len(buf.Bytes())-20] ^= 1
		os.WriteFile(filepath.Join(dir, "bad-"+name), buf.Bytes(), 0o644)
		if r := bloomIn(t, dir, "", "info", "bad-"+name); r.code != 2 || !strings.Contains(r.stderr, "checksum") {
			t.Errorf("damaged %s: exit %d %q", name, r.code, r.stderr)
		}
	}
	res := infoJSON(t, dir, "bf.dump")
	if res.Type != "redisbloom-bf" || *res.Items != b.Size || b.Size < 2950 || res.K < 2 {
		t.Errorf("bf.dump: %+v", res)
	}
	if res := infoJSON(t, dir, "cf.dump"); res.Type != "redisbloom-cf" || *res.Items != 1 {
		t.Errorf("cf.dump: %+v", res)
	}
}
