//go:build linux

package server

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// BenchmarkLoopRound measures an event loop's own work for one client: the
// benchmark writes a pipeline of BF.EXISTS to the client's socket, has a
// loop that runs nowhere else read it, run it and write the replies (one
// round: read, then flushAll), and reads the replies. No other goroutine
// takes part, so the scheduler adds no noise; ns/op and allocs/op are per
// command.
func BenchmarkLoopRound(b *testing.B) {
	for _, depth := range []int{1, 16} {
		b.Run(fmt.Sprintf("P%d", depth), func(b *testing.B) {
			s := startServer(b, Config{NoPersistence: true, Logger: quietLogger()})
			l, err := newEventLoop(s)
			if err != nil {
				b.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			cc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer cc.Close()
			sc, err := ln.Accept()
			if err != nil {
				b.Fatal(err)
			}
			saved := s.loops
			s.loops = []*eventLoop{l}
			sess := &Session{ID: 1, Addr: "bench", created: time.Now()}
			s.startSession(sess)
			sess.canWait = true
			lc := s.adoptable(sc, sess)
			s.loops = saved
			if lc == nil {
				b.Fatal("not adoptable")
			}
			l.conns[lc.fd] = lc
			defer l.closeFD(lc.fd, "client")
			round := func(req []byte, reply []byte) {
				if _, err := cc.Write(req); err != nil {
					b.Fatal(err)
				}
				l.now = monoNow()
				for {
					l.read(lc)
					if lc.rd.Buffered() || len(l.dirty) > 0 {
						break
					}
				}
				l.flushAll()
				if _, err := io.ReadFull(cc, reply); err != nil {
					b.Fatal(err)
				}
			}
			got := make([]byte, 4)
			round([]byte("*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$1\r\nv\r\n"), got)
			if string(got) != ":1\r\n" {
				b.Fatalf("BF.ADD: %q", got)
			}
			req := []byte(strings.Repeat("*3\r\n$9\r\nBF.EXISTS\r\n$1\r\nk\r\n$1\r\nv\r\n", depth))
			want := strings.Repeat(":1\r\n", depth)
			buf := make([]byte, len(want))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += depth {
				round(req, buf)
			}
			b.StopTimer()
			if string(buf) != want {
				b.Fatalf("replies %q", buf)
			}
		})
	}
}
