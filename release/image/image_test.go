package main

import (
	"github.com/google/go-containerregistry/pkg/name"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImageReadBack builds an image around a stand-in binary, writes it as
// an OCI layout and a docker-load tarball, and reads both back: the
// configuration (user, entrypoint, port, volume, health check) and the
// layer's files are what the image promises. `make image` does the same
// with the real binary.
func TestImageReadBack(t *testing.T) {
	bin := []byte("\x7fELF stand-in for the bloom binary")
	s := Spec{Binary: bin, Version: "v9.8.7", Commit: "0123456789abcdef0123456789abcdef01234567",
		Created: time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC),
		Docs:    map[string][]byte{"LICENSE": []byte("Apache License"), "THIRD_PARTY_LICENSES": []byte("third parties")}}
	img, err := s.Image()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "oci")
	if err := WriteLayout(dir, img); err != nil {
		t.Fatal(err)
	}
	in, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Check(bin); err != nil {
		t.Fatal(err)
	}
	c := in.Config.Config
	if c.User != "65532:65532" || strings.Join(c.Entrypoint, " ") != "/usr/local/bin/bloom serve" ||
		strings.Join(c.Cmd, " ") != "--addr 0.0.0.0:6479 --dir /data" {
		t.Errorf("user %q entrypoint %q cmd %q", c.User, c.Entrypoint, c.Cmd)
	}
	if _, ok := c.ExposedPorts["6479/tcp"]; !ok {
		t.Errorf("exposed ports %v", c.ExposedPorts)
	}
	if c.Labels["org.opencontainers.image.version"] != "v9.8.7" || !in.Config.Created.Time.Equal(s.Created) {
		t.Errorf("labels %v created %v", c.Labels, in.Config.Created)
	}
	// Check catches an image that is not the one promised.
	if err := in.Check([]byte("another binary")); err == nil || !strings.Contains(err.Error(), "not the binary given") {
		t.Errorf("Check with another binary: %v", err)
	}
	in.Config.Config.User = ""
	if err := in.Check(bin); err == nil || !strings.Contains(err.Error(), "user") {
		t.Errorf("Check of an image running as root: %v", err)
	}

	// The same image through a docker-load tarball, and built twice: the
	// same bytes.
	tarPath := filepath.Join(t.TempDir(), "image.tar")
	if err := run2tarball(tarPath, s); err != nil {
		t.Fatal(err)
	}
	back, err := tarball.ImageFromPath(tarPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	// docker-archive keeps the configuration and layers, not the manifest.
	c1, _ := img.ConfigName()
	c2, err := back.ConfigName()
	if err != nil || c1 != c2 {
		t.Errorf("tarball image config %v (%v), layout image %v", c2, err, c1)
	}
	img2, _ := s.Image()
	if d1, d2 := digest(t, img), digest(t, img2); d1 != d2 {
		t.Errorf("two builds of one spec: %v and %v", d1, d2)
	}
}

func digest(t *testing.T, img interface{ Digest() (v1.Hash, error) }) v1.Hash {
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func run2tarball(path string, s Spec) error {
	img, err := s.Image()
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return tarball.Write(nil, img, f)
}

// TestCheckStatic: the image refuses a binary that could not run without a
// base image.
func TestCheckStatic(t *testing.T) {
	if err := CheckStatic([]byte("#!/bin/sh\n")); err == nil || !strings.Contains(err.Error(), "not an ELF") {
		t.Errorf("a script: %v", err)
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the dynamic-binary case needs a linux/amd64 /bin/sh")
	}
	sh, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Skip(err)
	}
	if err := CheckStatic(sh); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Errorf("/bin/sh: %v", err)
	}
}

// The docker-load tarball is tagged with the version and latest (the docs
// run bloomkit/bloom, which is :latest).
func TestTarballTags(t *testing.T) {
	img, err := (Spec{Binary: []byte("bin"), Docs: map[string][]byte{}}).Image()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "image.tar")
	tag, err := WriteTarball(path, "v0.1.0", img)
	if err != nil {
		t.Fatal(err)
	}
	if tag.String() != "bloomkit/bloom:0.1.0" {
		t.Errorf("tag %s", tag)
	}
	for _, ref := range []string{"bloomkit/bloom:0.1.0", "bloomkit/bloom:latest"} {
		r, err := name.NewTag(ref)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tarball.ImageFromPath(path, &r); err != nil {
			t.Errorf("%s is not in the tarball: %v", ref, err)
		}
	}
}
