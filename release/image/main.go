// Command image builds bloomkit's container image from the static
// linux/amd64 bloom binary `make release` writes, without Docker and
// without a base image: one layer holding the binary, the licences, a
// passwd entry for the user it runs as, and the data volume. `make image`
// runs it:
//
//	go run ./image -binary ../dist/bloom-v0.2.0-linux-amd64/bloom -root .. -out ../dist -version v0.2.0
//
// It writes an OCI image layout (dist/bloom-VERSION-image-oci/, for skopeo,
// podman, crane or any registry tool) and a tarball `docker load` reads
// (dist/bloom-VERSION-image.tar, tagged bloomkit/bloom:VERSION and
// bloomkit/bloom:latest), then reads
// the layout back and checks the configuration and the layer.
//
// The image runs `bloom serve --addr 0.0.0.0:6479 --dir /data` as user 65532
// (no root), exposes 6479, keeps its data in the /data volume and checks its
// health with `bloom ping`. The server listens on every interface of the
// container: give it a password (BLOOMKIT_REQUIREPASS, which `bloom ping`
// reads too) unless the network around it is private. Dockerfile at the
// repository root builds the same image with Docker.
package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image holds and how it runs; the test and Dockerfile agree.
const (
	BinaryPath = "/usr/local/bin/bloom"
	DataDir    = "/data"
	Port       = "6479/tcp"
	UID        = 65532 // the "nonroot" user of distroless images
	User       = "65532:65532"
	DocDir     = "/usr/share/doc/bloomkit"
)

var (
	// Entrypoint and Cmd: `docker run IMAGE --requirepass x` replaces Cmd,
	// so flags given at run time need --addr and --dir again; the
	// BLOOMKIT_* environment variables change one setting and keep the rest.
	Entrypoint = []string{BinaryPath, "serve"}
	Cmd        = []string{"--addr", "0.0.0.0:6479", "--dir", DataDir}
	// Health: PING on the container's loopback, with BLOOMKIT_REQUIREPASS.
	Health = &v1.HealthConfig{
		Test:     []string{"CMD", BinaryPath, "ping", "--timeout", "2s"},
		Interval: 10 * time.Second, Timeout: 3 * time.Second, StartPeriod: 30 * time.Second, Retries: 3,
	}
	// docs are copied from the repository root into DocDir.
	docs = []string{"LICENSE", "THIRD_PARTY_LICENSES"}
)

// Spec is what to build.
type Spec struct {
	Binary  []byte            // the static linux/amd64 bloom
	Docs    map[string][]byte // file name → content, put in DocDir
	Version string            // v0.2.0
	Commit  string
	Created time.Time // the commit's date: every file's time and the image's
}

