package cuckoo

import (
	"bytes"

	"github.com/bloomkit/bloomkit/internal/format"
)

// The standard encoders are thin wrappers over WriteTo and ReadFrom: the
// binary form is the bloomkit file, JSON is that file as a base64 string,
// and gob uses the binary form.

// MarshalBinary returns the filter in the bloomkit file format
// (encoding.BinaryMarshaler; gob uses it too). A zero Filter gives
// ErrZero.
func (f *Filter) MarshalBinary() ([]byte, error) {
	if len(f.tables) == 0 {
		return nil, ErrZero
	}
	var b bytes.Buffer
	b.Grow(int(format.HeaderSize + 8*f.payloadWords() + 4))
	if _, err := f.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// UnmarshalBinary replaces f with the cuckoo filter encoded in data, which
// must hold exactly one filter (encoding.BinaryUnmarshaler). Errors are as
// for ReadFrom; on error f is unchanged.
func (f *Filter) UnmarshalBinary(data []byte) error {
	return format.UnmarshalBinary(f, new(Filter), data)
}

// MarshalJSON returns the filter file as a JSON string in base64
// (json.Marshaler).
func (f *Filter) MarshalJSON() ([]byte, error) { return format.MarshalJSON(f.MarshalBinary) }

// UnmarshalJSON replaces f with the filter in a string MarshalJSON wrote
// (json.Unmarshaler).
func (f *Filter) UnmarshalJSON(data []byte) error {
	return format.UnmarshalJSON("cuckoo", data, f.UnmarshalBinary)
}
