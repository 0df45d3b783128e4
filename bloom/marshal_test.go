package bloom

import (
	"bytes"
	"fmt"
	"io"
)

// The tests hold filters as bytes: marshalBinary and unmarshalBinary do
// what the MarshalBinary and UnmarshalBinary methods did before the API
// kept only the streams (WriteTo, ReadFrom, Read); unmarshalBinary, like
// UnmarshalBinary, rejects bytes after the filter.

// unmarshalAll decodes data with readFrom and insists it is used up.
func unmarshalAll(data []byte, readFrom func(io.Reader) (int64, error)) error {
	r := bytes.NewReader(data)
	if _, err := readFrom(r); err != nil {
		return err
	}
	if r.Len() != 0 {
		return fmt.Errorf("%w: %d bytes after the checksum", ErrCorrupt, r.Len())
	}
	return nil
}

func marshal(size uint64, writeTo func(io.Writer) (int64, error)) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(int(headerSize + size + 4))
	if _, err := writeTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// marshalBinary returns the filter in the bloomkit file format.
func (f *Filter) marshalBinary() ([]byte, error) {
	return marshal(uint64(len(f.words))*8, f.WriteTo)
}

// unmarshalBinary replaces f with the classic filter encoded in data, which
// must hold exactly one filter. Errors are as for ReadFrom.
func (f *Filter) unmarshalBinary(data []byte) error {
	var g Filter
	if err := unmarshalAll(data, g.ReadFrom); err != nil {
		return err
	}
	*f = g
	return nil
}

// marshalBinary returns the filter in the bloomkit file format.
func (f *Blocked) marshalBinary() ([]byte, error) {
	return marshal(uint64(len(f.words))*8, f.WriteTo)
}

// unmarshalBinary replaces f with the blocked filter encoded in data.
func (f *Blocked) unmarshalBinary(data []byte) error {
	var g Blocked
	if err := unmarshalAll(data, g.ReadFrom); err != nil {
		return err
	}
	*f = g
	return nil
}

// marshalBinary returns the filter in the bloomkit file format.
func (c *Counting) marshalBinary() ([]byte, error) {
	return marshal(uint64(len(c.words))*8, c.WriteTo)
}

// unmarshalBinary replaces c with the counting filter encoded in data, which
// must hold exactly one filter. Errors are as for ReadFrom.
func (c *Counting) unmarshalBinary(data []byte) error {
	var d Counting
	if err := unmarshalAll(data, d.ReadFrom); err != nil {
		return err
	}
	*c = d
	return nil
}

// marshalBinary returns the filter in the bloomkit file format.
func (s *Scalable) marshalBinary() ([]byte, error) {
	return marshal(s.header().PayloadLen, s.WriteTo)
}

// unmarshalBinary replaces s with the scalable filter encoded in data,
// which must hold exactly one filter. Errors are as for ReadFrom.
func (s *Scalable) unmarshalBinary(data []byte) error {
	var t Scalable
	if err := unmarshalAll(data, t.ReadFrom); err != nil {
		return err
	}
	*s = t
	return nil
}

// marshalBinary returns the window in the bloomkit file format.
func (w *Window) marshalBinary() ([]byte, error) {
	return marshal(w.payloadLen(), w.WriteTo)
}

// unmarshalBinary replaces w with the window encoded in data, which must
// hold exactly one filter. The window keeps its clock. Errors are as for
// ReadFrom.
func (w *Window) unmarshalBinary(data []byte) error {
	var t Window
	t.clock = w.clock
	if err := unmarshalAll(data, t.ReadFrom); err != nil {
		return err
	}
	*w = t
	return nil
}
