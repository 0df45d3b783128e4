package bloom

import (
	"fmt"
	"io"

	"github.com/bloomkit/bloomkit/frozen"
	"github.com/bloomkit/bloomkit/internal/format"
)

// Tester is what every filter Read returns can do: answer and save
// itself. Frozen sets (package frozen) are Testers only: every key they
// hold is given when they are built.
type Tester interface {
	Test(key []byte) bool
	TestString(key string) bool
	WriteTo(w io.Writer) (int64, error)
}

// Interface is the method set every filter type of this package has, for
// code that handles filters of any type, such as a command that loads
// whatever filter file it is given: a Tester that keys can be added to and
// that reports its Stats.
type Interface interface {
	Tester
	Add(key []byte)
	AddString(key string)
	TestAndAdd(key []byte) bool
	TestAndAddString(key string) bool
	Stats() Stats
}

var (
	_ Interface = (*Filter)(nil)
	_ Interface = (*Blocked)(nil)
	_ Interface = (*Counting)(nil)
	_ Interface = (*Scalable)(nil)
	_ Interface = (*Window)(nil)
	_ Interface = (*SplitBlock)(nil)
	_ Tester    = (*frozen.Filter)(nil)
	_ Tester    = (*frozen.Ribbon)(nil)
)

// Read reads one filter of any Bloom type from r and returns it: a
// *Filter, *Blocked, *Counting, *Scalable, *Window or *SplitBlock (an
// Interface: keys
// can be added; a Window reads the time from time.Now until given another
// clock with SetClock), or a *frozen.Filter or *frozen.Ribbon, which can
// only be tested.
// Errors are as for Filter.ReadFrom; a filter of a type that is not a Bloom
// filter or frozen set (a cuckoo filter, say) gives ErrType.
func Read(r io.Reader) (Tester, error) {
	hdr := make([]byte, headerSize)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, format.Truncated(err, "header")
	}
	h, err := format.ParseHeader(hdr)
	if err != nil {
		return nil, err
	}
	var f interface {
		Tester
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
	case TypeSplitBlock:
		f = new(SplitBlock)
	case format.TypeFrozen:
		f = new(frozen.Filter)
	case format.TypeRibbon:
		f = new(frozen.Ribbon)
	default:
		return nil, fmt.Errorf("%w: the bloom package does not read %s filters", ErrType, format.TypeName(h.Type))
	}
	if _, err := f.ReadFrom(format.Prepend(hdr, r)); err != nil {
		return nil, err
	}
	return f, nil
}
