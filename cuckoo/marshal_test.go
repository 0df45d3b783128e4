package cuckoo

import (
	"bytes"
	"fmt"

	"github.com/bloomkit/bloomkit/internal/format"
)

// The tests hold filters as bytes: marshalBinary and unmarshalBinary do
// what the MarshalBinary and UnmarshalBinary methods did before the API
// kept only the streams (WriteTo, ReadFrom, Read); unmarshalBinary, like
// UnmarshalBinary, rejects bytes after the filter.

// marshalBinary returns the filter in the bloomkit file format.
func (f *Filter) marshalBinary() ([]byte, error) {
	var b bytes.Buffer
	b.Grow(int(format.HeaderSize + 8*f.payloadWords() + 4))
	if _, err := f.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// unmarshalBinary replaces f with the cuckoo filter encoded in data, which
// must hold exactly one filter. Errors are as for ReadFrom.
func (f *Filter) unmarshalBinary(data []byte) error {
	r := bytes.NewReader(data)
	var g Filter
	if _, err := g.ReadFrom(r); err != nil {
		return err
	}
	if r.Len() != 0 {
		return fmt.Errorf("%w: %d bytes after the checksum", ErrCorrupt, r.Len())
	}
	*f = g
	return nil
}
