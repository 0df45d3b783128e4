package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/server"
)

// bloom ping: 0 when the server answers, 2 with the reason when it does not
// (nothing listening, wrong password); BLOOMKIT_REQUIREPASS is its password.
func TestPing(t *testing.T) {
	s, err := server.New(server.Config{Addr: "127.0.0.1:0", NoPersistence: true, RequirePass: "s3cret",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	defer s.Close()
	bloomIn(t, t.TempDir(), "", "ping", "--addr", s.Addr(), "--password", "s3cret").want(t, exitOK, "ping with the password")
	t.Setenv("BLOOMKIT_REQUIREPASS", "s3cret")
	bloomIn(t, t.TempDir(), "", "ping", "--addr", s.Addr()).want(t, exitOK, "ping with BLOOMKIT_REQUIREPASS")
	r := bloomIn(t, t.TempDir(), "", "ping", "--addr", s.Addr(), "--password", "wrong")
	if r.code != exitError || !strings.Contains(r.stderr, "bloom ping: "+s.Addr()) {
		t.Errorf("wrong password: exit %d, stderr %q", r.code, r.stderr)
	}
	r = bloomIn(t, t.TempDir(), "", "ping", "--addr", refusedAddr(t), "--timeout", "500ms")
	if r.code != exitError || !strings.Contains(r.stderr, "refused") {
		t.Errorf("nothing listening: exit %d, stderr %q", r.code, r.stderr)
	}
}
