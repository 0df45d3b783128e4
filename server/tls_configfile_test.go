package server

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestTLSPortsFromRedisConf starts a server from a config file as Redis
// reads it: port is plain text and tls-port TLS at the same time, client
// certificates are required (tls-auth-clients yes, the default) and
// checked against tls-ca-cert-file, and CONFIG SET re-reads the
// certificate. It uses only what a config file gives, so it also runs
// against servers that predate TLSAddr.
func TestTLSPortsFromRedisConf(t *testing.T) {
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "conf CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	write := func(name string, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caFile := write("ca.crt", "CERTIFICATE", caDER)
	issue := func(name string, n int64) (string, string, tls.Certificate) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(n), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kb, _ := x509.MarshalECPrivateKey(key)
		c, k := write(name+".crt", "CERTIFICATE", der), write(name+".key", "EC PRIVATE KEY", kb)
		pair, err := tls.LoadX509KeyPair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		return c, k, pair
	}
	srvCrt, srvKey, _ := issue("server", 2)
	_, _, client := issue("client", 3)
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
