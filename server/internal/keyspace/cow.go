package keyspace

// cowCopy holds the chunks of one filter array that writes changed before
// the snapshot writer reached them: chunk c of the array as it was at the
// snapshot's point in time is buf[c*cowChunk:], valid while have[c].
//
// Arrays of cowMapMin bytes or more get their copy area mapped outside the
// Go heap (mapAnon): only the chunks actually copied become resident, the
// writer returns each one to the kernel as soon as it has written it out,
// and the rest goes back when the snapshot is done with the array. On the
// Go heap the same copies would be garbage the runtime keeps resident long
// after the snapshot (a 10M-item filter filled during a snapshot left
// ~13 MiB of extra RSS behind).
type cowCopy struct {
	buf    []byte
	have   []bool
	mapped bool
}

// cowMapMin is the smallest array whose copies are mapped outside the heap
// (the size from which redisbloom maps the arrays themselves).
const cowMapMin = 1 << 20

func newCowCopy(n int) *cowCopy {
	c := &cowCopy{have: make([]bool, (n+cowChunk-1)/cowChunk)}
	if n >= cowMapMin {
		if b, ok := mapAnon(n); ok {
			c.buf, c.mapped = b, true
			return c
		}
	}
	c.buf = make([]byte, n)
	return c
}

// save copies chunk c of a unless it is already copied, and returns the
// bytes copied.
func (c *cowCopy) save(a []byte, chunk int) int {
	if c.have[chunk] {
		return 0
	}
	lo, hi := chunk*cowChunk, min((chunk+1)*cowChunk, len(a))
	copy(c.buf[lo:hi], a[lo:hi])
	c.have[chunk] = true
	return hi - lo
}

// take appends the copy of chunk c to dst, if there is one, and lets the
// copy go.
func (c *cowCopy) take(dst []byte, chunk int) ([]byte, bool) {
	if c == nil || !c.have[chunk] {
		return dst, false
	}
	lo, hi := chunk*cowChunk, min((chunk+1)*cowChunk, len(c.buf))
	dst = append(dst, c.buf[lo:hi]...)
	c.have[chunk] = false
	if c.mapped {
		discardAnon(c.buf[lo:hi])
	}
	return dst, true
}

// free returns the copy area.
func (c *cowCopy) free() {
	if c == nil {
		return
	}
	if c.mapped {
		unmapAnon(c.buf)
	}
	c.buf, c.have = nil, nil
}
