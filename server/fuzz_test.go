package server

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
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
		p := newRequestReader(bytes.NewReader(data), readLimits{maxArgs: 1 << 10, maxBulk: 1 << 20, maxInline: 64 << 10, maxQuery: 4 << 20})
		c := &Session{authed: true, ID: 1}
		var r Reply
		for {
			args, err := p.next()
			if err != nil {
				break
			}
			if args == nil {
				if p.fill() != nil {
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
		s.db.mu.Lock()
		if len(s.db.keys) > 50 {
			s.db.flush()
		}
		s.db.mu.Unlock()
	})
}

// chunkReader returns its data a few bytes per Read, as TCP may.
type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), c.n, len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// parseAll parses a request stream and describes what came out: each
// command's arguments, then how it ended.
func parseAll(rd io.Reader, lim readLimits) []string {
	return parseAllPeeking(rd, lim, false)
}

// parseAllPeeking is parseAll; with peeking, after each fill it also
// peeks at the buffered requests the way prefetch does, and records what
// it saw, which next must then return in the same order.
func parseAllPeeking(rd io.Reader, lim readLimits, peeking bool) []string {
	p := newRequestReader(rd, lim)
	var out, peeked []string
	quote := func(args [][]byte) string {
		var b bytes.Buffer
		for _, a := range args {
			b.WriteString(strconv.Quote(string(a)))
			b.WriteByte(' ')
		}
		return b.String()
	}
	for {
		if peeking && len(peeked) == 0 {
			p.peek(prefetchMax, func(args [][]byte) bool {
				peeked = append(peeked, quote(args))
				return true
			})
		}
		args, err := p.next()
		if err == nil && args != nil && len(args) > 0 && len(peeked) > 0 {
			if q := quote(args); q != peeked[0] {
				return append(out, "PEEKED "+peeked[0]+" BUT READ "+q)
			}
			peeked = peeked[1:]
		}
		if err != nil {
			return append(out, "error: "+err.Error())
		}
		if args == nil {
			if err := p.fill(); err != nil {
				return append(out, "end")
			}
			continue
		}
		if len(args) > lim.maxArgs {
			out = append(out, "TOO MANY ARGS")
		}
		var b bytes.Buffer
		for _, a := range args {
			if len(a) > lim.maxBulk {
				out = append(out, "ARG TOO BIG")
			}
			b.WriteString(strconv.Quote(string(a)))
			b.WriteByte(' ')
		}
		out = append(out, b.String())
		if len(p.buf) > max(minReadBuf, lim.maxQuery+64) {
			out = append(out, "BUFFER OVER THE QUERY LIMIT")
		}
	}
}

// FuzzRequestReader: whatever bytes arrive, in whatever pieces, the reader
// never panics, never returns more arguments or larger ones than the limits
// allow, never holds more than the query limit, and parses the same
// commands however the stream is cut into reads.
func FuzzRequestReader(f *testing.F) {
	f.Add([]byte("*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$1\r\nv\r\n"), uint8(1), false)
	f.Add([]byte("PING\r\nset \"a b\" 'c\\'d' \"\\x41\\n\"\r\n"), uint8(3), false)
	f.Add([]byte("$5\r\n*1\r\n$9999999999\r\nxxxx\nyyyy\n"), uint8(2), true)
	f.Add([]byte("*20\r\n$1\r\na\r\n"), uint8(5), true)
	f.Add([]byte("*1\r\n$20000\r\n"), uint8(7), true)
	f.Add([]byte("*-1\r\n*0\r\n\r\n\n*1\r\n$4\r\nPING\r\n"), uint8(1), false)
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8, preAuth bool) {
		lim := readLimits{maxArgs: 16, maxBulk: 256, maxInline: 512, maxQuery: 4096}
		if preAuth {
			lim = preAuthLimits
		}
		whole := parseAll(bytes.NewReader(bytes.Clone(data)), lim)
		pieces := parseAll(&chunkReader{data: bytes.Clone(data), n: int(chunk%16) + 1}, lim)
		if strings.Join(whole, "\n") != strings.Join(pieces, "\n") {
			t.Fatalf("parsed differently when read in pieces:\nwhole:  %q\npieces: %q", whole, pieces)
		}
		// Looking ahead (prefetch) changes nothing about what is read.
		peeked := parseAllPeeking(&chunkReader{data: bytes.Clone(data), n: int(chunk%16) + 1}, lim, true)
		if strings.Join(whole, "\n") != strings.Join(peeked, "\n") {
			t.Fatalf("parsed differently when peeked at:\nwhole:  %q\npeeked: %q", whole, peeked)
		}
		for _, s := range whole {
			if strings.ToUpper(s) == s && strings.Contains(s, "TOO") || strings.Contains(s, "OVER THE QUERY") {
				t.Fatalf("limit broken: %q", whole)
			}
		}
	})
}
