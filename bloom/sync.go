package bloom

// Sync is a view of a Filter or a Blocked whose methods may all run at
// once, in any number of goroutines, with no mutex: it tests with atomic
// loads and sets bits with atomic ORs (skipping bits already set). Get one
// with Filter.Sync or Blocked.Sync; it shares the filter's bits, and is a
// small value to pass around or keep.
//
// While goroutines add through a Sync, every goroutine that touches the
// filter must go through a Sync too: the filter's own methods use plain
// loads and stores, which are faster but not safe alongside an add. Of
// several goroutines adding the same new key at once, more than one may be
// told by TestAndAdd that it was absent (as with blobloom's SyncFilter);
// use a lock if exactly one must win.
type Sync struct{ f syncLayout }

// syncLayout is what Sync needs of a layout.
type syncLayout interface {
	sum(key []byte) (lo, hi uint64)
	sumString(key string) (lo, hi uint64)
	Params() Params
	testSync(lo, hi uint64) bool
	testAndAddSync(lo, hi uint64) bool
}

// Add inserts key.
func (s Sync) Add(key []byte) { s.layout().testAndAddSync(s.sum(key)) }

// AddString inserts key without copying it.
func (s Sync) AddString(key string) { s.layout().testAndAddSync(s.sumString(key)) }

// AddHash inserts the key whose hash is h (see Params.HashKey). It panics
// with a value wrapping ErrHashMismatch if h was made with another hash
// function or seed than the filter's (see KeyHash).
func (s Sync) AddHash(h KeyHash) {
	l := s.layout()
	if h.kind != hashKindNone {
		mustMatch(l.Params(), h)
	}
	l.testAndAddSync(h.Lo, h.Hi)
}

// Test reports whether key may have been added.
func (s Sync) Test(key []byte) bool { return s.f != nil && s.f.testSync(s.sum(key)) }

// TestString is Test for a string key.
func (s Sync) TestString(key string) bool { return s.f != nil && s.f.testSync(s.sumString(key)) }

// TestHash is Test for the key whose hash is h. It panics as AddHash does
// for a hash of another filter.
func (s Sync) TestHash(h KeyHash) bool {
	if s.f == nil {
		return false
	}
	if h.kind != hashKindNone {
		mustMatch(s.f.Params(), h)
	}
	return s.f.testSync(h.Lo, h.Hi)
}

// TestAndAdd inserts key and reports whether it tested present before.
func (s Sync) TestAndAdd(key []byte) bool { return s.layout().testAndAddSync(s.sum(key)) }

// TestAndAddString is TestAndAdd for a string key.
func (s Sync) TestAndAddString(key string) bool {
	return s.layout().testAndAddSync(s.sumString(key))
}

// layout is the view's filter for an add; the zero Sync has none, and an
// add to it panics with a value wrapping ErrZero, as an add to any zero
// value does (the key would otherwise be dropped).
func (s Sync) layout() syncLayout {
	if s.f == nil {
		panicZero("Sync")
	}
	return s.f
}

func (s Sync) sum(key []byte) (lo, hi uint64) {
	if s.f == nil {
		return hashBytes(key, 0)
	}
	return s.f.sum(key)
}

func (s Sync) sumString(key string) (lo, hi uint64) {
	if s.f == nil {
		return hashString(key, 0)
	}
	return s.f.sumString(key)
}
