package resp

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"
)

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

// peekMax is how many requests parseAllPeeking looks ahead at, as many as
// the server's prefetch does.
const peekMax = 64

// parseAll parses a request stream and describes what came out: each
// command's arguments, then how it ended.
func parseAll(rd io.Reader, lim Limits) []string {
	return parseAllPeeking(rd, lim, false)
}

// parseAllPeeking is parseAll; with peeking, after each fill it also
// peeks at the buffered requests the way prefetch does, and records what
// it saw, which next must then return in the same order.
func parseAllPeeking(rd io.Reader, lim Limits, peeking bool) []string {
	p := NewReader(rd, lim)
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
			p.Peek(peekMax, func(args [][]byte) bool {
				peeked = append(peeked, quote(args))
				return true
			})
		}
		args, err := p.Next()
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
			if err := p.Fill(); err != nil {
				return append(out, "end")
			}
			continue
		}
		if len(args) > lim.MaxArgs {
			out = append(out, "TOO MANY ARGS")
		}
		var b bytes.Buffer
		for _, a := range args {
			if len(a) > lim.MaxBulk {
				out = append(out, "ARG TOO BIG")
			}
			b.WriteString(strconv.Quote(string(a)))
			b.WriteByte(' ')
		}
		out = append(out, b.String())
		if len(p.buf) > max(minReadBuf, lim.MaxQuery+64) {
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
		lim := Limits{MaxArgs: 16, MaxBulk: 256, MaxInline: 512, MaxQuery: 4096}
		if preAuth {
			lim = PreAuthLimits
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
