package bloom

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/bloomkit/bloomkit/internal/generation"
)

// TypeWindow is the file-format type of a Window filter.
const TypeWindow = format.TypeWindow

// DefaultGenerations is the number of generations a Window splits its
// period into unless told otherwise.
const DefaultGenerations = 4

// MaxGenerations is the largest number of generations of a Window.
const MaxGenerations = 64

// WindowConfig describes a Window filter.
type WindowConfig struct {
	// Window is the period T a key is remembered for, at least 1ns.
	Window time.Duration
	// Items is the largest number of distinct keys added within any period
	// of length Window, however they arrive: all at once, in bursts or
	// spread evenly. The filter meets Rate up to that many.
	Items uint64
	// Rate is the false-positive rate at Items keys per Window, in (0, 1).
	Rate float64
	// Generations is G, how many parts the window is split into (default 4,
	// at most MaxGenerations). A key is forgotten at most Window/G after its
	// period ends; memory grows with (G+1)/G and a lookup probes G+1
	// filters.
	Generations int
	// Clock returns the current time; nil means time.Now. Tests pass a fake
	// clock so that they need not sleep.
	Clock func() time.Time
	// Seed is the hash seed of every generation.
	Seed uint64
}

// Window answers "was this key added within the last T?". Time is cut into
// generations of length d = ⌈T/G⌉, aligned to the Unix epoch, and the filter
// keeps a blocked filter for each of the last G+1 of them: the current one,
// which takes new keys, and the G before it. A key added at time t therefore
// tests present at every moment up to t+T, and is forgotten (tests absent,
// but for false positives) from t+(G+1)d on — from t+T+T/G when G divides
// T: as soon as the clock enters a new generation, the oldest filter is
// cleared and reused for it. Rotation is
// lazy — Add and TestAndAdd rotate as the clock says, Test skips generations
// that have expired — so an idle Window costs nothing.
//
// Each generation is sized for all of Items keys at rate Rate/2, so that
// the promise holds for any arrival pattern, bursts included: with at most
// Items keys in any period of length T (strictly, of length G·d, which is T
// when G divides T and less than G nanoseconds more otherwise), the G oldest
// live generations together hold at most Items keys, and so does the
// current one. All generations share m, k and the seed, so a key that tests
// present in one of a group of generations tests present in the OR of their
// bits, which is the filter of at most Items keys; an absent key therefore
// tests present with probability at most Rate/2 + Rate/2 = Rate. This costs
// memory: (G+1) × EstimateBlocked(Items, Rate/2), 57.5 bits per key per
// window at 1% with G = 4 (23.0 with G = 1, 34.5 with G = 2;
// docs/filters.md). A window sized for Items/G keys a generation would need
// a third of that but breaks its rate as soon as keys come in bursts (43%
// at Rate 1% when all Items arrive at once).
//
// Windows written by versions before this sizing keep the generation size
// recorded in their file when read (the format stores m and k): they answer
// exactly as before and meet Rate only for keys spread evenly over time.
//
// A Window uses a clock (WindowConfig.Clock, SetClock), so that tests can
// move time by hand. If the clock goes backwards, the filter acts as if it
// stood still: keys are never forgotten early.
//
// The zero Window is not usable: make one with NewWindow or NewWindowWith,
// or read one from a file. It tests every key absent and Add panics with
// ErrZero (see the package documentation).
//
// # Concurrency
//
// Test and TestString only read and may run concurrently with each other.
// Add, TestAndAdd and every other method may rotate generations and must run
// alone (hold a sync.Mutex, or the write side of a sync.RWMutex whose read
// side the Tests take).
type Window struct {
	gens   []*Blocked // ring of G+1 filters; gens[s mod (G+1)] holds generation s, for cur−G ≤ s ≤ cur
	cur    int64      // the newest generation, the one Add writes to
	g      int        // G
	window time.Duration
	d      int64 // generation length in nanoseconds
	params Params
	clock  func() time.Time
}

// NewWindow returns an empty Window remembering keys for period, sized for n
// keys per period at false-positive rate p, with 4 generations and the
// system clock.
func NewWindow(period time.Duration, n uint64, p float64) (*Window, error) {
	return NewWindowWith(WindowConfig{Window: period, Items: n, Rate: p})
}

