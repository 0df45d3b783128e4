package server

import "github.com/bloomkit/bloomkit/server/internal/resp"

// Reply accumulates one command's reply in RESP2 or RESP3 encoding.
// Types RESP2 lacks are downgraded the way Redis does it: booleans become
// integers 0/1, maps become flat arrays, null becomes the null bulk string.
type Reply struct {
	// w is the encoder; a connection encodes the replies of a whole
	// pipeline into it, one after another.
	w resp.Writer
}

// Bytes returns the encoded reply.
func (r *Reply) Bytes() []byte { return r.w.Bytes() }

// Reset empties the reply for reuse with the given protocol.
func (r *Reply) Reset(resp3 bool) { r.w.Reset(resp3) }

// Simple writes a simple string (+OK).
func (r *Reply) Simple(s string) { r.w.Simple(s) }

// OK writes +OK.
func (r *Reply) OK() { r.w.OK() }

// Error writes an error reply; text is sent verbatim after '-'.
func (r *Reply) Error(s string) { r.w.Error(s) }

// Int writes an integer.
func (r *Reply) Int(n int64) { r.w.Int(n) }

// Uint writes a non-negative integer (clamped to int64).
func (r *Reply) Uint(n uint64) { r.w.Uint(n) }

// Bool writes a RESP3 boolean, or integer 0/1 under RESP2.
func (r *Reply) Bool(v bool) { r.w.Bool(v) }

// Double writes a floating-point number (a bulk string in RESP2).
func (r *Reply) Double(v float64) { r.w.Double(v) }

// Bulk writes a bulk string.
func (r *Reply) Bulk(b []byte) { r.w.Bulk(b) }

// BulkString writes a bulk string.
func (r *Reply) BulkString(s string) { r.w.BulkString(s) }

// Null writes the null bulk string (RESP2) or null (RESP3).
func (r *Reply) Null() { r.w.Null() }

// NullArray writes the null array (RESP2) or null (RESP3).
func (r *Reply) NullArray() { r.w.NullArray() }

// Array writes an array header of n elements.
func (r *Reply) Array(n int) { r.w.Array(n) }

// Push writes a RESP3 push header of n elements (an array under RESP2).
func (r *Reply) Push(n int) { r.w.Push(n) }

// Map writes a map header of n pairs (a flat array of 2n under RESP2).
func (r *Reply) Map(n int) { r.w.Map(n) }

// Set writes a set header (an array under RESP2).
func (r *Reply) Set(n int) { r.w.Set(n) }

// Verbatim writes a RESP3 verbatim text string (a bulk string under RESP2).
func (r *Reply) Verbatim(s string) { r.w.Verbatim(s) }