func main() {
	binary := flag.String("binary", "", "the static linux/amd64 bloom binary")
	root := flag.String("root", "..", "the repository root (for LICENSE and THIRD_PARTY_LICENSES)")
	out := flag.String("out", "../dist", "output directory")
	version := flag.String("version", "", "the version the binary was built as")
	commit := flag.String("commit", "", "its commit")
	date := flag.String("date", "", "its commit date, RFC 3339")
	flag.Parse()
	if err := run(*binary, *root, *out, *version, *commit, *date); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(binary, root, out, version, commit, date string) error {
	if version == "" {
		return errors.New("no -version")
	}
	s := Spec{Version: version, Commit: commit, Docs: map[string][]byte{}, Created: time.Unix(0, 0).UTC()}
	if date != "" {
		t, err := time.Parse(time.RFC3339, date)
		if err != nil {
			return fmt.Errorf("-date: %v", err)
		}
		s.Created = t.UTC()
	}
	var err error
	if s.Binary, err = os.ReadFile(binary); err != nil {
		return err
	}
	if err := CheckStatic(s.Binary); err != nil {
		return fmt.Errorf("%s: %v", binary, err)
	}
	for _, d := range docs {
		if s.Docs[d], err = os.ReadFile(filepath.Join(root, d)); err != nil {
			return err
		}
	}
	img, err := s.Image()
	if err != nil {
		return err
	}
	dir := filepath.Join(out, "bloom-"+version+"-image-oci")
	if err := WriteLayout(dir, img); err != nil {
		return err
	}
	tarPath := filepath.Join(out, "bloom-"+version+"-image.tar")
	tag, err := WriteTarball(tarPath, version, img)
	if err != nil {
		return err
	}
	got, err := Inspect(dir)
	if err != nil {
		return fmt.Errorf("reading %s back: %v", dir, err)
	}
	if err := got.Check(s.Binary); err != nil {
		return fmt.Errorf("%s: %v", dir, err)
	}
	d, _ := img.Digest()
	fmt.Printf("image: %s (OCI layout) and %s (docker load; %s), %s\n", dir, tarPath, tag, d)
	return nil
}

// WriteTarball writes img as a docker-load tarball tagged
// bloomkit/bloom:VERSION and bloomkit/bloom:latest (what the docs run), and
// returns the version's tag.
func WriteTarball(path, version string, img v1.Image) (name.Tag, error) {
	tag, err := name.NewTag("bloomkit/bloom:"+strings.TrimPrefix(strings.ReplaceAll(version, "+", "-"), "v"), name.WeakValidation)
	if err != nil {
		return tag, err
	}
	latest, err := name.NewTag("bloomkit/bloom:latest", name.WeakValidation)
	if err != nil {
		return tag, err
	}
	return tag, tarball.MultiRefWriteToFile(path, map[name.Reference]v1.Image{tag: img, latest: img})
}

// CheckStatic refuses what would not run on an empty base: anything but a
// statically linked linux/amd64 ELF executable.
func CheckStatic(bin []byte) error {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %v", err)
	}
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("built for %v, the image is linux/amd64", f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked: an image without a base has no libc (build with CGO_ENABLED=0, as make release does)")
		}
	}
	return nil
}

// Image assembles the image: one layer on an empty base, OCI media types.
func (s Spec) Image() (v1.Image, error) {
	layerTar, err := s.layerTar()
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		History:   v1.History{Created: v1.Time{Time: s.Created}, CreatedBy: "bloomkit release/image: bloom " + s.Version, Comment: "static bloom binary, licences, nonroot user, /data"},
		MediaType: types.OCILayer,
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Created = v1.Time{Time: s.Created}
	cf.Author = "bloomkit"
	cf.Config = v1.Config{
		User:         User,
		Entrypoint:   Entrypoint,
		Cmd:          Cmd,
		Env:          []string{"PATH=/usr/local/bin"},
		WorkingDir:   DataDir,
		ExposedPorts: map[string]struct{}{Port: {}},
		Volumes:      map[string]struct{}{DataDir: {}},
		Healthcheck:  Health,
		StopSignal:   "SIGTERM",
		Labels: map[string]string{
			"org.opencontainers.image.title":    "bloomkit",
			"org.opencontainers.image.version":  s.Version,
			"org.opencontainers.image.revision": s.Commit,
			"org.opencontainers.image.created":  s.Created.Format(time.RFC3339),
			"org.opencontainers.image.licenses": "Apache-2.0",
		},
	}
	return mutate.ConfigFile(img, cf)
}

