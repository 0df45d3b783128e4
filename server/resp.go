package server

import (
	"strconv"
)

// Reply accumulates one command's reply in RESP2 or RESP3 encoding.
// Types RESP2 lacks are downgraded the way Redis does it: booleans become
// integers 0/1, maps become flat arrays, null becomes the null bulk string.
type Reply struct {
	buf []byte
	// start is where this reply begins in buf: a connection encodes the
	// replies of a whole pipeline into one buffer, one after another.
	start int
	resp3 bool
	// failed is set when the top-level reply is an error.
	failed bool
	// started is set once anything has been written.
	started bool
}

// next starts a new reply after the ones already in the buffer.
func (r *Reply) next() {
	r.start = len(r.buf)
	r.failed, r.started = false, false
}

// drain empties the buffer after its replies were sent.
func (r *Reply) drain() {
	if cap(r.buf) > 1<<20 {
		r.buf = nil
	}
	r.buf, r.start = r.buf[:0], 0
}

func (r *Reply) mark() {
	r.started = true
}

// Bytes returns the encoded reply.
func (r *Reply) Bytes() []byte { return r.buf[r.start:] }

// Reset empties the reply for reuse with the given protocol.
func (r *Reply) Reset(resp3 bool) {
	if r.start == 0 && cap(r.buf) > 1<<20 {
		r.buf = nil // don't keep a big dump chunk's buffer per connection
	}
	r.buf = r.buf[:r.start]
	r.resp3 = resp3
	r.failed = false
	r.started = false
}

// Simple writes a simple string (+OK).
func (r *Reply) Simple(s string) {
	r.mark()
	r.buf = append(r.buf, '+')
	r.buf = appendClean(r.buf, s)
	r.buf = append(r.buf, '\r', '\n')
}

// OK writes +OK.
func (r *Reply) OK() { r.Simple("OK") }

// Error writes an error reply; text is sent verbatim after '-'.
func (r *Reply) Error(s string) {
	if !r.started {
		r.failed = true
	}
	r.mark()
	r.buf = append(r.buf, '-')
	r.buf = appendClean(r.buf, s)
	r.buf = append(r.buf, '\r', '\n')
}

func appendClean(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return b
}

// Int writes an integer.
func (r *Reply) Int(n int64) {
	r.mark()
	r.buf = append(r.buf, ':')
	r.buf = strconv.AppendInt(r.buf, n, 10)
	r.buf = append(r.buf, '\r', '\n')
}

// Uint writes a non-negative integer (clamped to int64).
func (r *Reply) Uint(n uint64) {
	if n > 1<<63-1 {
		n = 1<<63 - 1
	}
	r.Int(int64(n))
}

// Bool writes a RESP3 boolean, or integer 0/1 under RESP2.
func (r *Reply) Bool(v bool) {
	if !r.resp3 {
		if v {
			r.Int(1)
		} else {
			r.Int(0)
		}
		return
	}
	r.mark()
	if v {
		r.buf = append(r.buf, "#t\r\n"...)
	} else {
		r.buf = append(r.buf, "#f\r\n"...)
	}
}

// Bulk writes a bulk string.
func (r *Reply) Bulk(b []byte) {
	r.mark()
	r.buf = append(r.buf, '$')
	r.buf = strconv.AppendInt(r.buf, int64(len(b)), 10)
	r.buf = append(r.buf, '\r', '\n')
	r.buf = append(r.buf, b...)
	r.buf = append(r.buf, '\r', '\n')
}

// BulkString writes a bulk string.
func (r *Reply) BulkString(s string) {
	r.mark()
	r.buf = append(r.buf, '$')
	r.buf = strconv.AppendInt(r.buf, int64(len(s)), 10)
	r.buf = append(r.buf, '\r', '\n')
	r.buf = append(r.buf, s...)
	r.buf = append(r.buf, '\r', '\n')
}

// Null writes the null bulk string (RESP2) or null (RESP3).
func (r *Reply) Null() {
	r.mark()
	if r.resp3 {
		r.buf = append(r.buf, "_\r\n"...)
	} else {
		r.buf = append(r.buf, "$-1\r\n"...)
	}
}

// NullArray writes the null array (RESP2) or null (RESP3).
func (r *Reply) NullArray() {
	r.mark()
	if r.resp3 {
		r.buf = append(r.buf, "_\r\n"...)
	} else {
		r.buf = append(r.buf, "*-1\r\n"...)
	}
}

// Array writes an array header of n elements.
func (r *Reply) Array(n int) {
	r.mark()
	r.buf = append(r.buf, '*')
	r.buf = strconv.AppendInt(r.buf, int64(n), 10)
	r.buf = append(r.buf, '\r', '\n')
}

// Map writes a map header of n pairs (a flat array of 2n under RESP2).
func (r *Reply) Map(n int) {
	if !r.resp3 {
		r.Array(2 * n)
		return
	}
	r.mark()
	r.buf = append(r.buf, '%')
	r.buf = strconv.AppendInt(r.buf, int64(n), 10)
	r.buf = append(r.buf, '\r', '\n')
}

// Set writes a set header (an array under RESP2).
func (r *Reply) Set(n int) {
	if !r.resp3 {
		r.Array(n)
		return
	}
	r.mark()
	r.buf = append(r.buf, '~')
	r.buf = strconv.AppendInt(r.buf, int64(n), 10)
	r.buf = append(r.buf, '\r', '\n')
}

// Verbatim writes a RESP3 verbatim text string (a bulk string under RESP2).
func (r *Reply) Verbatim(s string) {
	if !r.resp3 {
		r.BulkString(s)
		return
	}
	r.mark()
	r.buf = append(r.buf, '=')
	r.buf = strconv.AppendInt(r.buf, int64(len(s)+4), 10)
	r.buf = append(r.buf, "\r\ntxt:"...)
	r.buf = append(r.buf, s...)
	r.buf = append(r.buf, '\r', '\n')
}