// NewWindowWith returns an empty Window configured by c.
func NewWindowWith(c WindowConfig) (*Window, error) {
	if c.Generations == 0 {
		c.Generations = DefaultGenerations
	}
	switch {
	case c.Window <= 0:
		return nil, fmt.Errorf("%w: window %v is not positive", ErrInvalidParams, c.Window)
	case c.Generations < 1 || c.Generations > MaxGenerations:
		return nil, fmt.Errorf("%w: %d generations, want 1 to %d", ErrInvalidParams, c.Generations, MaxGenerations)
	}
	if err := checkRate(c.Rate); err != nil {
		return nil, err
	}
	p := windowGeneration(c.Items, c.Rate)
	if p.M == 0 || p.M > MaxBits {
		return nil, fmt.Errorf("%w: %d items a window at rate %g need more than %d bits a generation", ErrInvalidParams, c.Items, c.Rate, uint64(MaxBits))
	}
	return newWindowSized(c, p)
}

// windowGeneration returns the size of each generation of a window for
// items keys per period at rate: the filter of all items keys at rate/2
// (see Window).
func windowGeneration(items uint64, rate float64) Params {
	p := EstimateBlocked(items, generation.Rate(rate))
	p.Hash = HashXXH3 // a window's only hash id
	return p
}

// newWindowSized returns an empty window configured by c whose generations
// have p's m and k; c is checked by the caller.
func newWindowSized(c WindowConfig, p Params) (*Window, error) {
	g := uint64(c.Generations)
	p.N, p.P, p.Seed, p.Hash = c.Items, c.Rate, c.Seed, HashXXH3
	p, err := p.validate(true)
	if err != nil {
		return nil, err
	}
	if p.M > MaxBits/(g+1) {
		return nil, fmt.Errorf("%w: %d generations of %d bits are above the limit of %d bits", ErrInvalidParams, g+1, p.M, uint64(MaxBits))
	}
	w := newWindow(c.Window, c.Generations, p)
	w.SetClock(c.Clock)
	w.cur = w.slotAt(w.clock())
	for i := range w.gens {
		w.gens[i] = &Blocked{words: alignedWords(p.M / BlockBits * 8), blocks: p.M / BlockBits, params: p}
	}
	return w, nil
}

// newWindow returns a window without filters or slots.
func newWindow(period time.Duration, g int, p Params) *Window {
	return &Window{
		gens:   make([]*Blocked, g+1),
		g:      g,
		window: period,
		d:      generation.Length(period, g),
		params: p,
		clock:  time.Now,
	}
}

// SetClock makes the window read the time from clock (time.Now if nil). A
// Window read from a file uses time.Now until told otherwise.
func (w *Window) SetClock(clock func() time.Time) {
	if clock == nil {
		clock = time.Now
	}
	w.clock = clock
}

// Config returns the window's configuration.
func (w *Window) Config() WindowConfig {
	return WindowConfig{
		Window:      w.window,
		Items:       w.params.N,
		Rate:        w.params.P,
		Generations: w.g,
		Clock:       w.clock,
		Seed:        w.params.Seed,
	}
}

// bits returns the total size of the generations in bits.
func (w *Window) bits() uint64 { return w.params.M * uint64(len(w.gens)) }

// slotAt returns the generation that time t falls in: ⌊t/d⌋, t in Unix
// nanoseconds.
func (w *Window) slotAt(t time.Time) int64 { return generation.At(t, w.d) }

// ring returns the index in gens of generation s.
func (w *Window) ring(s int64) int { return generation.Slot(s, len(w.gens)) }

// now returns the current generation as the clock tells it, never going
// back before w.cur.
func (w *Window) now() int64 { return max(w.slotAt(w.clock()), w.cur) }

// rotate makes the current generation the clock's, clearing the filters of
// the generations that expire.
func (w *Window) rotate() {
	if len(w.gens) == 0 {
		panicZero("Window")
	}
	now := w.now()
	if now == w.cur {
		return
	}
	lo, hi := generation.Expiring(w.cur, now, w.g)
	for s := lo; s <= hi; s++ {
		w.gens[w.ring(s)].Reset()
	}
	w.cur = now
}

// Add inserts key into the current generation.
func (w *Window) Add(key []byte) {
	lo, hi := hashBytes(key, w.params.Seed)
	w.rotate()
	w.gens[w.ring(w.cur)].add(lo, hi)
}

// AddString is Add for a string key.
func (w *Window) AddString(key string) {
	lo, hi := hashString(key, w.params.Seed)
	w.rotate()
	w.gens[w.ring(w.cur)].add(lo, hi)
}

// Test reports whether key may have been added within the window. False
// means it certainly was not (or was added long enough ago to be
// forgotten); true means it probably was.
func (w *Window) Test(key []byte) bool {
	lo, hi := hashBytes(key, w.params.Seed)
	return w.test(lo, hi)
}

// TestString is Test for a string key, without copying it.
func (w *Window) TestString(key string) bool {
	lo, hi := hashString(key, w.params.Seed)
	return w.test(lo, hi)
}

