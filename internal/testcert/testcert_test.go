package testcert_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/bloomkit/bloomkit/internal/testcert"
)

// A server certificate verifies against its CA, as a client would check
// it, and a client certificate the same CA signed passes a server that
// requires one; a certificate of another CA does not.
func TestHandshake(t *testing.T) {
	dir := t.TempDir()
	ca, err := testcert.NewCA(dir, "one")
	if err != nil {
		t.Fatal(err)
	}
	other, err := testcert.NewCA(dir, "other")
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := ca.Issue("server")
	cli, _ := ca.Issue("client")
	stranger, _ := other.Issue("stranger")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{srv.TLS},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.(*tls.Conn).Handshake()
			c.Write([]byte("x"))
			c.Close()
		}
	}()
	dial := func(cert tls.Certificate) error {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool, Certificates: []tls.Certificate{cert}})
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Read(make([]byte, 1)) // TLS 1.3 reports a refused client certificate here
		return err
	}
	if err := dial(cli.TLS); err != nil {
		t.Fatalf("client certificate of the CA: %v", err)
	}
	if err := dial(stranger.TLS); err == nil {
		t.Fatal("a certificate of another CA was accepted")
	}
	if _, err := os.Stat(srv.KeyFile); err != nil {
		t.Fatal(err)
	}
}

func Example() {
	dir, _ := os.MkdirTemp("", "certs")
	defer os.RemoveAll(dir)
	ca, _ := testcert.NewCA(dir, "test")
	server, _ := ca.Issue("server")
	// A server is configured with server.CertFile, server.KeyFile and
	// ca.File; a Go client trusts ca.Pool.
	_, err := server.TLS.Leaf.Verify(x509.VerifyOptions{Roots: ca.Pool, DNSName: "localhost"})
	fmt.Println(err == nil, net.ParseIP("127.0.0.1").Equal(server.TLS.Leaf.IPAddresses[0]))
	// Output: true true
}
