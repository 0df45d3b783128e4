//go:build !linux

package server

import "net"

// eventLoop exists on Linux only (loop_linux.go); elsewhere every client is
// served by a goroutine.
type eventLoop struct{}

func (s *Server) startLoops() error             { return nil }
func (s *Server) adopt(net.Conn, *Session) bool { return false }
func (l *eventLoop) stop()                      {}
