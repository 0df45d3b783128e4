package resp

import (
	"bytes"
	"errors"
	"io"
)

// Reader reads Redis requests from a connection the way Redis's
// processMultibulkBuffer and processInlineBuffer do — a request starting
// with '*' is a RESP array of bulk strings, anything else is an inline
// command (a line of words) — and it is the only reader, so the limits it
// checks are the limits that hold: no other parser can disagree with it
// about where a request starts or how long it is.
//
// Arguments alias the reader's buffer and are valid until the next call of
// Next; the buffer grows to hold one whole request, never more than the
// limits allow.
type Reader struct {
	rd   io.Reader
	buf  []byte
	r, w int // unread data is buf[r:w]
	args [][]byte
	// need is how many unread bytes the request being parsed needs at
	// least (a hint for Fill, so a large argument is read in few calls).
	need int
	lim  Limits
}

// Limits are the request limits. Before AUTH the small ones apply, as
// in Redis: at most 10 arguments and 16 KiB per argument.
type Limits struct {
	PreAuth   bool
	MaxArgs   int // arguments per command
	MaxBulk   int // bytes per argument
	MaxInline int // bytes of an inline command or of a header line
	MaxQuery  int // bytes of one request in all
}

// PreAuthLimits are the limits of a connection that has not authenticated.
var PreAuthLimits = Limits{PreAuth: true, MaxArgs: 10, MaxBulk: 16 << 10, MaxInline: 16 << 10, MaxQuery: 256 << 10}

// ProtocolError is a malformed or oversized request: the connection gets
// "-ERR Protocol error: <msg>" and is closed, as in Redis.
type ProtocolError struct{ msg string }

// Error returns the text after "-ERR ".
func (e *ProtocolError) Error() string { return "Protocol error: " + e.msg }

func protoErr(msg string) error { return &ProtocolError{msg} }

const minReadBuf = 16 << 10

// NewReader returns a reader of the requests arriving on rd, within lim.
func NewReader(rd io.Reader, lim Limits) *Reader {
	return &Reader{rd: rd, buf: make([]byte, minReadBuf), lim: lim}
}

// SetLimits changes the limits for the requests not yet parsed (a client
// that authenticated gets the configured ones).
func (p *Reader) SetLimits(lim Limits) { p.lim = lim }

// Unread returns the bytes received but not parsed yet (a connection
// handed over to another reader passes them on). They alias the buffer.
func (p *Reader) Unread() []byte { return p.buf[p.r:p.w] }

// Buffered reports whether unread bytes remain (a pipeline continues).
func (p *Reader) Buffered() bool { return p.r < p.w }

// Sizes are the unread bytes, the room left after them and the buffer's
// size (CLIENT LIST's qbuf, qbuf-free and rbs).
func (p *Reader) Sizes() (unread, free, size int) { return p.w - p.r, len(p.buf) - p.w, len(p.buf) }

// Next parses one request from the buffered bytes. It returns the
// arguments, or nil and no error when the buffer holds no complete request
// (call fill). An empty request (a blank line, "*0") returns an empty,
// non-nil slice.
func (p *Reader) Next() ([][]byte, error) {
	p.need = 0
	if p.r >= p.w {
		p.r, p.w = 0, 0
		return nil, nil
	}
	var args [][]byte
	var err error
	start := p.r
	if p.buf[p.r] == '*' {
		args, err = p.multibulk()
	} else {
		args, err = p.inline()
	}
	if args == nil && err == nil && p.r != start {
		args = noArgs // consumed an empty request
	}
	return args, err
}

var noArgs = make([][]byte, 0)

// line finds the end of the line starting at i: the index of its '\r' (or
// -1 when incomplete). Lines are "\r\n"-terminated in RESP.
func (p *Reader) line(i int, tooBig string) (int, error) {
	j := bytes.IndexByte(p.buf[i:p.w], '\r')
	if j < 0 && p.w-i > p.lim.MaxInline || j > p.lim.MaxInline {
		return 0, protoErr(tooBig)
	}
	if j < 0 || i+j+1 >= p.w {
		p.need = max(p.need, p.w-p.r+1)
		return -1, nil
	}
	return i + j, nil
}

func (p *Reader) multibulk() ([][]byte, error) {
	i := p.r
	e, err := p.line(i, "too big mbulk count string")
	if e < 0 || err != nil {
		return nil, err
	}
	n, ok := ParseInt(p.buf[i+1 : e])
	if !ok || n > 1<<31-1 {
		return nil, protoErr("invalid multibulk length")
	}
	if n > int64(p.lim.MaxArgs) {
		if p.lim.PreAuth {
			return nil, protoErr("unauthenticated multibulk length")
		}
		return nil, protoErr("invalid multibulk length")
	}
	i = e + 2
	p.args = p.args[:0]
	if n <= 0 {
		p.r = i
		return nil, nil
	}
	for k := int64(0); k < n; k++ {
		if i >= p.w {
			p.need = max(p.need, i-p.r+1)
			return nil, nil
		}
		if p.buf[i] != '$' {
			return nil, protoErr("expected '$', got '" + string(p.buf[i]) + "'")
		}
		e, err := p.line(i, "too big bulk count string")
		if e < 0 || err != nil {
			return nil, err
		}
		l, ok := ParseInt(p.buf[i+1 : e])
		if !ok || l < 0 || l > int64(p.lim.MaxBulk) {
			if ok && l >= 0 && p.lim.PreAuth {
				return nil, protoErr("unauthenticated bulk length")
			}
			return nil, protoErr("invalid bulk length")
		}
		i = e + 2
		end := i + int(l)
		if end-p.r > p.lim.MaxQuery {
			return nil, protoErr("request larger than the query buffer limit")
		}
		if end+2 > p.w {
			// Ask for the whole argument, and the next header.
			p.need = max(p.need, end+2-p.r+16)
			return nil, nil
		}
		p.args = append(p.args, p.buf[i:end:end])
		i = end + 2
	}
	p.r = i
	return p.args, nil
}