// TestAndAdd inserts key and reports whether it tested present before.
// Either way the key is remembered for a full window from now.
func (w *Window) TestAndAdd(key []byte) bool {
	lo, hi := hashBytes(key, w.params.Seed)
	return w.testAndAdd(lo, hi)
}

// TestAndAddString is TestAndAdd for a string key.
func (w *Window) TestAndAddString(key string) bool {
	lo, hi := hashString(key, w.params.Seed)
	return w.testAndAdd(lo, hi)
}

func (w *Window) testAndAdd(lo, hi uint64) bool {
	w.rotate()
	present := w.test(lo, hi)
	w.gens[w.ring(w.cur)].add(lo, hi)
	return present
}

// test checks the live generations, newest first. Generations older than
// now−G have expired even if rotate has not cleared them yet.
func (w *Window) test(lo, hi uint64) bool {
	if len(w.gens) == 0 {
		return false // the zero Window holds nothing
	}
	oldest, newest := generation.Live(w.cur, w.slotAt(w.clock()), w.g)
	for i := newest; i >= oldest; i-- {
		if w.gens[w.ring(i)].test(lo, hi) {
			return true
		}
	}
	return false
}

// live calls fn with the filter of each generation that has not expired.
func (w *Window) live(fn func(*Blocked)) {
	if len(w.gens) == 0 {
		return
	}
	oldest, newest := generation.Live(w.cur, w.slotAt(w.clock()), w.g)
	for i := newest; i >= oldest; i-- {
		fn(w.gens[w.ring(i)])
	}
}

// Reset forgets every key.
func (w *Window) Reset() {
	for _, g := range w.gens {
		g.Reset()
	}
}

// Clone returns an independent copy of w, using the same clock.
func (w *Window) Clone() *Window {
	c := newWindow(w.window, w.g, w.params)
	c.clock, c.cur = w.clock, w.cur
	for i, g := range w.gens {
		c.gens[i] = g.Clone()
	}
	return c
}

// Equal reports whether w and v have the same configuration, generations
// and bits, so that at the same time they answer every Test alike.
func (w *Window) Equal(v *Window) bool {
	if w.window != v.window || w.g != v.g || w.params != v.params || w.cur != v.cur {
		return false
	}
	for s := w.cur - int64(w.g); s <= w.cur; s++ {
		if !w.gens[w.ring(s)].Equal(v.gens[v.ring(s)]) {
			return false
		}
	}
	return true
}

// Stats returns the window's size and fill (see Stats). Bits counts every
// generation; the rest, only those that have not expired (up to T+d back):
// ApproxCount is the count of the OR of their bits, which is the blocked
// filter of all their keys, and EstimatedFPR the chance that an absent key
// tests present in at least one of them, 1 − Π(1 − rate of generation i).
func (w *Window) Stats() Stats {
	st := Stats{Bits: w.bits(), Capacity: w.params.N}
	for range w.gens {
		st.Parts = append(st.Parts, w.params)
	}
	var union *Blocked
	var live uint64
	miss := 1.0
	w.live(func(b *Blocked) {
		set, fpr := b.fill()
		st.BitsSet += set
		live += b.params.M
		miss *= 1 - fpr
		if union == nil {
			union = b.Clone()
			return
		}
		for i, x := range b.words {
			union.words[i] |= x
		}
	})
	if union != nil {
		set, _ := union.fill()
		st.ApproxCount = union.approxCount(set)
		st.FillRatio = float64(st.BitsSet) / float64(live)
	}
	st.EstimatedFPR = 1 - miss
	return st
}

// The payload of a window (docs/filters.md): 16 bytes of configuration, the
// start time of each of the G+1 generations, oldest first, then their
// blocks in the same order.
const windowConfigSize = 16

func (w *Window) payloadLen() uint64 {
	return windowConfigSize + 8*uint64(len(w.gens)) + w.bits()/8
}

// WriteTo writes the window to w in the bloomkit file format (type 5,
// docs/filters.md), streaming. The generations' start times are saved, so
// a window read back keeps expiring keys on time.
func (w *Window) WriteTo(out io.Writer) (int64, error) {
	if len(w.gens) == 0 {
		return 0, ErrZero
	}
	cw := &format.CRCWriter{W: out}
	h := paramsHeader(TypeWindow, w.params)
	h.PayloadLen = w.payloadLen()
	if _, err := cw.Write(h.Marshal()); err != nil {
		return cw.N, fmt.Errorf("bloomkit: writing header: %w", err)
	}
	b := make([]byte, windowConfigSize+8*len(w.gens))
	binary.LittleEndian.PutUint64(b[0:], uint64(w.window))
	binary.LittleEndian.PutUint32(b[8:], uint32(w.g))
	for j := range w.gens {
		s := w.cur - int64(w.g) + int64(j)
		binary.LittleEndian.PutUint64(b[windowConfigSize+8*j:], uint64(s*w.d))
	}
	if _, err := cw.Write(b); err != nil {
		return cw.N, fmt.Errorf("bloomkit: writing payload: %w", err)
	}
	for j := range w.gens {
		if err := format.WriteWords(cw, w.gens[w.ring(w.cur-int64(w.g)+int64(j))].words); err != nil {
			return cw.N, err
		}
	}
	return cw.N, cw.WriteTrailer()
}

