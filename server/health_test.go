package server

import (
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// /livez answers 200 while the process and its loops go round, even while
// writes are refused (MISCONF); /readyz and /healthz answer 503 then.
func TestLivezReadyz(t *testing.T) {
	s := startServer(t, Config{MetricsAddr: "127.0.0.1:0", retryMin: time.Hour})
	rc := dialRaw(t, s.Addr())
	if got := rc.do("BF.ADD", "k", "a"); got != ":1" {
		t.Fatal(got)
	}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + s.MetricsAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, p := range []string{"/livez", "/readyz", "/healthz"} {
		if code, body := get(p); code != 200 || body != "ok\n" {
			t.Fatalf("%s: %d %q", p, code, body)
		}
	}
	// The log fails (as on a full disk): writes are refused.
	s.aof.Break(syscall.ENOSPC)
	if got := rc.do("BF.ADD", "k", "b"); !strings.HasPrefix(got, "-MISCONF") {
		t.Fatalf("write after the failure: %s", got)
	}
	if code, body := get("/livez"); code != 200 {
		t.Fatalf("/livez during MISCONF: %d %q (a liveness probe would restart the process in a loop)", code, body)
	}
	for _, p := range []string{"/readyz", "/healthz"} {
		if code, body := get(p); code != 503 || !strings.Contains(body, "MISCONF") {
			t.Fatalf("%s during MISCONF: %d %q", p, code, body)
		}
	}
	// A stalled event loop makes /livez fail.
	if len(s.loops) > 0 {
		if msg := s.liveProblem(); msg != "" {
			t.Fatal(msg)
		}
		s.bgBeat.Store(monoNow() - int64(time.Minute))
		if msg := s.liveProblem(); !strings.Contains(msg, "background work") {
			t.Fatalf("stalled background: %q", msg)
		}
	}
}
