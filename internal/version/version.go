// Package version says which build of bloomkit is running: the release
// version, the commit it was built from, the commit's date and the Go
// toolchain. `bloom --version`, the server's INFO (bloomkit_version,
// bloomkit_git_sha1) and its bloomkit_build_info metric all read it here, so
// they cannot disagree.
//
// A release build sets the values at link time (the Makefile's LDFLAGS do):
//
//	go build -ldflags "-X github.com/bloomkit/bloomkit/internal/version.tag=v0.2.0 \
//	  -X github.com/bloomkit/bloomkit/internal/version.commit=$(git rev-parse HEAD) \
//	  -X github.com/bloomkit/bloomkit/internal/version.date=$(git log -1 --format=%cI)" ./cmd/bloom
//
// Without them the build's own record fills in what it can: the module
// version of `go install github.com/bloomkit/bloomkit/cmd/bloom@v0.2.0`, and
// the commit and its time that the go command stamps into a binary built in
// a git checkout (-buildvcs). What is still unknown is reported as "devel"
// (version) or "" (commit, date).
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Set with -ldflags -X at link time; empty otherwise.
var (
	tag    string // the release tag, v0.2.0, or a git describe string
	commit string // the full commit hash
	date   string // the commit's date, RFC 3339
)

// Info is one build's identity.
type Info struct {
	// Version is the release, without the tag's leading "v" (0.2.0, or
	// 0.2.0-3-g1a2b3c4d for a build after the tag), or "devel" when the build
	// does not say.
	Version string
	// Commit is the git commit hash, "" when unknown.
	Commit string
	// Modified is true when the working tree differed from Commit.
	Modified bool
	// Date is when Commit was made (RFC 3339), "" when unknown.
	Date string
	// GoVersion is the toolchain that built the binary (go1.26.8).
	GoVersion string
	// Platform is GOOS/GOARCH.
	Platform string
}

// Get returns this binary's build identity.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(bi, tag, commit, date)
}

// resolve combines the link-time values with the build record; the
// link-time values win.
func resolve(bi *debug.BuildInfo, tag, commit, date string) Info {
	i := Info{GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		i.GoVersion = bi.GoVersion
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			i.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Commit = s.Value
			case "vcs.time":
				i.Date = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	if tag != "" {
		i.Version = tag
	}
	if commit != "" {
		i.Commit = commit
	}
	if date != "" {
		i.Date = date
	}
	// A git describe string ends in -dirty for a modified tree.
	if v, ok := strings.CutSuffix(i.Version, "-dirty"); ok {
		i.Version, i.Modified = v, true
	}
	i.Version = strings.TrimPrefix(i.Version, "v")
	if i.Version == "" {
		i.Version = "devel"
	}
	return i
}

// ShortCommit is the commit's first 12 hex digits, "unknown" when it is not
// known.
func (i Info) ShortCommit() string {
	switch {
	case i.Commit == "":
		return "unknown"
	case len(i.Commit) > 12:
		return i.Commit[:12]
	}
	return i.Commit
}

// String is the one-line form `bloom --version` prints:
// "0.2.0 (commit 1a2b3c4d5e6f, 2026-11-25T18:00:00Z, go1.26.8 linux/amd64)".
func (i Info) String() string {
	c := i.ShortCommit()
	if i.Modified {
		c += ", modified"
	}
	if i.Date != "" {
		c += ", " + i.Date
	}
	return fmt.Sprintf("%s (commit %s, %s %s)", i.Version, c, i.GoVersion, i.Platform)
}
