package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/testcert"
	"github.com/redis/go-redis/v9"
)

// noClientAuth serves TLS clients without certificates (tls-auth-clients
// no), for tests about other things.
var noClientAuth = map[string]string{"tls-auth-clients": "no"}

// testCA is a certificate authority made for one test, with its
// certificate in dir/<name>-ca.pem (testcert).
type testCA struct {
	*testcert.CA
	t testing.TB
}

func newTestCA(t testing.TB, dir, name string) *testCA {
	t.Helper()
	ca, err := testcert.NewCA(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{ca, t}
}

// issue makes a certificate for 127.0.0.1/localhost, for servers and
// clients both, written to dir/<file>.crt and .key.
func (ca *testCA) issue(file string) (certFile, keyFile string, pair tls.Certificate) {
	ca.t.Helper()
	p, err := ca.Issue(file)
	if err != nil {
		ca.t.Fatal(err)
	}
	return p.CertFile, p.KeyFile, p.TLS
}

// tlsDo connects with cfg, sends one command and returns the reply (as
// rawConn renders it) and the connection, or the error of the handshake,
// the write or the read (with TLS 1.3 a refused client certificate shows
// at the first read).
func tlsDo(t testing.TB, addr string, cfg *tls.Config, args ...string) (string, *rawConn, error) {
	d := &net.Dialer{Timeout: 3 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return "", nil, err
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(3 * time.Second))
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	if _, err := c.Write(appendRESP(nil, b)); err != nil {
		c.Close()
		return "", nil, err
	}
	rc := &rawConn{t: t, c: c, r: bufio.NewReader(c)}
	reply, err := readReply(rc.r)
	if err != nil {
		c.Close()
		return "", nil, err
	}
	c.SetDeadline(time.Time{})
	return reply, rc, nil
}

func tlsPing(t testing.TB, addr string, cfg *tls.Config) error {
	line, c, err := tlsDo(t, addr, cfg, "PING")
	if err != nil {
		return err
	}
	c.c.Close()
	if line != "+PONG" {
		return fmt.Errorf("PING: %q", line)
	}
	return nil
}

// peerCert is the server certificate a TLS rawConn got.
func peerCert(rc *rawConn) *x509.Certificate {
	return rc.c.(*tls.Conn).ConnectionState().PeerCertificates[0]
}

// mtlsSetup is a CA with a server certificate, a client certificate
// from the same CA and one from another CA.
type mtlsSetup struct {
	ca, other          *testCA
	srvCert, srvKey    string
	client, foreign    tls.Certificate
	clientCrt, clientK string
}

func newMTLS(t *testing.T) *mtlsSetup {
	dir := t.TempDir()
	m := &mtlsSetup{ca: newTestCA(t, dir, "main"), other: newTestCA(t, dir, "other")}
	m.srvCert, m.srvKey, _ = m.ca.issue("server")
	m.clientCrt, m.clientK, m.client = m.ca.issue("client")
	_, _, m.foreign = m.other.issue("foreign")
	return m
}

// clientConfig trusts the CA and presents cert, if any, whichever CAs the
// server names as acceptable (Go's client would otherwise send no
// certificate rather than one from another CA).
func (m *mtlsSetup) clientConfig(cert *tls.Certificate) *tls.Config {
	c := &tls.Config{RootCAs: m.ca.Pool, ServerName: "127.0.0.1"}
	if cert != nil {
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	return c
}

// TestTLSClientCertificates: tls-auth-clients yes (Redis's default)
// refuses a client without a certificate and one whose certificate
// another CA signed; optional takes the first, refuses the second; no
// takes both. A certificate the CA signed is taken by all three, by
// crypto/tls and by go-redis.
func TestTLSClientCertificates(t *testing.T) {
	m := newMTLS(t)
	for _, tc := range []struct {
		auth            string
		none, foreignOK bool
	}{{"yes", false, false}, {"optional", true, false}, {"no", true, true}} {
		t.Run(tc.auth, func(t *testing.T) {
			params := map[string]string{"tls-ca-cert-file": m.ca.File}
			if tc.auth != "yes" {
				params["tls-auth-clients"] = tc.auth // yes: the default
			}
			s := startServer(t, Config{NoPersistence: true, TLSAddr: "127.0.0.1:0", TLSCert: m.srvCert, TLSKey: m.srvKey, TLSParams: params})
			if err := tlsPing(t, s.TLSAddr(), m.clientConfig(&m.client)); err != nil {
				t.Fatalf("client with the CA's certificate: %v", err)
			}
			if err := tlsPing(t, s.TLSAddr(), m.clientConfig(nil)); (err == nil) != tc.none {
				t.Errorf("client without a certificate: err %v, want accepted %v", err, tc.none)
			}
			if err := tlsPing(t, s.TLSAddr(), m.clientConfig(&m.foreign)); (err == nil) != tc.foreignOK {
				t.Errorf("client with another CA's certificate: err %v, want accepted %v", err, tc.foreignOK)
			}
			// TLS 1.2 reports the refusal in the handshake itself.
			c12 := m.clientConfig(nil)
			c12.MaxVersion = tls.VersionTLS12
			if err := tlsPing(t, s.TLSAddr(), c12); (err == nil) != tc.none {
				t.Errorf("TLS 1.2 client without a certificate: err %v, want accepted %v", err, tc.none)
			}
			rc := newClient(t, s.TLSAddr(), 3, func(o *redis.Options) { o.TLSConfig = m.clientConfig(&m.client) })
			ctx := context.Background()
			if ok, err := rc.BFAdd(ctx, "k", "v").Result(); err != nil || !ok {
				t.Fatalf("go-redis BF.ADD over mTLS: %v %v", ok, err)
			}
			if ok, err := rc.BFExists(ctx, "k", "v").Result(); err != nil || !ok {
				t.Fatalf("go-redis BF.EXISTS over mTLS: %v %v", ok, err)
			}
		})
	}
	// Without a CA, yes and optional are refused at Listen (Go would
	// otherwise check client certificates against the system's roots).
	for _, auth := range []string{"yes", "optional"} {
		s, err := New(Config{NoPersistence: true, TLSAddr: "127.0.0.1:0", TLSCert: m.srvCert, TLSKey: m.srvKey,
			TLSParams: map[string]string{"tls-auth-clients": auth}, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Listen(); err == nil || !strings.Contains(err.Error(), "tls-ca-cert-file or tls-ca-cert-dir must be specified") {
			t.Errorf("tls-auth-clients %s without a CA: Listen: %v", auth, err)
		}
		s.Close()
	}
	// tls-ca-cert-dir: every PEM file in the directory.
	caDir := t.TempDir()
	data, _ := os.ReadFile(m.ca.File)
	os.WriteFile(filepath.Join(caDir, "a1b2c3d4.0"), data, 0o600)
	os.WriteFile(filepath.Join(caDir, "README"), []byte("not a certificate\n"), 0o600)
	s := startServer(t, Config{NoPersistence: true, TLSAddr: "127.0.0.1:0", TLSCert: m.srvCert, TLSKey: m.srvKey,
		TLSParams: map[string]string{"tls-ca-cert-dir": caDir}})
	if err := tlsPing(t, s.TLSAddr(), m.clientConfig(&m.client)); err != nil {
		t.Errorf("tls-ca-cert-dir: CA's client refused: %v", err)
	}
	if err := tlsPing(t, s.TLSAddr(), m.clientConfig(&m.foreign)); err == nil {
		t.Error("tls-ca-cert-dir: another CA's client accepted")
	}
}

// TestTLSAndPlainPorts: port and tls-port at once, one keyspace; port 0
// with a tls-port serves TLS only. CONFIG GET and INFO show the ports as
// Redis does (tcp_port is the TLS port when there is no plain one).
func TestTLSAndPlainPorts(t *testing.T) {
	m := newMTLS(t)
	s := startServer(t, Config{NoPersistence: true, Addr: "127.0.0.1:0", TLSAddr: "127.0.0.1:0", TLSCert: m.srvCert, TLSKey: m.srvKey,
		TLSParams: map[string]string{"tls-ca-cert-file": m.ca.File}})
	if s.Addr() == s.TLSAddr() || s.TLSAddr() == "" {
		t.Fatalf("plain %s, TLS %s", s.Addr(), s.TLSAddr())
	}
	plain := dialRaw(t, s.Addr())
	mustDo(t, plain, ":1", "BF.ADD", "shared", "from-plain")
	line, tr, err := tlsDo(t, s.TLSAddr(), m.clientConfig(&m.client), "BF.EXISTS", "shared", "from-plain")
	if err != nil || line != ":1" {
		t.Fatalf("TLS client reading the plain client's write: %q %v", line, err)
	}
	mustDo(t, tr, ":1", "BF.ADD", "shared", "from-tls")
	mustDo(t, plain, ":1", "BF.EXISTS", "shared", "from-tls")
	_, plainPort, _ := net.SplitHostPort(s.Addr())
	_, tlsPort, _ := net.SplitHostPort(s.TLSAddr())
	mustDo(t, plain, `["port" "`+plainPort+`" "tls-port" "`+tlsPort+`"]`, "CONFIG", "GET", "port", "tls-port")
	if got := replInfo(t, plain, "server", "tcp_port"); got != plainPort {
		t.Errorf("INFO tcp_port %s, want %s", got, plainPort)
	}
	if !strings.Contains(strings.Join(s.ListenAddrs(), " "), s.TLSAddr()) {
		t.Errorf("ListenAddrs %v lacks the TLS listener", s.ListenAddrs())
	}

	// TLS only.
	only := startServer(t, Config{NoPersistence: true, TLSAddr: "127.0.0.1:0", TLSCert: m.srvCert, TLSKey: m.srvKey,
		TLSParams: map[string]string{"tls-ca-cert-file": m.ca.File}})
	line, tr2, err := tlsDo(t, only.TLSAddr(), m.clientConfig(&m.client), "CONFIG", "GET", "port")
	if err != nil || line != `["port" "0"]` {
		t.Errorf("TLS only: CONFIG GET port = %s %v", line, err)
	}
	_, onlyPort, _ := net.SplitHostPort(only.TLSAddr())
	if got := replInfo(t, tr2, "server", "tcp_port"); got != onlyPort {
		t.Errorf("TLS only: INFO tcp_port %s, want the TLS port %s", got, onlyPort)
	}
	if len(only.ListenAddrs()) != 1 {
		t.Errorf("TLS only listens on %v", only.ListenAddrs())
	}
}

// TestTLSConfigFile: the directives as Redis reads them.
func TestTLSConfigFile(t *testing.T) {
	m := newMTLS(t)
	dir := t.TempDir()
	read := func(text string) (Config, error) {
		conf := filepath.Join(dir, "bloom.conf")
		os.WriteFile(conf, []byte(text), 0o600)
		var cfg Config
		err := ReadConfigFile(conf, &cfg)
		return cfg, err
	}
	cfg, err := read("bind 127.0.0.1 -::1\nport 7001\ntls-port 7002\ntls-cert-file " + m.srvCert + "\ntls-key-file " + m.srvKey +
		"\ntls-ca-cert-file " + m.ca.File + "\ntls-auth-clients optional\ntls-protocols \"TLSv1.2 TLSv1.3\"\ntls-replication no\ntls-session-cache-size 100\n")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:7001" || cfg.TLSAddr != "127.0.0.1:7002" || len(cfg.TLSExtraAddrs) != 1 || cfg.TLSExtraAddrs[0] != "-[::1]:7002" {
		t.Errorf("addresses: plain %s %v, TLS %s %v", cfg.Addr, cfg.ExtraAddrs, cfg.TLSAddr, cfg.TLSExtraAddrs)
	}
	if cfg.TLSParams["tls-auth-clients"] != "optional" || cfg.TLSParams["tls-ca-cert-file"] != m.ca.File || cfg.TLSParams["tls-protocols"] != "TLSv1.2 TLSv1.3" {
		t.Errorf("TLS params: %v", cfg.TLSParams)
	}
	if w := strings.Join(cfg.IgnoredDirectives, "; "); !strings.Contains(w, "tls-session-cache-size") || strings.Contains(w, "tls-auth-clients") {
		t.Errorf("ignored: %s", w)
	}
	cfg, err = read("port 0\ntls-port 7002\n")
	if err != nil || cfg.Addr != "" || cfg.TLSAddr != "127.0.0.1:7002" {
		t.Errorf("port 0: plain %q TLS %q %v", cfg.Addr, cfg.TLSAddr, err)
	}
	for text, want := range map[string]string{
		"port 0\n":                                  "would not listen anywhere",
		"tls-protocols TLSv1\n":                     "bloom.conf:1: tls-protocols: TLSv1 is not supported",
		"tls-protocols \"TLSv1.2 SSLv3\"\n":         `invalid tls-protocols "SSLv3"`,
		"tls-auth-clients maybe\n":                  "no, yes, optional",
		"tls-ciphers HIGH:!aNULL\n":                 `"HIGH" is not a TLS 1.2 cipher suite Go offers`,
		"tls-ciphersuites TLS_AES_256_GCM_SHA384\n": "TLS 1.3 cipher suites cannot be restricted",
		"tls-key-file-pass secret\n":                "encrypted private keys are not supported",
		"tls-port 70000\n":                          "want an integer from 0 to 65535",
		"tls-protocols TLSv1.2 TLSv1.3\n":           "tls-protocols: want one value, not 2",
	} {
		if _, err := read(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
	// A server from the file: both listeners, CONFIG GET shows the file's
	// values, CONFIG REWRITE keeps what CONFIG SET changed.
	conf := filepath.Join(dir, "run.conf")
	os.WriteFile(conf, []byte("port 0\ntls-port 0\ntls-cert-file "+m.srvCert+"\ntls-key-file "+m.srvKey+"\ntls-ca-cert-file "+m.ca.File+"\n"), 0o600)
	var rc Config
	if err := ReadConfigFile(conf, &rc); err == nil {
		t.Fatal("port 0 and tls-port 0 read")
	}
	os.WriteFile(conf, []byte("port 1\ntls-port 2\ntls-cert-file "+m.srvCert+"\ntls-key-file "+m.srvKey+"\ntls-ca-cert-file "+m.ca.File+"\ntls-auth-clients no\n"), 0o600)
	if err := ReadConfigFile(conf, &rc); err != nil {
		t.Fatal(err)
	}
	rc.Addr, rc.TLSAddr, rc.NoPersistence = "127.0.0.1:0", "127.0.0.1:0", true
	s := startServer(t, rc)
	admin := dialRaw(t, s.Addr())
	mustDo(t, admin, `["tls-auth-clients" "no" "tls-ca-cert-file" "`+m.ca.File+`"]`, "CONFIG", "GET", "tls-auth-clients", "tls-ca-cert-file")
	mustDo(t, admin, "+OK", "CONFIG", "SET", "tls-auth-clients", "optional", "tls-session-caching", "no")
	mustDo(t, admin, "+OK", "CONFIG", "REWRITE")
	data, _ := os.ReadFile(conf)
	if !strings.Contains(string(data), "\ntls-auth-clients optional\n") || !strings.Contains(string(data), "\ntls-session-caching no\n") ||
		!strings.Contains(string(data), "tls-cert-file "+m.srvCert+"\n") || !strings.Contains(string(data), "\ntls-port 2\n") {
		t.Errorf("CONFIG REWRITE wrote:\n%s", data)
	}
	// A port CONFIG SET moved is written; one it did not stays as the
	// file says (here the test chose others).
	tp := freePortNum(t)
	mustDo(t, admin, "+OK", "CONFIG", "SET", "tls-port", tp)
	mustDo(t, admin, "+OK", "CONFIG", "REWRITE")
	data, _ = os.ReadFile(conf)
	if !strings.Contains(string(data), "\ntls-port "+tp+"\n") || !strings.HasPrefix(string(data), "port 1\n") {
		t.Errorf("CONFIG REWRITE after CONFIG SET tls-port wrote:\n%s", data)
	}
}

// TestTLSReloadByConfigSet: CONFIG SET tls-cert-file/tls-key-file swaps
// the certificate for new connections only; a bad set of files is
// refused, every value goes back and the old certificate stays; setting
// the same path re-reads the file (Redis's volatile settings), and so
// does ReloadTLS (SIGHUP).
func TestTLSReloadByConfigSet(t *testing.T) {
	m := newMTLS(t)
	s := startServer(t, Config{NoPersistence: true, Addr: "127.0.0.1:0", TLSAddr: "127.0.0.1:0", TLSCert: m.srvCert, TLSKey: m.srvKey,
		TLSParams: map[string]string{"tls-ca-cert-file": m.ca.File}})
	admin := dialRaw(t, s.Addr())
	peer := func() *x509.Certificate {
		t.Helper()
		line, c, err := tlsDo(t, s.TLSAddr(), m.clientConfig(&m.client), "PING")
		if err != nil || line != "+PONG" {
			t.Fatalf("new TLS client: %q %v", line, err)
		}
		defer c.c.Close()
		return peerCert(c)
	}
	first := peer()
	_, oldConn, err := tlsDo(t, s.TLSAddr(), m.clientConfig(&m.client), "PING")
	if err != nil {
		t.Fatal(err)
	}

	newCert, newKey, _ := m.ca.issue("server2")
	mustDo(t, admin, "+OK", "CONFIG", "SET", "tls-cert-file", newCert, "tls-key-file", newKey)
	if got := peer(); got.Subject.CommonName != "server2" {
		t.Fatalf("after CONFIG SET a new client sees %q", got.Subject.CommonName)
	}
	mustDo(t, oldConn, "+PONG", "PING")
	if !peerCert(oldConn).Equal(first) {
		t.Error("the old connection's certificate changed")
	}

	// Bad files: refused with the reason, nothing changes.
	for _, args := range [][]string{
		{"tls-cert-file", filepath.Join(t.TempDir(), "missing.crt")},
		{"tls-cert-file", m.srvCert}, // the old certificate with the new key
		{"tls-ca-cert-file", m.srvKey},
		{"tls-cert-file", m.srvCert, "tls-auth-clients", "optional", "tls-key-file", m.ca.File},
	} {
		got := admin.do(append([]string{"CONFIG", "SET"}, args...)...)
		if !strings.HasPrefix(got, "-ERR CONFIG SET failed (possibly related to argument '") || !strings.Contains(got, "Unable to update TLS configuration: ") {
			t.Errorf("CONFIG SET %v: %s", args, got)
		}
	}
	mustDo(t, admin, `["tls-auth-clients" "yes" "tls-cert-file" "`+newCert+`" "tls-key-file" "`+newKey+`"]`, "CONFIG", "GET", "tls-cert-file", "tls-key-file", "tls-auth-clients")
	if got := peer(); got.Subject.CommonName != "server2" {
		t.Fatalf("after refused CONFIG SETs a new client sees %q", got.Subject.CommonName)
	}
	// tls-auth-clients no without a CA file is fine; yes without one is not.
	mustDo(t, admin, "+OK", "CONFIG", "SET", "tls-auth-clients", "no", "tls-ca-cert-file", "")
	if err := tlsPing(t, s.TLSAddr(), m.clientConfig(nil)); err != nil {
		t.Errorf("tls-auth-clients no: client without certificate: %v", err)
	}
	if got := admin.do("CONFIG", "SET", "tls-auth-clients", "yes"); !strings.Contains(got, "tls-ca-cert-file or tls-ca-cert-dir must be specified") {
		t.Errorf("tls-auth-clients yes without a CA: %s", got)
	}
	mustDo(t, admin, "+OK", "CONFIG", "SET", "tls-auth-clients", "yes", "tls-ca-cert-file", m.ca.File)
	if err := tlsPing(t, s.TLSAddr(), m.clientConfig(nil)); err == nil {
		t.Error("tls-auth-clients yes again: client without certificate accepted")
	}

	// The same path with new contents: CONFIG SET re-reads it, and so
	// does ReloadTLS.
	c3, k3, _ := m.ca.issue("server3")
	copyFile(t, c3, newCert)
	copyFile(t, k3, newKey)
	if got := peer(); got.Subject.CommonName != "server2" {
		t.Fatalf("files replaced, no reload: a new client sees %q", got.Subject.CommonName)
	}
	mustDo(t, admin, "+OK", "CONFIG", "SET", "tls-cert-file", newCert)
	if got := peer(); got.Subject.CommonName != "server3" {
		t.Fatalf("CONFIG SET of the same path: a new client sees %q", got.Subject.CommonName)
	}
	c4, k4, _ := m.ca.issue("server4")
	copyFile(t, c4, newCert)
	copyFile(t, k4, newKey)
	if err := s.ReloadTLS(); err != nil {
		t.Fatal(err)
	}
	if got := peer(); got.Subject.CommonName != "server4" {
		t.Fatalf("ReloadTLS: a new client sees %q", got.Subject.CommonName)
	}
	os.WriteFile(newKey, []byte("garbage"), 0o600)
	if err := s.ReloadTLS(); err == nil {
		t.Error("ReloadTLS with a bad key succeeded")
	}
	if got := peer(); got.Subject.CommonName != "server4" {
		t.Fatalf("after a failed ReloadTLS a new client sees %q", got.Subject.CommonName)
	}
	mustDo(t, oldConn, "+PONG", "PING")
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTLSProtocolsAndCiphers: tls-protocols TLSv1.3 refuses a TLS 1.2
// client; tls-ciphers takes OpenSSL's names and limits TLS 1.2 to them;
// what Go cannot do is refused by name.
func TestTLSProtocolsAndCiphers(t *testing.T) {
	m := newMTLS(t)
	start := func(params map[string]string) *Server {
		params["tls-auth-clients"] = "no"
		return startServer(t, Config{NoPersistence: true, TLSAddr: "127.0.0.1:0", TLSCert: m.srvCert, TLSKey: m.srvKey, TLSParams: params})
	}
	with := func(f func(*tls.Config)) *tls.Config { c := m.clientConfig(nil); f(c); return c }
	s := start(map[string]string{"tls-protocols": "TLSv1.3"})
	if err := tlsPing(t, s.TLSAddr(), with(func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 })); err == nil {
		t.Error("tls-protocols TLSv1.3: a TLS 1.2 client was accepted")
	}
	if err := tlsPing(t, s.TLSAddr(), with(func(c *tls.Config) { c.MinVersion = tls.VersionTLS13 })); err != nil {
		t.Errorf("tls-protocols TLSv1.3: TLS 1.3 client: %v", err)
	}
	s = start(map[string]string{"tls-protocols": "tlsv1.2"})
	if err := tlsPing(t, s.TLSAddr(), with(func(c *tls.Config) { c.MinVersion = tls.VersionTLS13 })); err == nil {
		t.Error("tls-protocols TLSv1.2: a TLS 1.3-only client was accepted")
	}
	s = start(map[string]string{"tls-protocols": "TLSv1.2", "tls-ciphers": "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305"})
	if err := tlsPing(t, s.TLSAddr(), with(func(c *tls.Config) {
		c.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}
	})); err == nil {
		t.Error("tls-ciphers without AES128-GCM: a client offering only it was accepted")
	}
	line, c, err := tlsDo(t, s.TLSAddr(), with(func(c *tls.Config) {
		c.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}
	}), "PING")
	if err != nil || line != "+PONG" {
		t.Fatalf("client offering a listed cipher: %q %v", line, err)
	}
	if cs := c.c.(*tls.Conn).ConnectionState().CipherSuite; cs != tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 {
		t.Errorf("cipher %s", tls.CipherSuiteName(cs))
	}
	c.c.Close()
	// Go's names, and the whole TLS 1.3 set in another order, are taken.
	if _, err := New(Config{NoPersistence: true, Logger: quietLogger(), TLSParams: map[string]string{
		"tls-ciphers": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "tls-ciphersuites": "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256"}}); err != nil {
		t.Errorf("Go's cipher names: %v", err)
	}
	for params, want := range map[string]string{
		"tls-protocols=TLSv1.1":                   "TLSv1.1 is not supported",
		"tls-ciphers=DEFAULT:!MEDIUM":             `"DEFAULT" is not a TLS 1.2 cipher suite Go offers`,
		"tls-ciphersuites=TLS_AES_128_CCM_SHA256": `"TLS_AES_128_CCM_SHA256" is not a TLS 1.3 cipher suite Go offers`,
		"tls-no-such=1":                           `unknown TLS setting "tls-no-such"`,
	} {
		kv := strings.SplitN(params, "=", 2)
		_, err := New(Config{NoPersistence: true, Logger: quietLogger(), TLSParams: map[string]string{kv[0]: kv[1]}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", params, err, want)
		}
	}
	// The refusal names the suites that can be used.
	_, err = parseTLSCiphers("HIGH")
	if err == nil || !strings.Contains(err.Error(), "ECDHE-RSA-AES128-GCM-SHA256") {
		t.Errorf("tls-ciphers HIGH: %v", err)
	}
}

// TestTLSSessionResumption: sessions resume (tls-session-caching yes,
// the default), not after tls-session-caching no, and not once older
// than tls-session-cache-timeout; never across a reload.
func TestTLSSessionResumption(t *testing.T) {
	m := newMTLS(t)
	s := startServer(t, Config{NoPersistence: true, Addr: "127.0.0.1:0", TLSAddr: "127.0.0.1:0", TLSCert: m.srvCert, TLSKey: m.srvKey,
		TLSParams: map[string]string{"tls-ca-cert-file": m.ca.File}})
	admin := dialRaw(t, s.Addr())
	resumed := func(cfg *tls.Config) bool {
		t.Helper()
		_, c, err := tlsDo(t, s.TLSAddr(), cfg, "PING")
		if err != nil {
			t.Fatal(err)
		}
		defer c.c.Close()
		return c.c.(*tls.Conn).ConnectionState().DidResume
	}
	for _, v := range []string{"TLSv1.2", "TLSv1.3"} {
		t.Run(v, func(t *testing.T) {
			mustDo(t, admin, "+OK", "CONFIG", "SET", "tls-protocols", v, "tls-session-caching", "yes", "tls-session-cache-timeout", "300")
			cfg := m.clientConfig(&m.client)
			cfg.ClientSessionCache = tls.NewLRUClientSessionCache(8)
			if resumed(cfg) {
				t.Fatal("first connection resumed")
			}
			if !resumed(cfg) {
				t.Fatal("second connection not resumed with session caching on")
			}
			mustDo(t, admin, "+OK", "CONFIG", "SET", "tls-cert-file", m.srvCert) // a reload
			if resumed(cfg) {
				t.Error("a session from before a reload was resumed after it")
			}
			if !resumed(cfg) {
				t.Fatal("not resumed after the reload's first handshake")
			}
			mustDo(t, admin, "+OK", "CONFIG", "SET", "tls-session-cache-timeout", "0")
			resumed(cfg) // a ticket from the new configuration, issued now
			time.Sleep(1100 * time.Millisecond)
			if resumed(cfg) {
				t.Error("resumed a session older than tls-session-cache-timeout")
			}
			mustDo(t, admin, "+OK", "CONFIG", "SET", "tls-session-caching", "no")
			resumed(cfg)
			if resumed(cfg) {
				t.Error("resumed with tls-session-caching no")
			}
		})
	}
}

// TestTLSLyingClients: a plain-text client on the TLS port is closed; a
// client that stalls in its handshake (nothing, or half a ClientHello)
// is dropped after the handshake timeout and meanwhile holds up nobody:
// plain-text and TLS clients are served at once.
func TestTLSLyingClients(t *testing.T) {
	m := newMTLS(t)
	bothPaths(t, func(t *testing.T, goroutinePerConn bool) {
		s := startServer(t, Config{NoPersistence: true, Addr: "127.0.0.1:0", TLSAddr: "127.0.0.1:0", TLSCert: m.srvCert, TLSKey: m.srvKey,
			TLSParams: map[string]string{"tls-ca-cert-file": m.ca.File}, HandshakeTimeout: 1500 * time.Millisecond, goroutinePerConn: goroutinePerConn})
		// Plain text on the TLS port: no reply but a TLS alert, then EOF.
		pc, err := net.Dial("tcp", s.TLSAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		pc.Write([]byte("*1\r\n$4\r\nPING\r\n"))
		pc.SetReadDeadline(time.Now().Add(3 * time.Second))
		got, err := io.ReadAll(pc)
		if err != nil || bytes.Contains(got, []byte("PONG")) {
			t.Errorf("plain text on the TLS port: read %q, %v; want the connection closed", got, err)
		}
		// Stalled handshakes: one silent, one with half a ClientHello.
		silent, err := net.Dial("tcp", s.TLSAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer silent.Close()
		half, err := net.Dial("tcp", s.TLSAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer half.Close()
		half.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00}) // a record header promising 512 bytes, and 2 of them
		start := time.Now()
		for i := 0; i < 5; i++ {
			mustDo(t, dialRaw(t, s.Addr()), "+PONG", "PING")
			if err := tlsPing(t, s.TLSAddr(), m.clientConfig(&m.client)); err != nil {
				t.Fatalf("TLS client beside stalled handshakes: %v", err)
			}
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("10 clients beside stalled handshakes took %v", d)
		}
		for name, c := range map[string]net.Conn{"silent": silent, "half ClientHello": half} {
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err := io.ReadAll(c)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Errorf("%s handshake not dropped within 5 s (timeout 1.5 s)", name)
			}
		}
		if d := time.Since(start); d < time.Second {
			t.Errorf("stalled handshakes dropped after %v, before the 1.5 s timeout", d)
		}
	})
}

// TestTLSReplication: tls-replication yes makes the replica dial its
// master's TLS port with its client certificate, checked by the master
// (tls-auth-clients yes); the replica checks the master's certificate
// against the CA. Without the client certificate the master refuses it.
func TestTLSReplication(t *testing.T) {
	m := newMTLS(t)
	master := startServer(t, Config{NoPersistence: true, Addr: "127.0.0.1:0", TLSAddr: "127.0.0.1:0", TLSCert: m.srvCert, TLSKey: m.srvKey,
		TLSParams: map[string]string{"tls-ca-cert-file": m.ca.File}})
	mc := dialRaw(t, master.Addr())
	mustDo(t, mc, ":1", "BF.ADD", "before", "x")
	h, p, _ := net.SplitHostPort(master.TLSAddr())
	replica := startServer(t, Config{NoPersistence: true, ReplicaOf: h + " " + p, TLSCert: m.srvCert, TLSKey: m.srvKey,
		TLSParams: map[string]string{"tls-ca-cert-file": m.ca.File, "tls-replication": "yes",
			"tls-client-cert-file": m.clientCrt, "tls-client-key-file": m.clientK}})
	rc := dialRaw(t, replica.Addr())
	waitSynced(t, mc, rc)
	mustDo(t, mc, ":1", "BF.ADD", "after", "y")
	waitSynced(t, mc, rc)
	mustDo(t, rc, ":1", "BF.EXISTS", "before", "x")
	mustDo(t, rc, ":1", "BF.EXISTS", "after", "y")
	mustDo(t, rc, `["tls-replication" "yes"]`, "CONFIG", "GET", "tls-replication")

	// The plain-text link to the TLS port fails; so does a link whose
	// certificate another CA signed (the master refuses it).
	other := newTestCA(t, t.TempDir(), "rogue")
	rogueCert, rogueKey, _ := other.issue("rogue")
	bad := startServer(t, Config{NoPersistence: true, ReplicaOf: h + " " + p, Logger: quietLogger(), TLSCert: rogueCert, TLSKey: rogueKey,
		TLSParams: map[string]string{"tls-ca-cert-file": m.ca.File, "tls-replication": "yes"}})
	plainLink := startServer(t, Config{NoPersistence: true, ReplicaOf: h + " " + p, Logger: quietLogger()})
	time.Sleep(1500 * time.Millisecond)
	for name, s := range map[string]*Server{"rogue certificate": bad, "plain text": plainLink} {
		c := dialRaw(t, s.Addr())
		if st := replInfo(t, c, "replication", "master_link_status"); st != "down" {
			t.Errorf("%s: link %s", name, st)
		}
		mustDo(t, c, ":0", "EXISTS", "before")
	}
}

// TestTLSRedisCLI: redis-cli --tls with a client certificate, and
// without one (refused with tls-auth-clients yes).
func TestTLSRedisCLI(t *testing.T) {
	cli := requireTool(t, "redis-cli")
	if help, _ := exec.Command(cli, "--help").CombinedOutput(); !bytes.Contains(help, []byte("--tls")) {
		t.Skip("this redis-cli was built without TLS (no --tls in redis-cli --help)")
	}
	m := newMTLS(t)
	s := startServer(t, Config{NoPersistence: true, TLSAddr: "127.0.0.1:0", TLSCert: m.srvCert, TLSKey: m.srvKey,
		TLSParams: map[string]string{"tls-ca-cert-file": m.ca.File}})
	h, p, _ := net.SplitHostPort(s.TLSAddr())
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, cli, append([]string{"-h", h, "-p", p, "--tls", "--cacert", m.ca.File}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := run("--cert", m.clientCrt, "--key", m.clientK, "BF.ADD", "k", "v"); err != nil || out != "1" {
		t.Fatalf("redis-cli with a client certificate: %q %v", out, err)
	}
	if out, err := run("--cert", m.clientCrt, "--key", m.clientK, "BF.EXISTS", "k", "v"); err != nil || out != "1" {
		t.Fatalf("redis-cli BF.EXISTS: %q %v", out, err)
	}
	if out, _ := run("BF.EXISTS", "k", "v"); out == "1" {
		t.Errorf("redis-cli without a certificate was served: %q", out)
	}
}

// freePortNum is a TCP port number nothing listens on (as the kernel says now).
func freePortNum(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, p, _ := net.SplitHostPort(l.Addr().String())
	return p
}

// TestConfigSetPorts: CONFIG SET port and tls-port move the listeners
// while the server runs, as Redis does; connected clients stay; a port
// that cannot be had is refused and the old one keeps serving; 0 turns
// a kind off, unless it is the last; a first tls-port builds the TLS
// configuration, and is refused if it cannot.
func TestConfigSetPorts(t *testing.T) {
	m := newMTLS(t)
	bothPaths(t, func(t *testing.T, goroutinePerConn bool) {
		s := startServer(t, Config{NoPersistence: true, Addr: "127.0.0.1:0", TLSAddr: "127.0.0.1:0", TLSCert: m.srvCert, TLSKey: m.srvKey,
			TLSParams: map[string]string{"tls-ca-cert-file": m.ca.File}, goroutinePerConn: goroutinePerConn})
		admin := dialRaw(t, s.Addr())
		oldPlain, oldTLS := s.Addr(), s.TLSAddr()
		p2 := freePortNum(t)
		mustDo(t, admin, "+OK", "CONFIG", "SET", "port", p2)
		if s.Addr() != "127.0.0.1:"+p2 {
			t.Fatalf("Addr %s after CONFIG SET port %s", s.Addr(), p2)
		}
		mustDo(t, dialRaw(t, s.Addr()), "+PONG", "PING")
		if c, err := net.DialTimeout("tcp", oldPlain, time.Second); err == nil {
			c.Close()
			t.Errorf("the old port %s still accepts", oldPlain)
		}
		mustDo(t, admin, "+PONG", "PING") // connected before: stays
		mustDo(t, admin, `["port" "`+p2+`"]`, "CONFIG", "GET", "port")

		t2 := freePortNum(t)
		mustDo(t, admin, "+OK", "CONFIG", "SET", "tls-port", t2)
		if err := tlsPing(t, "127.0.0.1:"+t2, m.clientConfig(&m.client)); err != nil {
			t.Fatalf("TLS on the new tls-port: %v", err)
		}
		if err := tlsPing(t, oldTLS, m.clientConfig(&m.client)); err == nil {
			t.Error("TLS still served on the old tls-port")
		}

		// A port in use: refused, the old one serves on.
		busy, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer busy.Close()
		_, bp, _ := net.SplitHostPort(busy.Addr().String())
		if got := admin.do("CONFIG", "SET", "port", bp); !strings.HasPrefix(got, "-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port: listen 127.0.0.1:"+bp) {
			t.Errorf("CONFIG SET port in use: %s", got)
		}
		mustDo(t, dialRaw(t, "127.0.0.1:"+p2), "+PONG", "PING")
		mustDo(t, admin, `["port" "`+p2+`"]`, "CONFIG", "GET", "port")

		// Plain text off, then TLS off refused (nothing would listen).
		mustDo(t, admin, "+OK", "CONFIG", "SET", "port", "0")
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+p2, time.Second); err == nil {
			c.Close()
			t.Error("port 0: plain text still accepted")
		}
		mustDo(t, admin, "-ERR CONFIG SET failed (possibly related to argument 'tls-port') - the server would not listen anywhere (port and tls-port both 0)", "CONFIG", "SET", "tls-port", "0")
		if got := replInfo(t, admin, "server", "tcp_port"); got != t2 {
			t.Errorf("INFO tcp_port %s with TLS only, want %s", got, t2)
		}
		p3 := freePortNum(t)
		mustDo(t, admin, "+OK", "CONFIG", "SET", "port", p3)
		mustDo(t, dialRaw(t, "127.0.0.1:"+p3), "+PONG", "PING")
		if len(s.ListenAddrs()) != 2 {
			t.Errorf("ListenAddrs %v", s.ListenAddrs())
		}
	})

	// A server without TLS: the first tls-port needs a configuration
	// that loads.
	s := startServer(t, Config{NoPersistence: true})
	admin := dialRaw(t, s.Addr())
	tp := freePortNum(t)
	if got := admin.do("CONFIG", "SET", "tls-port", tp); !strings.Contains(got, "Unable to update TLS configuration: no tls-cert-file configured") {
		t.Errorf("tls-port without a certificate: %s", got)
	}
	mustDo(t, admin, "+OK", "CONFIG", "SET", "tls-cert-file", m.srvCert, "tls-key-file", m.srvKey)
	if got := admin.do("CONFIG", "SET", "tls-port", tp); !strings.Contains(got, "tls-ca-cert-file or tls-ca-cert-dir must be specified") {
		t.Errorf("tls-port without a CA: %s", got)
	}
	mustDo(t, admin, "+OK", "CONFIG", "SET", "tls-ca-cert-file", m.ca.File, "tls-port", tp)
	if err := tlsPing(t, "127.0.0.1:"+tp, m.clientConfig(&m.client)); err != nil {
		t.Fatalf("TLS after CONFIG SET tls-port: %v", err)
	}
	mustDo(t, admin, `["tls-port" "`+tp+`"]`, "CONFIG", "GET", "tls-port")
}

// Refused TLS handshakes are counted in /metrics
// (bloomkit_tls_handshake_failures_total): a certificate from another CA,
// no certificate where one is required, plain text on the TLS port; a
// good client is not counted.
func TestTLSHandshakeFailuresCounted(t *testing.T) {
	m := newMTLS(t)
	s := startServer(t, Config{NoPersistence: true, TLSAddr: "127.0.0.1:0", TLSCert: m.srvCert, TLSKey: m.srvKey,
		TLSParams: map[string]string{"tls-ca-cert-file": m.ca.File}, MetricsAddr: "127.0.0.1:0", Logger: quietLogger()})
	count := func() string {
		resp, err := http.Get("http://" + s.MetricsAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "bloomkit_tls_handshake_failures_total ") {
				return strings.TrimPrefix(l, "bloomkit_tls_handshake_failures_total ")
			}
		}
		t.Fatalf("no bloomkit_tls_handshake_failures_total in /metrics")
		return ""
	}
	if got := count(); got != "0" {
		t.Fatalf("before any client: %s", got)
	}
	if err := tlsPing(t, s.TLSAddr(), m.clientConfig(&m.client)); err != nil {
		t.Fatalf("good client: %v", err)
	}
	tlsPing(t, s.TLSAddr(), m.clientConfig(&m.foreign))
	tlsPing(t, s.TLSAddr(), m.clientConfig(nil))
	plain, err := net.Dial("tcp", s.TLSAddr())
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(plain, "PING\r\n")
	plain.SetReadDeadline(time.Now().Add(2 * time.Second))
	io.ReadAll(plain)
	plain.Close()
	replWait(t, "three refused handshakes counted", func() bool { return count() == "3" })
}
