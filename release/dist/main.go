// Command dist builds bloomkit's release: a static bloom binary for each
// platform, packed with the licences in bloom-VERSION-OS-ARCH.tar.gz, and
// SHA256SUMS over the archives; then it checks what it wrote. `make release`
// runs it:
//
//	go run ./dist -root .. -out ../dist -version v0.2.0 -commit $(git rev-parse HEAD) -date 2026-11-25T18:00:00Z
//
// Binaries are built with CGO_ENABLED=0 and -trimpath, and archives carry
// the commit's date as every file's time, so the same commit and toolchain
// give the same bytes. The check: each archive's checksum, its files, the
// binary's format and architecture, no dynamic loader on linux (static),
// only the system's own libraries on darwin (a Go binary there always calls
// libSystem), and, for the platform the check runs on, `bloom --version`
// naming the version and commit.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Platforms are the release's GOOS/GOARCH pairs.
var Platforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"}

// docs are the files packed beside the binary (from the repository root).
var docs = []string{"LICENSE", "THIRD_PARTY_LICENSES", "README.md", "CHANGELOG.md"}

const versionPkg = "github.com/bloomkit/bloomkit/internal/version"

// Release says what to build.
type Release struct {
	Root      string   // the main module's directory
	Out       string   // where archives and SHA256SUMS go
	Version   string   // v0.2.0, or a pseudo-version
	Commit    string   // full commit hash
	Date      string   // the commit's date, RFC 3339: stamped in and used as file times
	Platforms []string // GOOS/GOARCH
}

func main() {
	var r Release
	var platforms string
	flag.StringVar(&r.Root, "root", "..", "the main module's directory")
	flag.StringVar(&r.Out, "out", "../dist", "output directory")
	flag.StringVar(&r.Version, "version", "", "version to stamp (release/version.sh prints it)")
	flag.StringVar(&r.Commit, "commit", "", "commit hash to stamp")
	flag.StringVar(&r.Date, "date", "", "commit date to stamp, RFC 3339")
	flag.StringVar(&platforms, "platforms", strings.Join(Platforms, ","), "GOOS/GOARCH list")
	flag.Parse()
	r.Platforms = strings.Split(platforms, ",")
	if err := r.Build(); err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(1)
	}
	if err := r.Check(); err != nil {
		fmt.Fprintln(os.Stderr, "dist: check:", err)
		os.Exit(1)
	}
	fmt.Printf("dist: %d archives and SHA256SUMS in %s, checked\n", len(r.Platforms), r.Out)
}

// Name is the archive's base name (and the folder inside it) for a platform.
func (r *Release) Name(platform string) string {
	return "bloom-" + r.Version + "-" + strings.ReplaceAll(platform, "/", "-")
}

// BinaryPath is where Build leaves a platform's binary, unpacked, for the
// image and for tests.
func (r *Release) BinaryPath(platform string) string {
	return filepath.Join(r.Out, r.Name(platform), "bloom")
}

func (r *Release) mtime() (time.Time, error) {
	if r.Date == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	return time.Parse(time.RFC3339, r.Date)
}

// Build compiles every platform's binary, packs the archives and writes
// SHA256SUMS.
func (r *Release) Build() error {
	if r.Version == "" {
		return errors.New("no -version")
	}
	mtime, err := r.mtime()
	if err != nil {
		return fmt.Errorf("-date: %v", err)
	}
	if err := os.MkdirAll(r.Out, 0o755); err != nil {
		return err
	}
	ldflags := fmt.Sprintf("-s -w -buildid= -X %s.tag=%s -X %s.commit=%s -X %s.date=%s",
		versionPkg, r.Version, versionPkg, r.Commit, versionPkg, r.Date)
	var sums strings.Builder
	for _, p := range r.Platforms {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok {
			return fmt.Errorf("platform %q is not GOOS/GOARCH", p)
		}
		bin := r.BinaryPath(p)
		abs, err := filepath.Abs(bin)
		if err != nil {
			return err
		}
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", abs, "./cmd/bloom")
		cmd.Dir = r.Root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch, "GOFLAGS=-buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build for %s: %v\n%s", p, err, out)
		}
		archive := r.Name(p) + ".tar.gz"
		data, err := r.pack(p, bin, mtime)
		if err != nil {
			return fmt.Errorf("%s: %v", archive, err)
		}
		if err := os.WriteFile(filepath.Join(r.Out, archive), data, 0o644); err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), archive)
	}
	return os.WriteFile(filepath.Join(r.Out, "SHA256SUMS"), []byte(sums.String()), 0o644)
}

