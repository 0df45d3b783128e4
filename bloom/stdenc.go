package bloom

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// The standard encoders are thin wrappers over WriteTo and ReadFrom: the
// binary form is the bloomkit file itself, JSON is that file as a base64
// string, and gob uses the binary form. A zero value does not encode
// (ErrZero); decoding replaces the receiver only when the data holds
// exactly one valid filter of the receiver's type, so that a failed decode
// never leaves a filter that answers for keys it does not hold.

// MarshalBinary returns the filter in the bloomkit file format
// (encoding.BinaryMarshaler; gob uses it too).
func (f *Filter) MarshalBinary() ([]byte, error) { return marshalBinary(f) }

// UnmarshalBinary replaces f with the classic filter encoded in data,
// which must hold exactly one filter (encoding.BinaryUnmarshaler). Errors
// are as for ReadFrom; on error f is unchanged.
func (f *Filter) UnmarshalBinary(data []byte) error { return unmarshalBinary(f, new(Filter), data) }

// MarshalJSON returns the filter file as a JSON string in base64
// (json.Marshaler).
func (f *Filter) MarshalJSON() ([]byte, error) { return marshalJSON(f.MarshalBinary) }

// UnmarshalJSON replaces f with the filter in a string MarshalJSON wrote
// (json.Unmarshaler).
func (f *Filter) UnmarshalJSON(data []byte) error { return unmarshalJSON(data, f.UnmarshalBinary) }

// MarshalBinary returns the filter in the bloomkit file format.
func (f *Blocked) MarshalBinary() ([]byte, error) { return marshalBinary(f) }

// UnmarshalBinary replaces f with the blocked filter encoded in data (see
// Filter.UnmarshalBinary).
func (f *Blocked) UnmarshalBinary(data []byte) error { return unmarshalBinary(f, new(Blocked), data) }

// MarshalJSON returns the filter file as a JSON string in base64.
func (f *Blocked) MarshalJSON() ([]byte, error) { return marshalJSON(f.MarshalBinary) }

// UnmarshalJSON replaces f with the filter in a string MarshalJSON wrote.
func (f *Blocked) UnmarshalJSON(data []byte) error { return unmarshalJSON(data, f.UnmarshalBinary) }

// MarshalBinary returns the filter in the bloomkit file format.
func (c *Counting) MarshalBinary() ([]byte, error) { return marshalBinary(c) }

// UnmarshalBinary replaces c with the counting filter encoded in data (see
// Filter.UnmarshalBinary).
func (c *Counting) UnmarshalBinary(data []byte) error {
	return unmarshalBinary(c, new(Counting), data)
}

// MarshalJSON returns the filter file as a JSON string in base64.
func (c *Counting) MarshalJSON() ([]byte, error) { return marshalJSON(c.MarshalBinary) }

// UnmarshalJSON replaces c with the filter in a string MarshalJSON wrote.
func (c *Counting) UnmarshalJSON(data []byte) error { return unmarshalJSON(data, c.UnmarshalBinary) }

// MarshalBinary returns the filter in the bloomkit file format.
func (s *Scalable) MarshalBinary() ([]byte, error) { return marshalBinary(s) }

// UnmarshalBinary replaces s with the scalable filter encoded in data (see
// Filter.UnmarshalBinary).
func (s *Scalable) UnmarshalBinary(data []byte) error {
	return unmarshalBinary(s, new(Scalable), data)
}

// MarshalJSON returns the filter file as a JSON string in base64.
func (s *Scalable) MarshalJSON() ([]byte, error) { return marshalJSON(s.MarshalBinary) }

// UnmarshalJSON replaces s with the filter in a string MarshalJSON wrote.
func (s *Scalable) UnmarshalJSON(data []byte) error { return unmarshalJSON(data, s.UnmarshalBinary) }

// MarshalBinary returns the window in the bloomkit file format.
func (w *Window) MarshalBinary() ([]byte, error) { return marshalBinary(w) }

// UnmarshalBinary replaces w with the window encoded in data (see
// Filter.UnmarshalBinary). It keeps w's clock (see SetClock); a zero
// Window gets the system clock.
func (w *Window) UnmarshalBinary(data []byte) error {
	return unmarshalBinary(w, &Window{clock: w.clock}, data)
}

// MarshalJSON returns the window file as a JSON string in base64.
func (w *Window) MarshalJSON() ([]byte, error) { return marshalJSON(w.MarshalBinary) }

// UnmarshalJSON replaces w with the window in a string MarshalJSON wrote.
func (w *Window) UnmarshalJSON(data []byte) error { return unmarshalJSON(data, w.UnmarshalBinary) }

func marshalBinary(f io.WriterTo) ([]byte, error) {
	var b bytes.Buffer
	if _, err := f.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// unmarshalBinary reads data into tmp and, if it holds exactly one
// filter, copies tmp to dst.
func unmarshalBinary[T any, P interface {
	*T
	ReadFrom(io.Reader) (int64, error)
}](dst, tmp P, data []byte) error {
	r := bytes.NewReader(data)
	if _, err := tmp.ReadFrom(r); err != nil {
		return err
	}
	if r.Len() != 0 {
		return fmt.Errorf("%w: %d bytes after the checksum", ErrCorrupt, r.Len())
	}
	*dst = *tmp
	return nil
}

func marshalJSON(bin func() ([]byte, error)) ([]byte, error) {
	b, err := bin()
	if err != nil {
		return nil, err
	}
	return json.Marshal(b)
}

func unmarshalJSON(data []byte, unbin func([]byte) error) error {
	var b []byte
	if err := json.Unmarshal(data, &b); err != nil {
		return fmt.Errorf("bloom: a filter in JSON is a base64 string of its file: %w", err)
	}
	return unbin(b)
}

// panicZero reports an add to a zero value, which has no array to record
// the key in. The add methods return nothing, and dropping the key would
// be a false negative later, so this is a panic, as for a write to a nil
// map; its value wraps ErrZero.
func panicZero(typ string) {
	panic(fmt.Errorf("%w (an add to a zero %s)", ErrZero, typ))
}
