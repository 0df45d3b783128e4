package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestReleaseHostPlatform builds the release for the platform the test runs
// on (the full four-platform build is `make release`, which CI runs), then
// checks it, then checks that a damaged archive is caught.
func TestReleaseHostPlatform(t *testing.T) {
	if os.Getenv("BLOOMKIT_LONG") == "" {
		t.Skip("compiles bloom afresh (-trimpath, CGO_ENABLED=0: minutes on a cold cache); make test-long runs it, and make release (run by CI) does the same check on all four platforms")
	}
	host := runtime.GOOS + "/" + runtime.GOARCH
	if host != "linux/amd64" && host != "linux/arm64" && host != "darwin/amd64" && host != "darwin/arm64" {
		t.Skipf("%s is not a release platform", host)
	}
	r := &Release{Root: filepath.Join("..", ".."), Out: t.TempDir(), Version: "v9.8.7-test",
		Commit: "0123456789abcdef0123456789abcdef01234567", Date: "2026-11-25T18:00:00Z", Platforms: []string{host}}
	if err := r.Build(); err != nil {
		t.Fatal(err)
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	// Same inputs, same bytes.
	first, _ := os.ReadFile(filepath.Join(r.Out, "SHA256SUMS"))
	if err := r.Build(); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(filepath.Join(r.Out, "SHA256SUMS"))
	if string(first) != string(second) {
		t.Errorf("two builds of the same commit differ:\n%s\n%s", first, second)
	}
	archive := filepath.Join(r.Out, r.Name(host)+".tar.gz")
	data, _ := os.ReadFile(archive)
	data[len(data)/2] ^= 1
	os.WriteFile(archive, data, 0o644)
	if err := r.Check(); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("a damaged archive: Check said %v", err)
	}
}

// TestCheckBinaryRefusesDynamic: a dynamically linked ELF (the system's
// shell) is not what a release ships.
func TestCheckBinaryRefusesDynamic(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs a dynamically linked ELF binary")
	}
	b, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Skip(err)
	}
	if err := checkBinary("linux/"+runtime.GOARCH, b); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Errorf("/bin/sh: %v, want dynamically linked", err)
	}
	if err := checkBinary("linux/riscv64", b); err == nil {
		t.Error("/bin/sh passed as a riscv64 binary")
	}
}
