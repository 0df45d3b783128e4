package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testPKI makes a CA and the certificates it signs, for 127.0.0.1.
type testPKI struct {
	t    *testing.T
	dir  string
	ca   *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
	n    int64
}

func newTestPKI(t *testing.T) *testPKI {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	p := &testPKI{t: t, dir: t.TempDir(), ca: ca, key: key, pool: x509.NewCertPool(), n: 1}
	p.pool.AddCert(ca)
	os.WriteFile(filepath.Join(p.dir, "ca.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	return p
}

// issue writes name.crt and name.key and returns them as a pair.
func (p *testPKI) issue(name string) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	p.n++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.n), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.key)
	if err != nil {
		p.t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
	os.WriteFile(filepath.Join(p.dir, name+".crt"), certPEM, 0o600)
	os.WriteFile(filepath.Join(p.dir, name+".key"), keyPEM, 0o600)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		p.t.Fatal(err)
	}
	return pair
}

func (p *testPKI) file(name string) string { return filepath.Join(p.dir, name) }

// TestServeTLS: bloom serve's TLS flags. --tls-cert alone is refused
// (earlier versions served TLS on --addr); --tls-addr serves TLS beside
// the plain-text --addr, with client certificates required (Redis's
// default); SIGHUP re-reads the certificate files, and the server lives on.
func TestServeTLS(t *testing.T) {
	p := newTestPKI(t)
	p.issue("server")
	client := p.issue("client")
	r := bloomIn(t, t.TempDir(), "", "serve", "--addr", "127.0.0.1:0", "--tls-cert", p.file("server.crt"), "--tls-key", p.file("server.key"))
	if r.code != exitError || !strings.Contains(r.stderr, "give --tls-addr") {
		t.Fatalf("--tls-cert without --tls-addr: exit %d, %s", r.code, r.stderr)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tlsAddr := l.Addr().String()
	l.Close()
	cmd, plain, log := serveIn(t, t.TempDir(), "--tls-addr", tlsAddr, "--tls-cert", p.file("server.crt"), "--tls-key", p.file("server.key"),
		"--tls-ca-cert", p.file("ca.crt"))
	ctx := context.Background()
	if err := plain.Do(ctx, "BF.ADD", "k", "v").Err(); err != nil {
		t.Fatal(err)
	}
	// peer runs BF.EXISTS with go-redis over TLS, presenting cert (nil:
	// none), and returns the server certificate's name.
	peer := func(cert *tls.Certificate) (string, error) {
		cfg := &tls.Config{RootCAs: p.pool, ServerName: "127.0.0.1",
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				if cert == nil {
					return &tls.Certificate{}, nil
				}
				return cert, nil
			}}
		var cn string
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			cn = cs.PeerCertificates[0].Subject.CommonName
			return nil
		}
		c := redis.NewClient(&redis.Options{Addr: tlsAddr, Protocol: 2, MaxRetries: -1, PoolSize: 1, TLSConfig: cfg})
		defer c.Close()
		if ok, err := c.Do(ctx, "BF.EXISTS", "k", "v").Int(); err != nil || ok != 1 {
			return "", fmt.Errorf("BF.EXISTS over TLS: %d %v", ok, err)
		}
		return cn, nil
	}
	if cn, err := peer(&client); err != nil || cn != "server" {
		t.Fatalf("TLS client with a certificate: %q %v\n%s", cn, err, log)
	}
	if _, err := peer(nil); err == nil {
		t.Fatal("TLS client without a certificate served (tls-auth-clients yes is the default)")
	}
	// A renewed certificate in the same files, then SIGHUP.
	os.Rename(p.file("server.crt"), p.file("old.crt"))
	os.Rename(p.file("server.key"), p.file("old.key"))
	p.issue("renewed")
	os.Rename(p.file("renewed.crt"), p.file("server.crt"))
	os.Rename(p.file("renewed.key"), p.file("server.key"))
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		cn, err := peer(&client)
		if err == nil && cn == "renewed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after SIGHUP the server still shows %q (%v); log:\n%s", cn, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := plain.Ping(ctx).Err(); err != nil {
		t.Fatalf("the server did not survive SIGHUP: %v", err)
	}
}
