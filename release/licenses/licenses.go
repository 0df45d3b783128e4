// Command licenses writes THIRD_PARTY_LICENSES: the licence of every module
// the bloom binary links, in full, for whoever redistributes the binary.
//
//	go run ./licenses -root .. -o ../THIRD_PARTY_LICENSES
//
// The modules are those `go list -deps` names for cmd/bloom built as
// `make release` builds it (CGO_ENABLED=0) for each release platform, so a
// dependency linked on darwin only is listed too. Each module's licence
// files (LICENSE, LICENCE, COPYING, NOTICE, any case and extension) come from
// the module cache, whose contents go.sum pins, and are identified with
// github.com/google/licensecheck. A module without a licence file, or whose
// licence is not one of the permissive licences in allowed, is an error: a
// person must look at it before it ships. The Go distribution's own licence
// (the runtime and standard library are linked into every Go binary) is
// listed first.
package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/google/licensecheck"
)

// Platforms are the GOOS/GOARCH pairs `make release` builds.
var Platforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"}

// allowed are the licences (SPDX identifiers) a linked module may carry
// without a person deciding: permissive ones, whose only condition is to
// pass the notice on, which the generated file does.
var allowed = map[string]bool{
	"Apache-2.0": true, "MIT": true, "BSD-2-Clause": true, "BSD-3-Clause": true,
	"ISC": true, "BSD-3-Clause-Clear": true, "0BSD": true, "Unlicense": true, "CC0-1.0": true,
	"GooglePatentsFile": true, // Google's patent grant beside a BSD licence
}

// Module is one linked module and its licence files.
type Module struct {
	Path, Version, Dir string
	Files              []LicenseFile
}

// LicenseFile is one licence file of a module.
type LicenseFile struct {
	Name string   // file name in the module's root
	IDs  []string // SPDX identifiers found in it
	Text string
}

// licenseName matches the file names that hold a module's licence.
var licenseName = regexp.MustCompile(`(?i)^(LICEN[CS]E|COPYING|NOTICE|PATENTS)([-._][^/]*)?$`)

// noticeName matches the files passed on with a licence that hold no
// licence of their own (NOTICE, PATENTS grants).
var noticeName = regexp.MustCompile(`(?i)^(NOTICE|PATENTS)`)

func main() {
	root := flag.String("root", ".", "the main module's directory")
	pkg := flag.String("pkg", "./cmd/bloom", "the main package whose dependencies are listed")
	out := flag.String("o", "-", "output file, - for stdout")
	flag.Parse()
	if err := run(*root, *pkg, *out); err != nil {
		fmt.Fprintln(os.Stderr, "licenses:", err)
		os.Exit(1)
	}
}

func run(root, pkg, out string) error {
	mods, err := Linked(root, pkg, Platforms)
	if err != nil {
		return err
	}
	goroot, err := goEnv(root, "GOROOT")
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := Write(&buf, goroot, mods); err != nil {
		return err
	}
	if out == "-" {
		_, err = os.Stdout.Write(buf.Bytes())
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// Linked returns the modules (other than the main one and the standard
// library) that pkg links on any of the platforms, sorted by path, with
// their licence files read and identified.
func Linked(root, pkg string, platforms []string) ([]Module, error) {
	byPath := map[string]Module{}
	for _, p := range platforms {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok {
			return nil, fmt.Errorf("platform %q is not GOOS/GOARCH", p)
		}
		cmd := exec.Command("go", "list", "-deps", "-json=Standard,Module", pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=-mod=readonly")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go list %s for %s: %v\n%s", pkg, p, err, stderr.Bytes())
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		for {
			var lp struct {
				Standard bool
				Module   *struct {
					Path, Version, Dir string
					Main               bool
					Replace            *struct{ Path, Version, Dir string }
				}
			}
			if err := dec.Decode(&lp); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, fmt.Errorf("go list %s for %s: %v", pkg, p, err)
			}
			m := lp.Module
			if lp.Standard || m == nil || m.Main {
				continue
			}
			mod := Module{Path: m.Path, Version: m.Version, Dir: m.Dir}
			if r := m.Replace; r != nil {
				mod.Version, mod.Dir = cmp.Or(r.Version, r.Path), r.Dir
			}
			byPath[mod.Path] = mod
		}
	}
	var mods []Module
	for _, m := range byPath {
		files, err := licenseFiles(m.Dir)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %v", m.Path, m.Version, err)
		}
		m.Files = files
		mods = append(mods, m)
	}
	slices.SortFunc(mods, func(a, b Module) int { return strings.Compare(a.Path, b.Path) })
	return mods, nil
}

