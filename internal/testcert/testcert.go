// Package testcert makes certificate authorities and the certificates
// they sign, for tests of TLS code: ECDSA P-256 keys, certificates valid
// from an hour ago for a day, for 127.0.0.1 and localhost, usable by
// servers and clients both. Everything is written as PEM files in a
// directory the caller gives (a test's temporary directory), because
// servers are configured with file names.
package testcert

import (
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
	"sync/atomic"
	"time"
)

// A CA is a certificate authority made for one test.
type CA struct {
	// Cert is the CA's certificate and File its PEM file,
	// dir/<name>-ca.pem.
	Cert *x509.Certificate
	File string
	// Pool holds Cert: a tls.Config's RootCAs or ClientCAs.
	Pool *x509.CertPool

	dir    string
	key    *ecdsa.PrivateKey
	serial atomic.Int64
}

// NewCA makes a CA called name and writes its certificate to dir.
func NewCA(dir, name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("testcert: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &CA{Cert: cert, File: filepath.Join(dir, name+"-ca.pem"), Pool: x509.NewCertPool(), dir: dir, key: key}
	ca.Pool.AddCert(cert)
	ca.serial.Store(1)
	if err := os.WriteFile(ca.File, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	return ca, nil
}

// A Pair is a certificate the CA signed and its key: as files, for a
// server's configuration, and loaded, for a Go client or server.
type Pair struct {
	CertFile, KeyFile string
	TLS               tls.Certificate
}

// Issue signs a certificate called name for 127.0.0.1 and localhost,
// for server and client authentication, and writes it and its key to
// dir/<name>.crt and dir/<name>.key (replacing files of those names).
func (ca *CA) Issue(name string) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial.Add(1)), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return Pair{}, fmt.Errorf("testcert: certificate %s: %w", name, err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
	p := Pair{CertFile: filepath.Join(ca.dir, name+".crt"), KeyFile: filepath.Join(ca.dir, name+".key")}
	if err := os.WriteFile(p.CertFile, certPEM, 0o600); err != nil {
		return Pair{}, err
	}
	if err := os.WriteFile(p.KeyFile, keyPEM, 0o600); err != nil {
		return Pair{}, err
	}
	if p.TLS, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return Pair{}, err
	}
	return p, nil
}