// pack makes a platform's tar.gz: NAME/bloom and the docs, owned by root,
// dated mtime.
func (r *Release) pack(platform, bin string, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	add := func(name, src string, mode int64) error {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: r.Name(platform) + "/" + name, Mode: mode, Size: int64(len(b)), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	}
	if err := add("bloom", bin, 0o755); err != nil {
		return nil, err
	}
	for _, d := range docs {
		if err := add(d, filepath.Join(r.Root, d), 0o644); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Check verifies what Build wrote.
func (r *Release) Check() error {
	sums, err := os.ReadFile(filepath.Join(r.Out, "SHA256SUMS"))
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSuffix(string(sums), "\n"), "\n")
	if len(lines) != len(r.Platforms) {
		return fmt.Errorf("SHA256SUMS has %d lines for %d platforms", len(lines), len(r.Platforms))
	}
	for i, p := range r.Platforms {
		archive := r.Name(p) + ".tar.gz"
		sum, name, _ := strings.Cut(lines[i], "  ")
		if name != archive {
			return fmt.Errorf("SHA256SUMS line %d names %q, want %q", i+1, name, archive)
		}
		data, err := os.ReadFile(filepath.Join(r.Out, archive))
		if err != nil {
			return err
		}
		if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != sum {
			return fmt.Errorf("%s: checksum differs from SHA256SUMS", archive)
		}
		files, err := unpack(data)
		if err != nil {
			return fmt.Errorf("%s: %v", archive, err)
		}
		for _, want := range append([]string{"bloom"}, docs...) {
			if _, ok := files[r.Name(p)+"/"+want]; !ok {
				return fmt.Errorf("%s lacks %s", archive, want)
			}
		}
		bin := files[r.Name(p)+"/bloom"]
		if err := checkBinary(p, bin); err != nil {
			return fmt.Errorf("%s: bloom: %v", archive, err)
		}
		if p == runtime.GOOS+"/"+runtime.GOARCH {
			if err := r.checkRuns(r.BinaryPath(p), bin); err != nil {
				return fmt.Errorf("%s: %v", archive, err)
			}
		}
	}
	return nil
}

func unpack(data []byte) (map[string][]byte, error) {
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[h.Name] = b
	}
}

// checkBinary checks the executable format and architecture, and that a
// linux binary is static.
func checkBinary(platform string, bin []byte) error {
	goos, goarch, _ := strings.Cut(platform, "/")
	switch goos {
	case "linux":
		f, err := elf.NewFile(bytes.NewReader(bin))
		if err != nil {
			return err
		}
		want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[goarch]
		if f.Machine != want {
			return fmt.Errorf("ELF machine %v, want %v", f.Machine, want)
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				return errors.New("dynamically linked (it names a program interpreter); built without CGO_ENABLED=0?")
			}
		}
		if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
			return fmt.Errorf("needs shared libraries %v", libs)
		}
	case "darwin":
		f, err := macho.NewFile(bytes.NewReader(bin))
		if err != nil {
			return err
		}
		want := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[goarch]
		if f.Cpu != want {
			return fmt.Errorf("Mach-O CPU %v, want %v", f.Cpu, want)
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			return err
		}
		for _, l := range libs {
			if !strings.HasPrefix(l, "/usr/lib/") && !strings.HasPrefix(l, "/System/Library/") {
				return fmt.Errorf("needs %s, which macOS does not ship", l)
			}
		}
	default:
		return fmt.Errorf("no check for %s", goos)
	}
	return nil
}

// checkRuns runs the unpacked binary (which must equal the archived one)
// and checks what --version says.
func (r *Release) checkRuns(path string, archived []byte) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !bytes.Equal(b, archived) {
		return fmt.Errorf("%s differs from the archived binary", path)
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("bloom --version: %v\n%s", err, out)
	}
	v := strings.TrimSuffix(strings.TrimPrefix(r.Version, "v"), "-dirty")
	want := "bloom " + v + " (commit "
	if r.Commit != "" {
		want += r.Commit[:min(12, len(r.Commit))]
	}
	if got := string(out); !strings.HasPrefix(got, want) || (r.Date != "" && !strings.Contains(got, r.Date)) {
		return fmt.Errorf("bloom --version printed %q, want %q… with the date %s", got, want, r.Date)
	}
	return nil
}
