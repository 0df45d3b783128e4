package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"

	"github.com/bloomkit/bloomkit/internal/testcert"
	"github.com/redis/go-redis/v9"
)

// testPKI is a CA (testcert) and the certificates it signs, for 127.0.0.1.
type testPKI struct {
	*testcert.CA
	t   *testing.T
	dir string
}

func newTestPKI(t *testing.T) *testPKI {
	dir := t.TempDir()
	ca, err := testcert.NewCA(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	return &testPKI{ca, t, dir}
}

func (p *testPKI) issue(name string) tls.Certificate {
	pair, err := p.Issue(name)
	if err != nil {
		p.t.Fatal(err)
	}
	return pair.TLS
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
		"--tls-ca-cert", p.File)
	ctx := context.Background()
	if err := plain.Do(ctx, "BF.ADD", "k", "v").Err(); err != nil {
		t.Fatal(err)
	}
	// peer runs BF.EXISTS with go-redis over TLS, presenting cert (nil:
	// none), and returns the server certificate's name.
	peer := func(cert *tls.Certificate) (string, error) {
		cfg := &tls.Config{RootCAs: p.Pool, ServerName: "127.0.0.1",
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
	err = poll.Wait(10*time.Second, func() error {
		if cn, err := peer(&client); err != nil || cn != "renewed" {
			return fmt.Errorf("after SIGHUP the server still shows %q (%v)", cn, err)
		}
		return nil
	})
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("%v; log:\n%s", err, log)
	}
	if err := plain.Ping(ctx).Err(); err != nil {
		t.Fatalf("the server did not survive SIGHUP: %v", err)
	}
}
