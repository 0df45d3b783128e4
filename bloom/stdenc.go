package bloom

import (
	"fmt"

	"github.com/bloomkit/bloomkit/internal/format"
)

// The standard encoders are thin wrappers over WriteTo and ReadFrom: the
// binary form is the bloomkit file itself, JSON is that file as a base64
// string, and gob uses the binary form. A zero value does not encode
// (ErrZero); decoding replaces the receiver only when the data holds
// exactly one valid filter of the receiver's type, so that a failed decode
// never leaves a filter that answers for keys it does not hold.

// MarshalBinary returns the filter in the bloomkit file format
// (encoding.BinaryMarshaler; gob uses it too).
func (f *Filter) MarshalBinary() ([]byte, error) { return format.MarshalBinary(f) }

// UnmarshalBinary replaces f with the classic filter encoded in data,
// which must hold exactly one filter (encoding.BinaryUnmarshaler). Errors
// are as for ReadFrom; on error f is unchanged.
func (f *Filter) UnmarshalBinary(data []byte) error {
	return format.UnmarshalBinary(f, new(Filter), data)
}

// MarshalJSON returns the filter file as a JSON string in base64
// (json.Marshaler).
func (f *Filter) MarshalJSON() ([]byte, error) { return format.MarshalJSON(f.MarshalBinary) }

// UnmarshalJSON replaces f with the filter in a string MarshalJSON wrote
// (json.Unmarshaler).
func (f *Filter) UnmarshalJSON(data []byte) error {
	return format.UnmarshalJSON("bloom", data, f.UnmarshalBinary)
}

// MarshalBinary returns the filter in the bloomkit file format.
func (f *Blocked) MarshalBinary() ([]byte, error) { return format.MarshalBinary(f) }

// UnmarshalBinary replaces f with the blocked filter encoded in data (see
// Filter.UnmarshalBinary).
func (f *Blocked) UnmarshalBinary(data []byte) error {
	return format.UnmarshalBinary(f, new(Blocked), data)
}

// MarshalJSON returns the filter file as a JSON string in base64.
func (f *Blocked) MarshalJSON() ([]byte, error) { return format.MarshalJSON(f.MarshalBinary) }

// UnmarshalJSON replaces f with the filter in a string MarshalJSON wrote.
func (f *Blocked) UnmarshalJSON(data []byte) error {
	return format.UnmarshalJSON("bloom", data, f.UnmarshalBinary)
}

// MarshalBinary returns the filter in the bloomkit file format.
func (c *Counting) MarshalBinary() ([]byte, error) { return format.MarshalBinary(c) }

// UnmarshalBinary replaces c with the counting filter encoded in data (see
// Filter.UnmarshalBinary).
func (c *Counting) UnmarshalBinary(data []byte) error {
	return format.UnmarshalBinary(c, new(Counting), data)
}

// MarshalJSON returns the filter file as a JSON string in base64.
func (c *Counting) MarshalJSON() ([]byte, error) { return format.MarshalJSON(c.MarshalBinary) }

// UnmarshalJSON replaces c with the filter in a string MarshalJSON wrote.
func (c *Counting) UnmarshalJSON(data []byte) error {
	return format.UnmarshalJSON("bloom", data, c.UnmarshalBinary)
}

// MarshalBinary returns the filter in the bloomkit file format.
func (s *Scalable) MarshalBinary() ([]byte, error) { return format.MarshalBinary(s) }

// UnmarshalBinary replaces s with the scalable filter encoded in data (see
// Filter.UnmarshalBinary).
func (s *Scalable) UnmarshalBinary(data []byte) error {
	return format.UnmarshalBinary(s, new(Scalable), data)
}

// MarshalJSON returns the filter file as a JSON string in base64.
func (s *Scalable) MarshalJSON() ([]byte, error) { return format.MarshalJSON(s.MarshalBinary) }

// UnmarshalJSON replaces s with the filter in a string MarshalJSON wrote.
func (s *Scalable) UnmarshalJSON(data []byte) error {
	return format.UnmarshalJSON("bloom", data, s.UnmarshalBinary)
}

// MarshalBinary returns the window in the bloomkit file format.
func (w *Window) MarshalBinary() ([]byte, error) { return format.MarshalBinary(w) }

// UnmarshalBinary replaces w with the window encoded in data (see
// Filter.UnmarshalBinary). It keeps w's clock (see SetClock); a zero
// Window gets the system clock.
func (w *Window) UnmarshalBinary(data []byte) error {
	return format.UnmarshalBinary(w, &Window{clock: w.clock}, data)
}

// MarshalJSON returns the window file as a JSON string in base64.
func (w *Window) MarshalJSON() ([]byte, error) { return format.MarshalJSON(w.MarshalBinary) }

// UnmarshalJSON replaces w with the window in a string MarshalJSON wrote.
func (w *Window) UnmarshalJSON(data []byte) error {
	return format.UnmarshalJSON("bloom", data, w.UnmarshalBinary)
}

// panicZero reports an add to a zero value, which has no array to record
// the key in. The add methods return nothing, and dropping the key would
// be a false negative later, so this is a panic, as for a write to a nil
// map; its value wraps ErrZero.
func panicZero(typ string) {
	panic(fmt.Errorf("%w (an add to a zero %s)", ErrZero, typ))
}
