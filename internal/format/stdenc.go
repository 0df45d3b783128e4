package format

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// The filter packages' standard encoders (encoding.BinaryMarshaler,
// json.Marshaler and their inverses) are these thin wrappers over WriteTo
// and ReadFrom: the binary form is the bloomkit file itself, JSON is that
// file as a base64 string, and gob uses the binary form.

// MarshalBinary returns what f.WriteTo writes.
func MarshalBinary(f io.WriterTo) ([]byte, error) {
	var b bytes.Buffer
	if _, err := f.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// UnmarshalBinary reads data into tmp and, only if data holds exactly one
// filter, copies tmp to dst, so that a failed decode leaves dst unchanged.
func UnmarshalBinary[T any, P interface {
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

// MarshalJSON returns the binary form bin gives as a JSON string in base64.
func MarshalJSON(bin func() ([]byte, error)) ([]byte, error) {
	b, err := bin()
	if err != nil {
		return nil, err
	}
	return json.Marshal(b)
}

// UnmarshalJSON decodes the base64 string MarshalJSON wrote and hands the
// bytes to unbin; pkg names the caller's package in the error.
func UnmarshalJSON(pkg string, data []byte, unbin func([]byte) error) error {
	var b []byte
	if err := json.Unmarshal(data, &b); err != nil {
		return fmt.Errorf("%s: a filter in JSON is a base64 string of its file: %w", pkg, err)
	}
	return unbin(b)
}
