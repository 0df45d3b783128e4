package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/bloomkit/bloomkit/bloom"
)

func TestInfoGolden(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	writeFile(t, dir, "keys.txt", keys("key-", 1000))
	bloomIn(t, dir, "", "build", "-n", "1000", "-p", "1%", "-o", "classic.bf", "keys.txt").want(t, exitOK, "build")
	bloomIn(t, dir, "", "build", "-n", "2000", "-p", "0.1%", "--type", "blocked", "--seed", "7", "-o", "blocked.bf", "keys.txt").want(t, exitOK, "build")
	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"info-classic.txt", []string{"classic.bf"}},
		{"info-blocked.txt", []string{"blocked.bf"}},
		{"info-two.txt", []string{"classic.bf", "blocked.bf"}},
		{"info-classic.json", []string{"--json", "classic.bf"}},
		{"info-blocked.json", []string{"blocked.bf", "--json"}},
	} {
		t.Run(c.golden, func(t *testing.T) {
			r := bloomIn(t, dir, "", append([]string{"info"}, c.args...)...).want(t, exitOK, "info")
			golden(t, c.golden, r.stdout)
		})
	}
	var res infoResult
	r := bloomIn(t, dir, "", "info", "--json", "classic.bf").want(t, exitOK, "info")
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.Items == nil || *res.Items < 980 || *res.Items > 1020 || res.Checksum != "ok" ||
		res.EstimatedFPR == nil || *res.EstimatedFPR > 0.012 || *res.EstimatedFPR < 0.008 {
		t.Errorf("info of 1,000 keys at 1%%: %+v", res)
	}
}

// Damaged files are reported with their own error and never used: test
// answers nothing, info shows only the header, merge writes nothing.
func TestCorruptFiles(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	writeFile(t, dir, "keys.txt", keys("k", 100))
	bloomIn(t, dir, "", "build", "-n", "100", "-o", "good.bf", "keys.txt").want(t, exitOK, "build")
	good, err := os.ReadFile(filepath.Join(dir, "good.bf"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, msg string
		data      []byte
		header    bool // info can still describe the header
	}{
		{"empty.bf", "truncated filter data: in the header", nil, false},
		{"short.bf", "truncated filter data: in the header", good[:40], false},
		{"trunc.bf", "truncated filter data", good[:len(good)-10], true},
		{"notrailer.bf", "truncated filter data: 120 bytes left, the header announces 124", good[:len(good)-4], true},
		{"flip.bf", "checksum mismatch: file CRC-32C", flip(good, 100), true},
		{"header.bf", "checksum mismatch: header CRC-32C", flip(good, 30), false},
		{"magic.bf", "not a bloomkit filter (bad magic)", append([]byte("BLOOMKIT"), good[8:]...), false},
		{"trailing.bf", "bytes after the filter's checksum", append(bytes.Clone(good), "junk"...), true},
		{"text.bf", "bad magic", []byte(strings.Repeat("hello world\n", 20)), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			writeFile(t, dir, c.name, string(c.data))
			r := bloomIn(t, dir, "k1\n", "test", c.name).want(t, exitError, "test")
			if r.stdout != "" || !strings.Contains(r.stderr, "bloom test: "+c.name+": ") || !strings.Contains(r.stderr, c.msg) {
				t.Errorf("test: stdout %q stderr %q, want %q", r.stdout, r.stderr, c.msg)
			}
			bloomIn(t, dir, "", "test", c.name, "k1").want(t, exitError, "test key")
			r = bloomIn(t, dir, "", "info", c.name).want(t, exitError, "info")
			if !strings.Contains(r.stderr, "bloom info: "+c.name+": ") || !strings.Contains(r.stderr, c.msg) {
				t.Errorf("info: stderr %q, want %q", r.stderr, c.msg)
			}
			if c.header != strings.Contains(r.stdout, "type:") {
				t.Errorf("info stdout: %q", r.stdout)
			}
			if strings.Contains(r.stdout, "items:") || strings.Contains(r.stdout, "checksum:     ok") {
				t.Errorf("info used a damaged file:\n%s", r.stdout)
			}
			r = bloomIn(t, dir, "", "merge", "-o", "out.bf", "good.bf", c.name).want(t, exitError, "merge")
			if !strings.Contains(r.stderr, c.name) {
				t.Errorf("merge: %q", r.stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "out.bf")); err == nil {
				t.Errorf("merge wrote a file from a damaged input")
			}
		})
	}
	r := bloomIn(t, dir, "", "info", "--json", "flip.bf").want(t, exitError, "info --json")
	var res infoResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Checksum != "mismatch" || res.Items != nil {
		t.Errorf("info --json of a damaged file: %v %+v", err, res)
	}
	r = bloomIn(t, dir, "", "info", "missing.bf", "good.bf").want(t, exitError, "info missing")
	if !strings.Contains(r.stderr, "missing.bf: no such file") || !strings.Contains(r.stdout, "file:         good.bf") {
		t.Errorf("info missing + good: stdout %q stderr %q", r.stdout, r.stderr)
	}
	bloomIn(t, dir, "", "info").want(t, exitError, "info without a file")
	bloomIn(t, dir, "", "test").want(t, exitError, "test without a file")
}

