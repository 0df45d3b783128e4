package server

import (
	"bufio"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/testcert"
)

// TestTLSPortsFromRedisConf starts a server from a config file as Redis
// reads it: port is plain text and tls-port TLS at the same time, client
// certificates are required (tls-auth-clients yes, the default) and
// checked against tls-ca-cert-file, and CONFIG SET re-reads the
// certificate. It uses only what a config file gives, so it also runs
// against servers that predate TLSAddr.
func TestTLSPortsFromRedisConf(t *testing.T) {
	dir := t.TempDir()
	ca, err := testcert.NewCA(dir, "conf")
	if err != nil {
		t.Fatal(err)
	}
	pool, caFile := ca.Pool, ca.File
	issue := func(name string) (string, string, tls.Certificate) {
		p, err := ca.Issue(name)
		if err != nil {
			t.Fatal(err)
		}
		return p.CertFile, p.KeyFile, p.TLS
	}
	srvCrt, srvKey, _ := issue("server")
	_, _, client := issue("client")
	freePort := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	}
	plainPort, tlsPort := freePort(), freePort()
	conf := filepath.Join(dir, "redis.conf")
	os.WriteFile(conf, []byte("bind 127.0.0.1\nport "+plainPort+"\ntls-port "+tlsPort+"\ntls-cert-file "+srvCrt+
		"\ntls-key-file "+srvKey+"\ntls-ca-cert-file "+caFile+"\n"), 0o600)
	var cfg Config
	if err := ReadConfigFile(conf, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.NoPersistence, cfg.Logger = true, testLogger(t)
	startServer(t, cfg)

	plain := dialRaw(t, "127.0.0.1:"+plainPort)
	plain.c.SetReadDeadline(time.Now().Add(3 * time.Second))
	plain.send("PING")
	if line, err := plain.r.ReadString('\n'); err != nil || line != "+PONG\r\n" {
		t.Fatalf("plain-text PING on port: %q %v", line, err)
	}
	ping := func(cert *tls.Certificate) error {
		cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", "127.0.0.1:"+tlsPort, cfg)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
			return err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err == nil && line != "+PONG\r\n" {
			t.Errorf("PING over TLS: %q", line)
		}
		return err
	}
	if err := ping(&client); err != nil {
		t.Fatalf("TLS PING on tls-port with a client certificate: %v", err)
	}
	if err := ping(nil); err == nil {
		t.Error("TLS client without a certificate served (tls-auth-clients yes is Redis's default)")
	}
	plain.send("CONFIG", "SET", "tls-cert-file", srvCrt)
	if line, err := plain.r.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Errorf("CONFIG SET tls-cert-file: %q %v", line, err)
	}
}
