//go:build unix

package server

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// makeFIFO makes path a named pipe.
func makeFIFO(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

// slowFile returns, once the server has opened the named pipe at path
// for reading (so that it is reading it now), a function that writes
// data into it and closes it: the server's read then ends. The pipe is
// also written at cleanup, so that a failed test leaves no server
// blocked.
func slowFile(t *testing.T, path string, data []byte) (finish func()) {
	t.Helper()
	opened := make(chan *os.File, 1)
	go func() {
		// Opening a pipe for writing returns when a reader opened it.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			close(opened)
			return
		}
		opened <- f
	}()
	var f *os.File
	select {
	case f = <-opened:
	case <-time.After(20 * time.Second):
		// Unblock the opener before failing.
		if r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			defer r.Close()
		}
		t.Fatal("the server never opened the file")
	}
	done := false
	finish = func() {
		if done || f == nil {
			return
		}
		done = true
		f.Write(data)
		f.Close()
	}
	t.Cleanup(finish)
	return finish
}

// CONFIG SET of a tls-* file reads the files with no lock that other
// clients wait for: while the certificate comes from a pipe nobody has
// written yet, another client's BF.ADD and PING answer, and the CONFIG
// SET answers once the file is whole. (The files were read with the
// keyspace lock held: every client waited as long as the file did.)
func TestTLSFilesReadOffTheLock(t *testing.T) { bothPaths(t, testTLSFilesReadOffTheLock) }

func testTLSFilesReadOffTheLock(t *testing.T, goroutinePerConn bool) {
	m := newMTLS(t)
	s := startServer(t, Config{goroutinePerConn: goroutinePerConn, NoPersistence: true, Addr: "127.0.0.1:0", TLSAddr: "127.0.0.1:0", TLSCert: m.srvCert, TLSKey: m.srvKey,
		TLSParams: map[string]string{"tls-ca-cert-file": m.ca.File}})
	newCert, newKey, _ := m.ca.issue("server2")
	pem, err := os.ReadFile(newCert)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "slow.crt")
	admin, other := dialRaw(t, s.Addr()), dialRaw(t, s.Addr())

	makeFIFO(t, fifo)
	admin.send("CONFIG", "SET", "tls-cert-file", fifo, "tls-key-file", newKey)
	finish := slowFile(t, fifo, pem)
	for _, cmd := range [][]string{{"BF.ADD", "k", "x"}, {"PING"}, {"CONFIG", "SET", "maxmemory", "0"}} {
		if got, err := doWithin(other, 5*time.Second, cmd...); err != nil {
			t.Fatalf("%v while CONFIG SET reads a slow certificate file: %v", cmd, err)
		} else if got != ":1" && got != "+PONG" && got != "+OK" {
			t.Fatalf("%v: %s", cmd, got)
		}
	}
	admin.c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := readReply(admin.r); err == nil {
		t.Fatal("CONFIG SET answered before its certificate file was read")
	}
	finish()
	admin.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got, err := readReply(admin.r); err != nil || got != "+OK" {
		t.Fatalf("CONFIG SET with the slow file: %q %v", got, err)
	}
	line, c, err := tlsDo(t, s.TLSAddr(), m.clientConfig(&m.client), "PING")
	if err != nil || line != "+PONG" {
		t.Fatalf("TLS client after the change: %q %v", line, err)
	}
	if cn := peerCert(c).Subject.CommonName; cn != "server2" {
		t.Errorf("after CONFIG SET a new client sees %q", cn)
	}
}

// ReloadTLS (SIGHUP) reads the files with no lock that commands take:
// while it waits for a slow certificate file, CONFIG SET (which takes
// the keyspace lock, then the configuration's) and PING answer. (It held
// the configuration's lock while reading: a CONFIG SET waited for it
// with the keyspace locked, and so did every client.)
func TestTLSReloadReadsOffTheLock(t *testing.T) {
	m := newMTLS(t)
	dir := t.TempDir()
	cert := filepath.Join(dir, "server.crt")
	copyFile(t, m.srvCert, cert)
	s := startServer(t, Config{NoPersistence: true, Addr: "127.0.0.1:0", TLSAddr: "127.0.0.1:0", TLSCert: cert, TLSKey: m.srvKey,
		TLSParams: map[string]string{"tls-ca-cert-file": m.ca.File}})
	pem, err := os.ReadFile(m.srvCert)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(cert); err != nil {
		t.Fatal(err)
	}
	makeFIFO(t, cert)
	reloaded := make(chan error, 1)
	go func() { reloaded <- s.ReloadTLS() }()
	finish := slowFile(t, cert, pem)
	a, b := dialRaw(t, s.Addr()), dialRaw(t, s.Addr())
	a.send("CONFIG", "SET", "maxmemory", "0")
	if got, err := doWithin(b, 5*time.Second, "PING"); err != nil || got != "+PONG" {
		t.Fatalf("PING while ReloadTLS reads a slow certificate file: %q %v", got, err)
	}
	a.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := readReply(a.r); err != nil || got != "+OK" {
		t.Fatalf("CONFIG SET maxmemory while ReloadTLS reads a slow certificate file: %q %v", got, err)
	}
	select {
	case err := <-reloaded:
		t.Fatalf("ReloadTLS returned before its file was read: %v", err)
	default:
	}
	finish()
	select {
	case err := <-reloaded:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReloadTLS did not return")
	}
}