// ReadFrom replaces w with the window read from r, reading exactly the
// filter's bytes. The window keeps its clock (time.Now for a zero Window).
// On error w is unchanged; errors are as for Filter.ReadFrom.
func (w *Window) ReadFrom(r io.Reader) (int64, error) {
	avail, known := format.Remaining(r)
	cr := &format.CRCReader{R: r}
	h, err := format.ReadHeader(cr, TypeWindow)
	if err != nil {
		return cr.N, err
	}
	p, err := headerParams(h)
	if err != nil {
		return cr.N, err
	}
	if _, err := p.validate(true); err != nil {
		return cr.N, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if !(p.P > 0) {
		return cr.N, fmt.Errorf("%w: window with rate %v", ErrCorrupt, p.P)
	}
	// The number of generations is in the payload; the payload length must
	// be what it and m call for, which is checked once it is read.
	if h.PayloadLen < windowConfigSize {
		return cr.N, fmt.Errorf("%w: payload of %d bytes", ErrCorrupt, h.PayloadLen)
	}
	var cfg [windowConfigSize]byte
	if _, err := io.ReadFull(cr, cfg[:]); err != nil {
		return cr.N, format.Truncated(err, "payload")
	}
	period := int64(binary.LittleEndian.Uint64(cfg[0:]))
	g := binary.LittleEndian.Uint32(cfg[8:])
	switch {
	case period <= 0:
		return cr.N, fmt.Errorf("%w: window of %d ns", ErrCorrupt, period)
	case g < 1 || g > MaxGenerations:
		return cr.N, fmt.Errorf("%w: %d generations, want 1 to %d", ErrCorrupt, g, MaxGenerations)
	case binary.LittleEndian.Uint32(cfg[12:]) != 0:
		return cr.N, fmt.Errorf("%w: reserved window bytes are not zero", ErrCorrupt)
	case p.M > MaxBits/(uint64(g)+1):
		return cr.N, fmt.Errorf("%w: %d generations of %d bits, the limit is %d bits", ErrTooLarge, g+1, p.M, uint64(MaxBits))
	}
	t := newWindow(time.Duration(period), int(g), p)
	t.clock = w.clock
	if t.clock == nil {
		t.clock = time.Now
	}
	if want := t.payloadLen(); h.PayloadLen != want {
		return cr.N, fmt.Errorf("%w: payload of %d bytes, %d generations of %d bits call for %d", ErrCorrupt, h.PayloadLen, g+1, p.M, want)
	}
	if err := format.CheckAvailable(h, avail-format.HeaderSize, known); err != nil {
		return cr.N, err
	}
	starts := make([]byte, 8*len(t.gens))
	if _, err := io.ReadFull(cr, starts); err != nil {
		return cr.N, format.Truncated(err, "payload")
	}
	first := int64(binary.LittleEndian.Uint64(starts))
	if first%t.d != 0 || first/t.d > math.MaxInt64/t.d-int64(g) || first/t.d < math.MinInt64/t.d+1 {
		return cr.N, fmt.Errorf("%w: generation start %d ns is not a multiple of %d ns in range", ErrCorrupt, first, t.d)
	}
	t.cur = first/t.d + int64(g)
	for j := range t.gens {
		s := first/t.d + int64(j)
		if got := int64(binary.LittleEndian.Uint64(starts[8*j:])); got != s*t.d {
			return cr.N, fmt.Errorf("%w: generation %d starts at %d ns, want %d", ErrCorrupt, j, got, s*t.d)
		}
	}
	for j := range t.gens {
		words, err := format.ReadWords(cr, p.M/BlockBits*8, known, alignedWords)
		if err != nil {
			return cr.N, err
		}
		t.gens[t.ring(first/t.d+int64(j))] = &Blocked{words: words, blocks: p.M / BlockBits, params: p}
	}
	if err := cr.ReadTrailer(); err != nil {
		return cr.N, err
	}
	*w = *t
	return cr.N, nil
}
