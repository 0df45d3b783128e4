package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-25T18:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	installed := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.2.0"}}
	cases := []struct {
		name              string
		bi                *debug.BuildInfo
		tag, commit, date string
		want              Info
	}{
		{"nothing known", nil, "", "", "", Info{Version: "devel"}},
		{"go install module@version", installed, "", "", "", Info{Version: "0.2.0", GoVersion: "go1.26.8"}},
		{"git checkout", vcs, "", "", "", Info{Version: "devel", Commit: "0123456789abcdef0123456789abcdef01234567", Modified: true, Date: "2026-11-25T18:00:00Z", GoVersion: "go1.26.8"}},
		{"release ldflags win", vcs, "v0.3.0", "fedcba9876543210fedcba9876543210fedcba98", "2026-12-01T00:00:00Z",
			Info{Version: "0.3.0", Commit: "fedcba9876543210fedcba9876543210fedcba98", Modified: true, Date: "2026-12-01T00:00:00Z", GoVersion: "go1.26.8"}},
		{"describe after a tag, dirty", installed, "v0.3.0-2-gfedcba98-dirty", "", "", Info{Version: "0.3.0-2-gfedcba98", Modified: true, GoVersion: "go1.26.8"}},
	}
	for _, c := range cases {
		got := resolve(c.bi, c.tag, c.commit, c.date)
		if c.bi == nil {
			c.want.GoVersion = got.GoVersion // the running toolchain
		}
		c.want.Platform = got.Platform
		if got != c.want {
			t.Errorf("%s: got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

func TestString(t *testing.T) {
	i := Info{Version: "0.2.0", Commit: "0123456789abcdef0123", Date: "2026-11-25T18:00:00Z", GoVersion: "go1.26.8", Platform: "linux/amd64"}
	if got, want := i.String(), "0.2.0 (commit 0123456789ab, 2026-11-25T18:00:00Z, go1.26.8 linux/amd64)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	i = Info{Version: "devel", Modified: true, GoVersion: "go1.26.8", Platform: "darwin/arm64"}
	if got, want := i.String(), "devel (commit unknown, modified, go1.26.8 darwin/arm64)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestGet(t *testing.T) {
	i := Get()
	if i.Version == "" || !strings.HasPrefix(i.GoVersion, "go") || !strings.Contains(i.Platform, "/") {
		t.Errorf("Get() = %+v: version, Go version and platform are always known", i)
	}
}
