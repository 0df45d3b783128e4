package resp

import (
	"strconv"
)

// Writer accumulates a connection's replies in RESP2 or RESP3 encoding,
// one after another. Types RESP2 lacks are downgraded the way Redis does
// it: booleans become integers 0/1, maps become flat arrays, null becomes
// the null bulk string.
type Writer struct {
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

// Cap is the size of the buffer the replies are encoded into.
func (w *Writer) Cap() int { return cap(w.buf) }

// Next starts a new reply after the ones already in the buffer.
func (r *Writer) Next() {
	r.start = len(r.buf)
	r.failed, r.started = false, false
}

// Drain empties the buffer after its replies were sent.
func (r *Writer) Drain() {
	if cap(r.buf) > 1<<20 {
		r.buf = nil
	}
	r.buf, r.start = r.buf[:0], 0
}

func (r *Writer) mark() {
	r.started = true
}

// Pending returns every encoded byte not yet drained: the replies of the
// whole batch, to be sent.
func (r *Writer) Pending() []byte { return r.buf }

// Replace replaces the pending bytes with b (a batch whose replies must
// all change, such as when the log failed under them).
func (r *Writer) Replace(b []byte) { r.buf, r.start = b, 0 }

// Consume drops the first n pending bytes, which were sent, and keeps the
// rest at the front of the buffer.
func (r *Writer) Consume(n int) {
	rest := len(r.buf) - n
	if rest == 0 {
		r.Drain()
		return
	}
	copy(r.buf, r.buf[n:])
	r.buf = r.buf[:rest]
	r.start = 0
}

// Discard drops the reply being written (CLIENT REPLY OFF).
func (r *Writer) Discard() { r.buf = r.buf[:r.start] }

// Raw appends bytes that are already a reply, or several.
func (r *Writer) Raw(b []byte) { r.buf = append(r.buf, b...) }

// Failed reports whether the reply is an error at the top level.
func (r *Writer) Failed() bool { return r.failed }

// RESP3 reports whether the reply is encoded in RESP3.
func (r *Writer) RESP3() bool { return r.resp3 }

// SetRESP3 switches the protocol of what is written from now on (HELLO
// answers in the protocol it chose).
func (r *Writer) SetRESP3(on bool) { r.resp3 = on }

// Bytes returns the encoded reply: what was written since Reset or Next.
func (r *Writer) Bytes() []byte { return r.buf[r.start:] }

// Reset empties the reply for reuse with the given protocol.
func (r *Writer) Reset(resp3 bool) {
	if r.start == 0 && cap(r.buf) > 1<<20 {
		r.buf = nil // don't keep a big dump chunk's buffer per connection
	}
	r.buf = r.buf[:r.start]
	r.resp3 = resp3
	r.failed = false
	r.started = false
}

// Simple writes a simple string (+OK).
func (r *Writer) Simple(s string) {
	r.mark()
	r.buf = append(r.buf, '+')
	r.buf = AppendClean(r.buf, s)
	r.buf = append(r.buf, '\r', '\n')
}

// OK writes +OK.
func (r *Writer) OK() { r.Simple("OK") }

// Error writes an error reply; text is sent verbatim after '-'.
func (r *Writer) Error(s string) {
	if !r.started {
		r.failed = true
	}
	r.mark()
	r.buf = append(r.buf, '-')
	r.buf = AppendClean(r.buf, s)
	r.buf = append(r.buf, '\r', '\n')
}

// AppendClean appends s to b with CR and LF turned into spaces, so text
// from anywhere can stand in a one-line reply.
func AppendClean(b []byte, s string) []byte {
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
func (r *Writer) Int(n int64) {
	r.mark()
	r.buf = append(r.buf, ':')
	r.buf = strconv.AppendInt(r.buf, n, 10)
	r.buf = append(r.buf, '\r', '\n')
}

// Uint writes a non-negative integer (clamped to int64).
func (r *Writer) Uint(n uint64) {
	if n > 1<<63-1 {
		n = 1<<63 - 1
	}
	r.Int(int64(n))
}

// Double writes a floating-point number: a RESP3 double, or in RESP2 a
// bulk string of its shortest exact decimal form (Redis's addReplyDouble).
func (r *Writer) Double(v float64) {
	if !r.resp3 {
		r.BulkString(strconv.FormatFloat(v, 'g', -1, 64))
		return
	}
	r.mark()
	r.buf = append(r.buf, ',')
	r.buf = strconv.AppendFloat(r.buf, v, 'g', -1, 64)
	r.buf = append(r.buf, "\r\n"...)
}

// Bool writes a RESP3 boolean, or integer 0/1 under RESP2.
func (r *Writer) Bool(v bool) {
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
func (r *Writer) Bulk(b []byte) {
	r.mark()
	r.buf = append(r.buf, '$')
	r.buf = strconv.AppendInt(r.buf, int64(len(b)), 10)
	r.buf = append(r.buf, '\r', '\n')
	r.buf = append(r.buf, b...)
	r.buf = append(r.buf, '\r', '\n')
}

// BulkString writes a bulk string.
func (r *Writer) BulkString(s string) {
	r.mark()
	r.buf = append(r.buf, '$')
	r.buf = strconv.AppendInt(r.buf, int64(len(s)), 10)
	r.buf = append(r.buf, '\r', '\n')
	r.buf = append(r.buf, s...)
	r.buf = append(r.buf, '\r', '\n')
}

// Null writes the null bulk string (RESP2) or null (RESP3).
func (r *Writer) Null() {
	r.mark()
	if r.resp3 {
		r.buf = append(r.buf, "_\r\n"...)
	} else {
		r.buf = append(r.buf, "$-1\r\n"...)
	}
}

// NullArray writes the null array (RESP2) or null (RESP3).
func (r *Writer) NullArray() {
	r.mark()
	if r.resp3 {
		r.buf = append(r.buf, "_\r\n"...)
	} else {
		r.buf = append(r.buf, "*-1\r\n"...)
	}
}

// Array writes an array header of n elements.
func (r *Writer) Array(n int) {
	r.mark()
	r.buf = append(r.buf, '*')
	r.buf = strconv.AppendInt(r.buf, int64(n), 10)
	r.buf = append(r.buf, '\r', '\n')
}

// Push writes the header of an out-of-band message of n elements: a RESP3
// push (>), or an array under RESP2, where a subscribed connection gets
// nothing but messages and subscription replies.
func (r *Writer) Push(n int) {
	if !r.resp3 {
		r.Array(n)
		return
	}
	r.mark()
	r.buf = append(r.buf, '>')
	r.buf = strconv.AppendInt(r.buf, int64(n), 10)
	r.buf = append(r.buf, '\r', '\n')
}

// Map writes a map header of n pairs (a flat array of 2n under RESP2).
func (r *Writer) Map(n int) {
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
func (r *Writer) Set(n int) {
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
func (r *Writer) Verbatim(s string) {
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