// licenseFiles reads and identifies the licence files in a module's root.
// It is an error when there is none, when one's licence cannot be
// identified, or when it is not in allowed.
func licenseFiles(dir string) ([]LicenseFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []LicenseFile
	for _, e := range entries {
		if !e.Type().IsRegular() || !licenseName.MatchString(e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		f := LicenseFile{Name: e.Name(), Text: string(b)}
		for _, m := range licensecheck.Scan(b).Match {
			if !slices.Contains(f.IDs, m.ID) {
				f.IDs = append(f.IDs, m.ID)
			}
		}
		if len(f.IDs) == 0 && !noticeName.MatchString(e.Name()) {
			return nil, fmt.Errorf("%s: no licence recognised in it", e.Name())
		}
		for _, id := range f.IDs {
			if !allowed[id] {
				return nil, fmt.Errorf("%s: licence %s is not one the project ships without review", e.Name(), id)
			}
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, errors.New("no licence file (LICENSE, COPYING, ...) in the module's root")
	}
	return files, nil
}

// ids is the module's licences, for the summary table.
func (m Module) ids() string {
	var ids []string
	for _, f := range m.Files {
		for _, id := range f.IDs {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return strings.Join(ids, ", ")
}

const rule = "================================================================================"

// Write writes the file: a header, a table of modules, then the Go
// distribution's licence and every module's licence files in full.
func Write(w io.Writer, goroot string, mods []Module) error {
	var goFiles []LicenseFile
	for _, name := range []string{"LICENSE", "PATENTS"} {
		text, err := os.ReadFile(filepath.Join(goroot, name))
		if err != nil {
			return fmt.Errorf("the Go distribution's licence: %v", err)
		}
		goFiles = append(goFiles, LicenseFile{Name: name, Text: string(text)})
	}
	var b strings.Builder
	b.WriteString("Third-party software in the bloom binary\n\n")
	b.WriteString("The bloom binary (cmd/bloom), as `make release` builds it for\n")
	b.WriteString(strings.Join(Platforms, ", ") + ", links the Go runtime and standard\n")
	b.WriteString("library and the modules below. Their licence and notice files follow in full.\n")
	b.WriteString("bloomkit itself is under the Apache License 2.0 (LICENSE).\n\n")
	b.WriteString("This file is generated by `make licenses`; a test fails when it is out of date.\n\n")
	width := len("Go runtime and standard library")
	for _, m := range mods {
		width = max(width, len(m.Path+" "+m.Version))
	}
	fmt.Fprintf(&b, "%-*s  %s\n", width, "Component", "Licence")
	fmt.Fprintf(&b, "%-*s  %s\n", width, "Go runtime and standard library", "BSD-3-Clause")
	for _, m := range mods {
		fmt.Fprintf(&b, "%-*s  %s\n", width, m.Path+" "+m.Version, m.ids())
	}
	for _, f := range goFiles {
		fmt.Fprintf(&b, "\n%s\nGo runtime and standard library: %s\n%s\n\n%s", rule, f.Name, rule, strings.TrimRight(f.Text, "\n")+"\n")
	}
	for _, m := range mods {
		for _, f := range m.Files {
			fmt.Fprintf(&b, "\n%s\n%s %s: %s\n%s\n\n%s", rule, m.Path, m.Version, f.Name, rule, strings.TrimRight(f.Text, "\n")+"\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func goEnv(dir, name string) (string, error) {
	cmd := exec.Command("go", "env", name)
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(b)), nil
}
