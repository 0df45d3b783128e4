//go:build !linux

package keyspace

func mapAnon(n int) ([]byte, bool) { return nil, false }

func discardAnon(b []byte) {}

func unmapAnon(b []byte) {}
