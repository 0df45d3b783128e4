package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDockerfileMatches checks that the Dockerfile, for users with Docker,
// describes the image this program builds: user, port, volume, health
// check, entrypoint and command.
func TestDockerfileMatches(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	// The last stage's instructions.
	src := string(b)
	src = src[strings.LastIndex(src, "\nFROM "):]
	got := map[string]string{}
	for _, line := range strings.Split(src, "\n") {
		if kw, rest, ok := strings.Cut(strings.TrimSpace(line), " "); ok && kw == strings.ToUpper(kw) {
			got[kw] = rest
		}
	}
	js := func(v []string) string { b, _ := json.Marshal(v); return strings.ReplaceAll(string(b), ",", ", ") }
	want := map[string]string{
		"FROM":        "scratch",
		"USER":        User,
		"WORKDIR":     DataDir,
		"VOLUME":      DataDir,
		"EXPOSE":      strings.TrimSuffix(Port, "/tcp"),
		"ENTRYPOINT":  js(Entrypoint),
		"CMD":         js(Cmd),
		"HEALTHCHECK": fmt.Sprintf("--interval=%v --timeout=%v --start-period=%v --retries=%d CMD %s", Health.Interval, Health.Timeout, Health.StartPeriod, Health.Retries, js(Health.Test[1:])),
	}
	for kw, w := range want {
		if got[kw] != w {
			t.Errorf("Dockerfile %s %s, the image has %s", kw, got[kw], w)
		}
	}
}
