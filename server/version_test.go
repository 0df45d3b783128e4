package server

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/internal/version"
)

// TestVersionInInfoAndMetrics checks that INFO and /metrics report the
// build package version reports (the one `bloom --version` prints), and
// that redis_version stays a Redis release clients accept.
func TestVersionInInfoAndMetrics(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true, MetricsAddr: "127.0.0.1:0"})
	v := version.Get()
	sha := v.Commit
	if sha == "" {
		sha = "00000000"
	}
	dirty := "0"
	if v.Modified {
		dirty = "1"
	}
	info, err := strconv.Unquote(dialRaw(t, s.Addr()).do("INFO", "server"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"redis_version:7.2.4\r\n",
		"bloomkit_version:" + v.Version + "\r\n",
		"bloomkit_git_sha1:" + sha + "\r\n",
		"bloomkit_git_dirty:" + dirty + "\r\n",
	} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO server lacks %q:\n%s", want, info)
		}
	}
	resp, err := http.Get("http://" + s.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	want := fmt.Sprintf("bloomkit_build_info{goversion=%q,revision=%q,version=%q} 1\n", v.GoVersion, v.Commit, v.Version)
	if !strings.Contains(string(b), want) {
		t.Errorf("/metrics lacks %q", want)
	}
}
