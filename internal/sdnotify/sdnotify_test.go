package sdnotify

import (
	"net"
	"path/filepath"
	"testing"
	"time"
)

func TestSendToFakeSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify.sock")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Skipf("no unixgram sockets here: %v", err)
	}
	defer ln.Close()
	t.Setenv("NOTIFY_SOCKET", path)
	n, ok := FromEnv()
	if !ok {
		t.Fatal("FromEnv: not ok with NOTIFY_SOCKET set")
	}
	if err := n.Send("READY=1"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	ln.SetReadDeadline(time.Now().Add(5 * time.Second))
	k, _, err := ln.ReadFromUnix(buf)
	if err != nil || string(buf[:k]) != "READY=1" {
		t.Fatalf("read %q, %v", buf[:k], err)
	}
	t.Setenv("WATCHDOG_USEC", "3000000")
	t.Setenv("WATCHDOG_PID", "")
	if d, ok, err := WatchdogInterval(); !ok || err != nil || d != 1500*time.Millisecond {
		t.Fatalf("WatchdogInterval = %v %v %v", d, ok, err)
	}
	t.Setenv("WATCHDOG_PID", "1")
	if _, ok, _ := WatchdogInterval(); ok {
		t.Fatal("watchdog meant for pid 1 taken as ours")
	}
	t.Setenv("NOTIFY_SOCKET", "")
	if _, ok := FromEnv(); ok {
		t.Fatal("FromEnv without NOTIFY_SOCKET")
	}
}
