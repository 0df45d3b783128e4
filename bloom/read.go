package bloom

import (
	"fmt"
	"io"

	"github.com/bloomkit/bloomkit/internal/format"
)

// Interface is the method set every filter type of this package has, for
// code that handles filters of any type, such as a command that loads
// whatever filter file it is given.
type Interface interface {
	Add(key []byte)
	AddString(key string)
	Test(key []byte) bool
	TestString(key string) bool
	// ApproxCount estimates the number of distinct keys added.
	ApproxCount() uint64
	// EstimatedFPR is the false-positive rate the filter has now.
	EstimatedFPR() float64
	WriteTo(w io.Writer) (int64, error)
}

var (
	_ Interface = (*Filter)(nil)
	_ Interface = (*Blocked)(nil)
	_ Interface = (*Counting)(nil)
	_ Interface = (*Scalable)(nil)
	_ Interface = (*Window)(nil)
)

// Read reads one filter of any type of this package from r and returns it
// (a *Filter, *Blocked, *Counting, *Scalable or *Window; a Window reads the
// time from time.Now until given another clock with SetClock). Errors are
// as for Filter.ReadFrom; a filter of a type this package does not hold (a
// cuckoo filter, say) gives ErrType.
func Read(r io.Reader) (Interface, error) {
	hdr := make([]byte, headerSize)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, format.Truncated(err, "header")
	}
	h, err := format.ParseHeader(hdr)
	if err != nil {
		return nil, err
	}
	var f interface {
		Interface
		ReadFrom(io.Reader) (int64, error)
	}
	switch h.Type {
	case TypeClassic:
		f = new(Filter)
	case TypeBlocked:
		f = new(Blocked)
	case TypeCounting:
		f = new(Counting)
	case TypeScalable:
		f = new(Scalable)
	case TypeWindow:
		f = new(Window)
	default:
		return nil, fmt.Errorf("%w: the bloom package does not read %s filters", ErrType, format.TypeName(h.Type))
	}
	if _, err := f.ReadFrom(format.Prepend(hdr, r)); err != nil {
		return nil, err
	}
	return f, nil
}
