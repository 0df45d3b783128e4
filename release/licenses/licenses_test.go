package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestThirdPartyLicensesCurrent regenerates THIRD_PARTY_LICENSES and fails
// when the committed file differs: a dependency added, removed or upgraded
// without `make licenses`.
func TestThirdPartyLicensesCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	mods, err := Linked(root, "./cmd/bloom", Platforms)
	if err != nil {
		t.Fatal(err)
	}
	goroot, err := goEnv(root, "GOROOT")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := Write(&got, goroot, mods); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(root, "THIRD_PARTY_LICENSES"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("THIRD_PARTY_LICENSES is out of date: run `make licenses` and commit it\n%s", firstDiff(got.String(), string(want)))
	}
	// The binary's hashing and metrics libraries must be among them: an
	// empty list would match an empty file.
	for _, p := range []string{"github.com/zeebo/xxh3", "github.com/prometheus/client_golang", "golang.org/x/sys"} {
		if !strings.Contains(got.String(), "\n"+p+" ") {
			t.Errorf("%s is linked by bloom but missing from the list", p)
		}
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n  generated: %s\n  committed: %s", i+1, a, b)
		}
	}
	return ""
}

// TestLicenseFilesRefuses checks that what a person must look at stops the
// generator: no licence file, an unrecognised one, a copyleft one.
func TestLicenseFilesRefuses(t *testing.T) {
	goroot, err := goEnv(".", "GOROOT")
	if err != nil {
		t.Fatal(err)
	}
	bsd, err := os.ReadFile(filepath.Join(goroot, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		files map[string]string
		err   string // "" when accepted
	}{
		{"bsd", map[string]string{"LICENSE": string(bsd), "README.md": "hello"}, ""},
		{"bsd with notice", map[string]string{"LICENSE.txt": string(bsd), "NOTICE": "Copyright 2024 Someone"}, ""},
		{"none", map[string]string{"README.md": "hello"}, "no licence file"},
		{"unrecognised", map[string]string{"COPYING": "All rights reserved."}, "no licence recognised"},
		{"copyleft", map[string]string{"LICENSE": "This program is free software: you can redistribute it and/or modify it under the terms of the GNU General Public License as published by the Free Software Foundation, either version 3 of the License, or (at your option) any later version."}, "GPL-3.0-or-later"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		for name, text := range c.files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		files, err := licenseFiles(dir)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err == "" && (len(files) == 0 || files[0].IDs[0] != "BSD-3-Clause"):
			t.Errorf("%s: got %+v, want the BSD-3-Clause licence", c.name, files)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.err)
		}
	}
}
