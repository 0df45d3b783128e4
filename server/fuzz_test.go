package server

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/bloomkit/bloomkit/server/internal/resp"
)

var fuzzServer struct {
	once sync.Once
	s    *Server
}

// FuzzCommand feeds RESP (or inline) command streams through the command
// layer (Server.Do) and checks that every reply is well-formed RESP and
// nothing panics. The seed corpus is in testdata/fuzz/FuzzCommand.
func FuzzCommand(f *testing.F) {
	f.Add([]byte("*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$1\r\nv\r\n"))
	f.Add([]byte("BF.RESERVE k 0.01 100 EXPANSION 3\r\nBF.MADD k a b c\r\nBF.SCANDUMP k 0\r\n"))
	f.Add([]byte("CF.RESERVE c 8 BUCKETSIZE 1 EXPANSION 0\r\nCF.INSERT c ITEMS a b c d e f g h i\r\nCF.SCANDUMP c 1\r\n"))
	f.Add([]byte("HELLO 3\r\nBF.INFO k\r\nCF.INFO c\r\nBF.INSERT k CAPACITY 5 NONSCALING ITEMS x y z\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzServer.once.Do(func() {
			s, err := New(Config{NoPersistence: true, MaxMemory: 32 << 20, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			fuzzServer.s = s
		})
		s := fuzzServer.s
		p := resp.NewReader(bytes.NewReader(data), resp.Limits{MaxArgs: 1 << 10, MaxBulk: 1 << 20, MaxInline: 64 << 10, MaxQuery: 4 << 20})
		c := &Session{authed: true, ID: 1}
		var r Reply
		for {
			args, err := p.Next()
			if err != nil {
				break
			}
			if args == nil {
				if p.Fill() != nil {
					break
				}
				continue
			}
			if len(args) == 0 {
				continue
			}
			s.Do(c, args, &r)
			out := r.Bytes()
			br := bufio.NewReader(bytes.NewReader(out))
			if _, err := readReply(br); err != nil {
				t.Fatalf("%q: malformed reply %q: %v", args, out, err)
			}
			if br.Buffered() != 0 {
				t.Fatalf("%q: trailing bytes after the reply %q", args, out)
			}
		}
		s.db.Lock()
		if s.db.Len() > 50 {
			s.db.Flush()
		}
		s.db.Unlock()
	})
}