func TestMerge(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", keys("a", 500))
	writeFile(t, dir, "b.txt", keys("b", 500))
	writeFile(t, dir, "c.txt", keys("c", 500))
	for _, typ := range []string{"classic", "blocked"} {
		t.Run(typ, func(t *testing.T) {
			build := func(out string, in ...string) {
				args := append([]string{"build", "-n", "2000", "-p", "1%", "--type", typ, "-o", out}, in...)
				bloomIn(t, dir, "", args...).want(t, exitOK, "build "+out)
			}
			build(typ+"-a.bf", "a.txt")
			build(typ+"-b.bf", "b.txt")
			build(typ+"-c.bf", "c.txt")
			build(typ+"-all.bf", "a.txt", "b.txt", "c.txt")
			bloomIn(t, dir, "", "merge", "-o", typ+"-merged.bf", typ+"-a.bf", typ+"-b.bf", typ+"-c.bf").want(t, exitOK, "merge")
			// The union is bit for bit the filter built from all keys.
			merged, _ := os.ReadFile(filepath.Join(dir, typ+"-merged.bf"))
			all, _ := os.ReadFile(filepath.Join(dir, typ+"-all.bf"))
			if len(merged) == 0 || !bytes.Equal(merged, all) {
				t.Errorf("merged file (%d bytes) differs from the filter built from every key (%d bytes)", len(merged), len(all))
			}
			// OUT may be an input.
			bloomIn(t, dir, "", "merge", "-o", typ+"-a.bf", typ+"-a.bf", typ+"-b.bf", typ+"-c.bf").want(t, exitOK, "merge into an input")
			again, _ := os.ReadFile(filepath.Join(dir, typ+"-a.bf"))
			if !bytes.Equal(again, all) {
				t.Errorf("merge into an input differs")
			}
		})
	}
	// Incompatible inputs: the error names the files and what differs.
	writeFile(t, dir, "k.txt", keys("k", 10))
	bloomIn(t, dir, "", "build", "-n", "2000", "-p", "1%", "--seed", "9", "-o", "seed9.bf", "k.txt").want(t, exitOK, "build")
	bloomIn(t, dir, "", "build", "-n", "3000", "-p", "1%", "-o", "bigger.bf", "k.txt").want(t, exitOK, "build")
	bloomIn(t, dir, "", "build", "-n", "2000", "-p", "0.1%", "-o", "rate.bf", "k.txt").want(t, exitOK, "build")
	for _, c := range []struct {
		files []string
		msg   string
	}{
		{[]string{"classic-all.bf", "blocked-all.bf"}, "blocked-all.bf holds a blocked filter and classic-all.bf a classic one"},
		{[]string{"classic-all.bf", "seed9.bf"}, "classic-all.bf and seed9.bf differ, so they cannot be merged: bloom: incompatible filters: seeds 0x0 and 0x9"},
		{[]string{"classic-all.bf", "bigger.bf"}, "classic-all.bf and bigger.bf differ, so they cannot be merged: bloom: incompatible filters: m = 19171 and 28756 bits"},
		{[]string{"classic-all.bf", "rate.bf"}, "m = 19171 and 28756 bits"},
		{[]string{"classic-all.bf", "nope.bf"}, "nope.bf: no such file"},
	} {
		r := bloomIn(t, dir, "", append([]string{"merge", "-o", "bad.bf"}, c.files...)...).want(t, exitError, "merge")
		if !strings.Contains(r.stderr, c.msg) {
			t.Errorf("merge %v: %q, want %q", c.files, r.stderr, c.msg)
		}
		if _, err := os.Stat(filepath.Join(dir, "bad.bf")); err == nil {
			t.Fatalf("merge %v wrote its output", c.files)
		}
	}
	bloomIn(t, dir, "", "merge", "classic-a.bf").want(t, exitError, "merge without -o")
	bloomIn(t, dir, "", "merge", "-o", "x.bf").want(t, exitError, "merge without inputs")
}

