package bloom

// The tests hold filters as bytes through these short names for the
// standard encoders (stdenc.go).

func (f *Filter) marshalBinary() ([]byte, error)   { return f.MarshalBinary() }
func (f *Blocked) marshalBinary() ([]byte, error)  { return f.MarshalBinary() }
func (c *Counting) marshalBinary() ([]byte, error) { return c.MarshalBinary() }
func (s *Scalable) marshalBinary() ([]byte, error) { return s.MarshalBinary() }
func (w *Window) marshalBinary() ([]byte, error)   { return w.MarshalBinary() }

func (f *Filter) unmarshalBinary(data []byte) error   { return f.UnmarshalBinary(data) }
func (f *Blocked) unmarshalBinary(data []byte) error  { return f.UnmarshalBinary(data) }
func (c *Counting) unmarshalBinary(data []byte) error { return c.UnmarshalBinary(data) }
func (s *Scalable) unmarshalBinary(data []byte) error { return s.UnmarshalBinary(data) }
func (w *Window) unmarshalBinary(data []byte) error   { return w.UnmarshalBinary(data) }

func (f *SplitBlock) marshalBinary() ([]byte, error)    { return f.MarshalBinary() }
func (f *SplitBlock) unmarshalBinary(data []byte) error { return f.UnmarshalBinary(data) }
