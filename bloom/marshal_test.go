package bloom

import (
	"bytes"
	"fmt"
	"io"
)

// The tests hold filters as bytes: marshalBinary and unmarshalBinary do
// what the MarshalBinary and UnmarshalBinary methods did before the API
// kept only the streams (WriteTo, ReadFrom, Read); unmarshalBinary, like
// UnmarshalBinary, rejects bytes after the filter and changes nothing on
// error.

func (f *Filter) marshalBinary() ([]byte, error)   { return marshal(f) }
func (f *Blocked) marshalBinary() ([]byte, error)  { return marshal(f) }
func (c *Counting) marshalBinary() ([]byte, error) { return marshal(c) }
func (s *Scalable) marshalBinary() ([]byte, error) { return marshal(s) }
func (w *Window) marshalBinary() ([]byte, error)   { return marshal(w) }

func (f *Filter) unmarshalBinary(data []byte) error   { return unmarshal(f, new(Filter), data) }
func (f *Blocked) unmarshalBinary(data []byte) error  { return unmarshal(f, new(Blocked), data) }
func (c *Counting) unmarshalBinary(data []byte) error { return unmarshal(c, new(Counting), data) }
func (s *Scalable) unmarshalBinary(data []byte) error { return unmarshal(s, new(Scalable), data) }

// unmarshalBinary of a window keeps its clock.
func (w *Window) unmarshalBinary(data []byte) error {
	return unmarshal(w, &Window{clock: w.clock}, data)
}

func marshal(f io.WriterTo) ([]byte, error) {
	var b bytes.Buffer
	if _, err := f.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// unmarshal reads data into tmp and, if it holds exactly one filter, copies
// tmp to dst.
func unmarshal[T any, P interface {
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