// TestCompressedFilterFiles: info, test and merge read a gzip- or
// zstd-compressed filter file, from a path or stdin, as the README says of
// every input (they used to fail with "bad magic").
func TestCompressedFilterFiles(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	bloomIn(t, dir, keys("c", 1000), "build", "-n", "1000", "-o", "plain.bf", "-").want(t, exitOK, "build")
	plain, err := os.ReadFile(filepath.Join(dir, "plain.bf"))
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain)
	zw.Close()
	zs, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "f.bf.gz", gz.String())
	writeFile(t, dir, "f.bf.zst", string(zs.EncodeAll(plain, nil)))
	want := bloomIn(t, dir, "", "info", "plain.bf").want(t, exitOK, "info plain").stdout
	for _, name := range []string{"f.bf.gz", "f.bf.zst"} {
		got := bloomIn(t, dir, "", "info", name).want(t, exitOK, "info "+name).stdout
		if strings.Replace(got, name, "plain.bf", 1) != want {
			t.Errorf("info %s:\n%s\nwant\n%s", name, got, want)
		}
		r := bloomIn(t, dir, "", "test", name, "c5", "absent-key").want(t, exitOK, "test "+name)
		if r.stdout != "c5\tpresent\nabsent-key\tabsent\n" {
			t.Errorf("test %s: %q", name, r.stdout)
		}
		content, _ := os.ReadFile(filepath.Join(dir, name))
		r = bloomIn(t, dir, string(content), "test", "-", "c7").want(t, exitOK, "test - < "+name)
		if r.stdout != "c7\tpresent\n" {
			t.Errorf("test - < %s: %q", name, r.stdout)
		}
		bloomIn(t, dir, "", "merge", "-o", "m.bf", name, "plain.bf").want(t, exitOK, "merge "+name)
	}
	// A damaged stream is an error that names the compression.
	writeFile(t, dir, "cut.gz", gz.String()[:30])
	r := bloomIn(t, dir, "", "info", "cut.gz").want(t, exitError, "info of a cut gzip file")
	if !strings.Contains(r.stderr, "gzip") {
		t.Errorf("cut gzip: %q", r.stderr)
	}
}

// TestInfoWindowAndSeed: info on a window file shows the period, the
// number of generations and the bits of one generation beside those of
// the whole file (it used to show one generation's bits next to the whole
// file's size, and neither the window nor G); --json writes the 64-bit
// seed as a string, which jq and JavaScript do not round.
func TestInfoWindowAndSeed(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	const seed = 9128649759219858921
	w, err := bloom.NewWindowWith(bloom.WindowConfig{Window: time.Hour, Items: 1000, Rate: 0.01, Generations: 4, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	w.AddString("k")
	b, err := w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "w.bf", string(b))
	perGen := w.Stats().Bits / 5
	r := bloomIn(t, dir, "", "info", "w.bf").want(t, exitOK, "info of a window")
	for _, want := range []string{
		"window:       1h0m0s in 4 generations\n",
		fmt.Sprintf("bits (m):     %s a generation, %s in all 5 filters\n", commas(perGen), commas(5*perGen)),
		fmt.Sprintf("size:         %s (%s bytes)", humanBytes(uint64(len(b))), commas(uint64(len(b)))),
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("info of a window lacks %q:\n%s", want, r.stdout)
		}
	}
	r = bloomIn(t, dir, "", "info", "--json", "w.bf").want(t, exitOK, "info --json")
	var got map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got["seed"] != "9128649759219858921" || got["window"] != "1h0m0s" || got["generations"] != 4.0 || got["total_bits"] != float64(5*perGen) {
		t.Errorf("info --json of a window: seed %v window %v generations %v total_bits %v", got["seed"], got["window"], got["generations"], got["total_bits"])
	}
}

// TestInfoTinyRateNotZero: a filter that holds keys but whose estimated
// rate underflowed to 0 (fill^k below the smallest double) shows the same
// tiny-rate bound as every other output, not "0%".
func TestInfoTinyRateNotZero(t *testing.T) {
	outputOnly(t)
	items, fill, rate := uint64(5), 1e-9, 0.0
	var b bytes.Buffer
	printInfo(&b, &infoResult{File: "x.bf", Type: "classic", M: 1 << 40, K: 64, Items: &items, FillRatio: &fill, EstimatedFPR: &rate, Checksum: "ok"})
	if !strings.Contains(b.String(), "rate now:     < 0.0000000000001% (1 in more than 10^15)\n") {
		t.Errorf("info of a filter with an underflowed rate:\n%s", b.String())
	}
	items = 0
	fill = 0
	b.Reset()
	printInfo(&b, &infoResult{File: "x.bf", Type: "classic", M: 1 << 20, K: 7, Items: &items, FillRatio: &fill, EstimatedFPR: &rate, Checksum: "ok"})
	if !strings.Contains(b.String(), "rate now:     0%\n") {
		t.Errorf("info of an empty filter:\n%s", b.String())
	}
}
