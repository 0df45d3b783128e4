package server

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/internal/memlimit"
)

func bufferLogger(buf *lockedBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// The default maxmemory of a server in a container is 90% of the
// container's cgroup limit, not of the machine's memory, and the start-up
// log says so in human units.
func TestDefaultMaxMemoryFromCgroup(t *testing.T) {
	root := t.TempDir()
	for path, data := range map[string]string{
		"proc/meminfo":                            "MemTotal:       67108864 kB\nMemAvailable:   60000000 kB\n",
		"proc/self/cgroup":                        "0::/docker/abc\n",
		"sys/fs/cgroup/docker/abc/memory.max":     "1073741824\n",
		"sys/fs/cgroup/docker/abc/memory.current": "1000\n",
	} {
		p := filepath.Join(root, path)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var logs lockedBuffer
	s := startServer(t, Config{memSystem: memlimit.System{Root: root}, Logger: bufferLogger(&logs)})
	rc := dialRaw(t, s.Addr())
	if got, want := rc.do("CONFIG", "GET", "maxmemory"), `{"maxmemory":"966367638"}`; got != want && got != `["maxmemory" "966367638"]` {
		t.Fatalf("CONFIG GET maxmemory = %s; want 90%% of the 1 GiB cgroup limit (966367638)", got)
	}
	if !strings.Contains(logs.String(), "maxmemory=\"921.6 MiB\"") || !strings.Contains(logs.String(), "cgroup") {
		t.Fatalf("start-up log does not give the limit in human units and its source:\n%s", logs.String())
	}
	// CONFIG SET maxmemory 0 goes back to the same default.
	if got := rc.do("CONFIG", "SET", "maxmemory", "0"); got != "+OK" {
		t.Fatal(got)
	}
	if got := rc.do("CONFIG", "GET", "maxmemory"); !strings.Contains(got, "966367638") {
		t.Fatalf("after CONFIG SET maxmemory 0: %s", got)
	}
}
