//go:build !linux

package server

import "net"

// eventLoop exists on Linux only (loop_linux.go); elsewhere every client is
// served by a goroutine.
type eventLoop struct{}

type loopConn struct{}

func (s *Server) startLoops() error                      { return nil }
func (s *Server) adoptable(net.Conn, *Session) *loopConn { return nil }
func (c *loopConn) hand()                                {}
func (l *eventLoop) stop()                               {}
func (l *eventLoop) lastBeat() int64                     { return monoNow() }
func (l *eventLoop) netBytes() (in, out int64)           { return 0, 0 }
