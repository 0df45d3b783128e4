//go:build !unix

package main

import (
	"net"
	"testing"
)

// refusedAddr returns a loopback address nothing listens on (a freed
// port; see the unix version for a port held for the test).
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
