//go:build !linux

package server

func mapAnon(n int) ([]byte, bool) { return nil, false }

func discardAnon(b []byte) {}

func unmapAnon(b []byte) {}