// layerTar is the layer's files, owned by root except the data directory,
// dated Created.
func (s Spec) layerTar() ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: s.Created, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(b)), ModTime: s.Created, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	steps := []func() error{
		func() error { return dir("etc", 0o755, 0) },
		func() error {
			return file("etc/passwd", 0o644, []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:bloomkit:%s:/sbin/nologin\n", UID, UID, DataDir)))
		},
		func() error { return file("etc/group", 0o644, []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", UID))) },
		func() error { return dir("tmp", 0o1777, 0) },
		func() error { return dir(DataDir[1:], 0o700, UID) },
		func() error { return dir("usr", 0o755, 0) },
		func() error { return dir("usr/local", 0o755, 0) },
		func() error { return dir("usr/local/bin", 0o755, 0) },
		func() error { return file(BinaryPath[1:], 0o755, s.Binary) },
		func() error { return dir("usr/share", 0o755, 0) },
		func() error { return dir("usr/share/doc", 0o755, 0) },
		func() error { return dir(DocDir[1:], 0o755, 0) },
	}
	for _, d := range docs {
		steps = append(steps, func() error { return file(DocDir[1:]+"/"+d, 0o644, s.Docs[d]) })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteLayout writes img as a fresh OCI image layout in dir.
func WriteLayout(dir string, img v1.Image) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendImage(img)
}

// Inspected is what an image layout holds, read back.
type Inspected struct {
	Config v1.ConfigFile
	Files  map[string]*tar.Header // path in the image → header
	Data   map[string][]byte      // path → content, regular files
	Layers int
}

// Inspect reads the one image in an OCI layout: its configuration and the
// files of its layers.
func Inspect(dir string) (*Inspected, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(im.Manifests) != 1 {
		return nil, fmt.Errorf("%d images in the layout, want 1", len(im.Manifests))
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	in := &Inspected{Config: *cf, Files: map[string]*tar.Header{}, Data: map[string][]byte{}, Layers: len(layers)}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, err
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rc.Close()
				return nil, err
			}
			path := "/" + strings.TrimSuffix(h.Name, "/")
			in.Files[path] = h
			if h.Typeflag == tar.TypeReg {
				if in.Data[path], err = io.ReadAll(tr); err != nil {
					rc.Close()
					return nil, err
				}
			}
		}
		rc.Close()
	}
	return in, nil
}

// Check compares what was read back with what the image must be.
func (in *Inspected) Check(binary []byte) error {
	c := in.Config.Config
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if in.Config.OS != "linux" || in.Config.Architecture != "amd64" {
		bad("platform %s/%s, want linux/amd64", in.Config.OS, in.Config.Architecture)
	}
	if c.User != User {
		bad("user %q, want %q", c.User, User)
	}
	if fmt.Sprint(c.Entrypoint) != fmt.Sprint(Entrypoint) || fmt.Sprint(c.Cmd) != fmt.Sprint(Cmd) {
		bad("entrypoint %q cmd %q, want %q %q", c.Entrypoint, c.Cmd, Entrypoint, Cmd)
	}
	if _, ok := c.ExposedPorts[Port]; !ok || len(c.ExposedPorts) != 1 {
		bad("exposed ports %v, want %s", c.ExposedPorts, Port)
	}
	if _, ok := c.Volumes[DataDir]; !ok {
		bad("volumes %v, want %s", c.Volumes, DataDir)
	}
	if c.Healthcheck == nil || fmt.Sprint(c.Healthcheck.Test) != fmt.Sprint(Health.Test) {
		bad("health check %+v, want %q", c.Healthcheck, Health.Test)
	}
	if in.Layers != 1 {
		bad("%d layers, want 1", in.Layers)
	}
	if h := in.Files[BinaryPath]; h == nil || h.Mode&0o111 == 0 || !bytes.Equal(in.Data[BinaryPath], binary) {
		bad("%s missing, not executable or not the binary given", BinaryPath)
	}
	if h := in.Files[DataDir]; h == nil || h.Typeflag != tar.TypeDir || h.Uid != UID {
		bad("%s is not a directory owned by %d", DataDir, UID)
	}
	if !strings.Contains(string(in.Data["/etc/passwd"]), fmt.Sprintf(":%d:%d:", UID, UID)) {
		bad("/etc/passwd lacks user %d", UID)
	}
	for _, d := range docs {
		if len(in.Data[DocDir+"/"+d]) == 0 {
			bad("%s/%s missing", DocDir, d)
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}
