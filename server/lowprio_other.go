//go:build !linux

package server

// inBackgroundThread runs f (lower priority is Linux-only).
func (s *Server) inBackgroundThread(f func() error) error { return f() }
