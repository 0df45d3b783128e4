package cuckoo

// The tests hold filters as bytes through these short names for the
// standard encoders (stdenc.go).

func (f *Filter) marshalBinary() ([]byte, error)    { return f.MarshalBinary() }
func (f *Filter) unmarshalBinary(data []byte) error { return f.UnmarshalBinary(data) }