func (p *Reader) inline() ([][]byte, error) {
	i := p.r
	j := bytes.IndexByte(p.buf[i:p.w], '\n')
	if j < 0 {
		if p.w-i > p.lim.MaxInline {
			return nil, protoErr("too big inline request")
		}
		p.need = p.w - p.r + 1
		return nil, nil
	}
	if j > p.lim.MaxInline {
		return nil, protoErr("too big inline request")
	}
	line := p.buf[i : i+j]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	args, err := SplitArgs(line, p.args[:0], p.lim.MaxArgs)
	if err != nil {
		return nil, err
	}
	for _, a := range args {
		if len(a) > p.lim.MaxBulk {
			return nil, protoErr("invalid bulk length")
		}
	}
	p.args = args
	p.r = i + j + 1
	return args, nil
}

// SplitArgs splits an inline command into words as Redis's sdssplitargs
// does: spaces separate; "double quotes" take \n \r \t \b \a \\ \" and
// \xHH escapes; 'single quotes' take \'. A closing quote must be followed
// by a space or the end. Words are written over the line itself.
func SplitArgs(line []byte, args [][]byte, maxArgs int) ([][]byte, error) {
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			return args, nil
		}
		if len(args) >= maxArgs {
			return nil, protoErr("too many arguments in inline request")
		}
		start, w := i, i // the word is rewritten in place from start
		inDQ, inSQ := false, false
		for done := false; !done; {
			if i >= len(line) {
				if inDQ || inSQ {
					return nil, protoErr("unbalanced quotes in request")
				}
				break
			}
			c := line[i]
			switch {
			case inDQ:
				switch {
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					line[w] = unhex(line[i+2])<<4 | unhex(line[i+3])
					w++
					i += 4
					continue
				case c == '\\' && i+1 < len(line):
					i++
					switch line[i] {
					case 'n':
						c = '\n'
					case 'r':
						c = '\r'
					case 't':
						c = '\t'
					case 'b':
						c = '\b'
					case 'a':
						c = '\a'
					default:
						c = line[i]
					}
				case c == '"':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, protoErr("unbalanced quotes in request")
					}
					done = true
					i++
					continue
				}
			case inSQ:
				switch {
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					i++
					c = '\''
				case c == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, protoErr("unbalanced quotes in request")
					}
					done = true
					i++
					continue
				}
			default:
				switch {
				case isSpace(c):
					done = true
					continue
				case c == '"':
					inDQ = true
					i++
					continue
				case c == '\'':
					inSQ = true
					i++
					continue
				}
			}
			line[w] = c
			w++
			i++
		}
		args = append(args, line[start:w:w])
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// ErrQueryLimit is returned by Fill when one request would not fit the
// query buffer limit.
var ErrQueryLimit = errors.New("query buffer limit")

// Fill reads more bytes from the connection: it moves the unread bytes to
// the front of the buffer and grows it when the request being parsed
// needs more room (up to the limits).
func (p *Reader) Fill() error {
	if p.r > 0 {
		n := copy(p.buf, p.buf[p.r:p.w])
		p.r, p.w = 0, n
	}
	want := max(p.need, p.w+1)
	if want > len(p.buf) {
		if want > p.lim.MaxQuery+64 {
			return ErrQueryLimit
		}
		size := max(2*len(p.buf), want)
		size = min(size, p.lim.MaxQuery+64)
		nb := make([]byte, size)
		copy(nb, p.buf[:p.w])
		p.buf = nb
	} else if p.w == 0 && len(p.buf) > 1<<20 {
		// Do not keep a large buffer for a connection that is idle.
		p.buf = make([]byte, minReadBuf)
	}
	n, err := p.rd.Read(p.buf[p.w:])
	p.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// SeveralRequests reports whether the buffer holds more than one request:
// a quick test, before Peek, that there is a pipeline to look ahead in.
// It looks for the start of a second multibulk request within the first
// few KiB only, so a large request arriving in many reads is not scanned
// again on each of them.
func (p *Reader) SeveralRequests() bool {
	if p.w-p.r < 32 || p.buf[p.r] != '*' {
		return false
	}
	return bytes.Index(p.buf[p.r+1:min(p.w, p.r+4096)], []byte("\r\n*")) >= 0
}

// Peek calls f with each complete multibulk request in the buffer, at most
// max of them, until f returns false, without consuming anything: the
// requests are parsed again by Next. (Inline requests are not peeked:
// parsing one rewrites its line in place.) The arguments passed to f are
// valid only during the call.
func (p *Reader) Peek(max int, f func(args [][]byte) bool) {
	r, need := p.r, p.need
	defer func() { p.r, p.need = r, need }()
	for i := 0; i < max && p.r < p.w && p.buf[p.r] == '*'; i++ {
		args, err := p.multibulk()
		if err != nil || args == nil || !f(args) {
			return
		}
	}
}
