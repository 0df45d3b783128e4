package bloom

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) set(t time.Time)         { c.t = t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// epoch is an arbitrary start time, not aligned to anything.
var epoch = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)

func mustWindow(t testing.TB, c WindowConfig) *Window {
	t.Helper()
	w, err := NewWindowWith(c)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestWindowBoundaries checks the promise exactly, for keys added at many
// points within a generation: present at every moment up to t+T, absent from
// t+T+T/G on. With a single key in the window, "absent" is certain (every
// bit is 0), so the check has no statistical slack.
func TestWindowBoundaries(t *testing.T) {
	const T = time.Hour
	for _, g := range []int{1, 2, 4, 7} {
		d := (T + time.Duration(g) - 1) / time.Duration(g)
		for _, off := range []time.Duration{0, 1, d / 3, d / 2, d - 1} {
			clock := &fakeClock{}
			w := mustWindow(t, WindowConfig{Window: T, Items: 1000, Rate: 0.01, Generations: g, Clock: clock.now})
			// Put t at offset off into its generation.
			base := time.Unix(0, 0).Add(1000 * d)
			add := base.Add(off)
			clock.set(add)
			w.AddString("k")
			// Present at every probe point up to t+T, including the exact end.
			for _, at := range []time.Duration{0, 1, T / 3, T - d, T - 1, T} {
				clock.set(add.Add(at))
				if !w.TestString("k") {
					t.Fatalf("G=%d off=%v: absent at t+%v", g, off, at)
				}
			}
			// Forgotten by t+(G+1)d (t+T+T/G when G divides T), whether or
			// not an Add rotated since.
			clock.set(add.Add(time.Duration(g+1) * d))
			if w.TestString("k") || w.Stats().FillRatio != 0 || w.Stats().ApproxCount != 0 || w.Stats().EstimatedFPR != 0 {
				t.Fatalf("G=%d off=%v: still present at t+T+T/G", g, off)
			}
			w.AddString("other")
			if w.TestString("k") {
				t.Fatalf("G=%d off=%v: present after rotation at t+T+T/G", g, off)
			}
			// The first moment it is gone is the start of generation s+G+1.
			clock.set(add)
			w2 := mustWindow(t, WindowConfig{Window: T, Items: 1000, Rate: 0.01, Generations: g, Clock: clock.now})
			w2.AddString("k")
			gone := base.Add(time.Duration(g+1) * d)
			clock.set(gone.Add(-1))
			if !w2.TestString("k") {
				t.Fatalf("G=%d off=%v: gone before its generation expired", g, off)
			}
			clock.set(gone)
			if w2.TestString("k") {
				t.Fatalf("G=%d off=%v: present after its generation expired", g, off)
			}
		}
	}
}

// TestWindowNoFalseNegatives adds keys at random moments while time moves
// on at random steps, and checks against a reference of when each key was
// last added: every key added within the last T tests present; keys
// forgotten long ago test present at about the false-positive rate only.
func TestWindowNoFalseNegatives(t *testing.T) {
	const T, universe = 10 * time.Minute, 20_000
	clock := &fakeClock{t: epoch}
	w := mustWindow(t, WindowConfig{Window: T, Items: 5000, Rate: 0.01, Clock: clock.now})
	rng := rand.New(rand.NewPCG(5, 6))
	last := make(map[int]time.Time)
	var stale, stalePresent int
	for step := range 200 {
		// About 2,500 adds per T: half the planned load.
		clock.advance(time.Duration(rng.Int64N(int64(T / 10))))
		for range 125 {
			i := rng.IntN(universe)
			if rng.IntN(2) == 0 {
				w.AddString(key("win", i))
			} else {
				w.TestAndAdd([]byte(key("win", i)))
			}
			last[i] = clock.t
		}
		if step%10 != 9 {
			continue
		}
		for i, at := range last {
			age := clock.t.Sub(at)
			present := w.TestString(key("win", i))
			if age <= T && !present {
				t.Fatalf("step %d: %q added %v ago tests absent", step, key("win", i), age)
			}
			if age >= T+time.Duration(w.d) {
				stale++
				if present {
					stalePresent++
				}
			}
		}
	}
	if stale < 10_000 {
		t.Fatalf("only %d checks of forgotten keys", stale)
	}
	// Forgotten keys answer like absent ones: at most the planned rate
	// (plus noise).
	if rate := float64(stalePresent) / float64(stale); rate > 0.02 {
		t.Errorf("%d of %d forgotten keys test present (%.2f%%)", stalePresent, stale, 100*rate)
	}
	t.Logf("%d checks of forgotten keys, %d present", stale, stalePresent)
}

// TestWindowRate fills a window with its planned load spread over time and
// measures the rate over absent keys.
func TestWindowRate(t *testing.T) {
	statistical(t)
	const n, trials, p = 20_000, 300_000, 0.01
	clock := &fakeClock{t: epoch}
	w := mustWindow(t, WindowConfig{Window: time.Hour, Items: n, Rate: p, Clock: clock.now})
	// 3 windows' worth of keys, n per window, in steady state.
	for i := range 3 * n {
		clock.advance(time.Hour / n)
		w.AddString(key("rate", i))
	}
	got := 0
	for _, k := range keys("absent", 0, trials) {
		if w.TestString(k) {
			got++
		}
	}
	rate := float64(got) / trials
	// G+1 generations each hold n/G keys at rate p/(G+1): the union is at
	// most p.
	if rate > p {
		t.Errorf("measured rate %.4f%% above %.4f%%", 100*rate, 100*p)
	}
	if e := w.Stats().EstimatedFPR; math.Abs(e-rate) > 0.15*rate+0.0005 {
		t.Errorf("EstimatedFPR %g, measured %g", e, rate)
	}
	// The live generations hold the keys added since the oldest one began.
	live := 0
	for i := range 3 * n {
		if w.slotAt(epoch.Add(time.Duration(i+1)*(time.Hour/n))) >= w.cur-int64(w.g) {
			live++
		}
	}
	if a, want := float64(w.Stats().ApproxCount), float64(live); math.Abs(a-want) > 0.05*want {
		t.Errorf("ApproxCount %v, about %v keys are live", a, want)
	}
	t.Logf("measured %.4f%%, estimated %.4f%%, %d bits (%.1f bits per key per window), ApproxCount %d",
		100*rate, 100*w.Stats().EstimatedFPR, w.Stats().Bits, float64(w.Stats().Bits)/n, w.Stats().ApproxCount)
}

func TestWindowClockBackwards(t *testing.T) {
	clock := &fakeClock{t: epoch}
	w := mustWindow(t, WindowConfig{Window: time.Minute, Items: 100, Rate: 0.01, Clock: clock.now})
	w.AddString("a")
	clock.advance(-time.Hour) // the clock jumps back
	w.AddString("b")
	if !w.TestString("a") || !w.TestString("b") {
		t.Fatal("keys lost when the clock went back")
	}
	// Keys are kept at least T from the latest time the window has seen.
	clock.set(epoch.Add(time.Minute))
	if !w.TestString("a") || !w.TestString("b") {
		t.Fatal("keys forgotten early after the clock went back")
	}
	clock.set(epoch.Add(time.Minute + time.Duration(w.d)))
	if w.TestString("a") || w.TestString("b") {
		t.Fatal("keys kept after their window")
	}
}

func TestWindowLongIdle(t *testing.T) {
	clock := &fakeClock{t: epoch}
	w := mustWindow(t, WindowConfig{Window: time.Second, Items: 100, Rate: 0.01, Clock: clock.now})
	w.AddString("a")
	clock.advance(1000 * time.Hour)
	if w.TestString("a") {
		t.Error("key kept after a long idle time")
	}
	w.AddString("b")
	if w.TestString("a") || !w.TestString("b") {
		t.Error("rotation after a long idle time is wrong")
	}
	if !w.TestAndAddString("b") || w.TestAndAddString("c") {
		t.Error("TestAndAdd answers wrong")
	}
	w.Reset()
	if w.TestString("b") {
		t.Error("Clear left keys")
	}
}

// TestWindowReloadKeepsExpiring: a window saved and read back keeps each
// key for exactly as long as the original would.
func TestWindowReloadKeepsExpiring(t *testing.T) {
	const T = time.Hour
	clock := &fakeClock{t: epoch}
	w := mustWindow(t, WindowConfig{Window: T, Items: 1000, Rate: 0.001, Generations: 3, Clock: clock.now, Seed: 77})
	d := time.Duration(w.d)
	added := map[string]time.Time{}
	for i := range 10 {
		k := key("reload", i)
		w.AddString(k)
		added[k] = clock.t
		clock.advance(T / 7)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	var r Window
	r.SetClock(clock.now)
	if _, err := r.ReadFrom(&buf); err != nil {
		t.Fatal(err)
	}
	if !r.Equal(w) || r.Config().Window != T || r.Config().Generations != 3 || r.params != w.params {
		t.Fatal("the window read back differs")
	}
	// Move through the next two windows; both copies answer alike, and
	// every key is present up to its t+T and absent from t+T+d.
	for step := range 100 {
		clock.advance(T / 40)
		for k, at := range added {
			a, b := w.TestString(k), r.TestString(k)
			if a != b {
				t.Fatalf("step %d: original says %v, reloaded %v for %q", step, a, b, k)
			}
			if age := clock.t.Sub(at); age <= T && !b {
				t.Fatalf("step %d: %q added %v ago is absent after reload", step, k, age)
			} else if age >= T+d && b {
				t.Fatalf("step %d: %q added %v ago is still present after reload", step, k, age)
			}
		}
		if step%10 == 0 {
			w.AddString("tick")
			r.AddString("tick")
		}
	}
	// Read gives a Window too.
	b, _ := w.marshalBinary()
	g, err := Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	gw, ok := g.(*Window)
	if !ok {
		t.Fatalf("Read returned a %T", g)
	}
	gw.SetClock(clock.now)
	if !gw.Equal(w) || !gw.TestString("tick") {
		t.Error("Read returned another window")
	}
}

func TestWindowConfig(t *testing.T) {
	for _, c := range []WindowConfig{
		{Window: 0, Items: 10, Rate: 0.01},
		{Window: time.Second, Items: 10, Rate: 0},
		{Window: time.Second, Items: 10, Rate: 0.01, Generations: -1},
		{Window: time.Second, Items: 10, Rate: 0.01, Generations: MaxGenerations + 1},
		{Window: time.Second, Items: math.MaxUint64 / 2, Rate: 0.01},
	} {
		if _, err := NewWindowWith(c); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("%+v: err = %v", c, err)
		}
	}
	w, err := NewWindow(time.Minute, 1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	c := w.Config()
	if c.Generations != DefaultGenerations || c.Window != time.Minute || c.Items != 1000 || c.Rate != 0.01 {
		t.Errorf("Config() = %+v", c)
	}
	// Each generation holds all Items keys at Rate/2.
	if want := EstimateBlocked(1000, 0.005); w.params.M != want.M || w.params.K != want.K {
		t.Errorf("generation params %+v, want %+v", w.params, want)
	}
	if w.Stats().Bits != 5*w.params.M {
		t.Errorf("Bits() = %d", w.Stats().Bits)
	}
	w.AddString("now") // with the system clock
	if !w.TestString("now") {
		t.Error("key lost with the system clock")
	}
	// A window of T not divisible by G rounds the generation up, so keys
	// are never forgotten early.
	u := mustWindow(t, WindowConfig{Window: 10, Items: 10, Rate: 0.1, Generations: 3})
	if time.Duration(u.d) != 4 {
		t.Errorf("generation length %v for T=10ns, G=3", time.Duration(u.d))
	}
}

// TestWindowBursts checks the rate promise for arrivals that are not spread
// evenly: at most Items keys within any period of length Window, but all at
// once, in two bursts just over a window apart (so that both are live, in
// the oldest and the newest generation), or with most of each day's keys in
// an evening peak. Each case measures the rate over absent keys right after
// the keys arrived, when it is highest, and allows 4 standard deviations of
// sampling noise above Rate. Windows sized for Items/G keys a generation
// (before this test) measured 43%, 68% and 40% at Rate 1%.
func TestWindowBursts(t *testing.T) {
	statistical(t)
	const items = 20_000
	for _, p := range []float64{0.01, 0.001} {
		probes := int(200 / p) // 200 expected false positives at rate p
		if probes > 200_000 {
			probes = 200_000
		}
		bound := p + 4*math.Sqrt(p/float64(probes))
		// measure returns the rate over absent keys, fresh ones each time.
		round := 0
		measure := func(w *Window) float64 {
			round++
			got := 0
			for i := range probes {
				if w.TestString(key(fmt.Sprintf("absent-%d", round), i)) {
					got++
				}
			}
			return float64(got) / float64(probes)
		}
		check := func(name string, rate float64, w *Window) {
			t.Helper()
			if rate > bound {
				t.Errorf("p=%g %s: measured rate %.4f%% above %.4f%% (Rate %.4f%%), %.1f bits per key per window",
					p, name, 100*rate, 100*bound, 100*p, float64(w.Stats().Bits)/items)
			} else {
				t.Logf("p=%g %s: measured rate %.4f%% (Rate %.4f%%), EstimatedFPR %.4f%%", p, name, 100*rate, 100*p, 100*w.Stats().EstimatedFPR)
			}
		}

		t.Run(fmt.Sprintf("p=%g/at-once", p), func(t *testing.T) {
			clock := &fakeClock{t: epoch}
			w := mustWindow(t, WindowConfig{Window: time.Hour, Items: items, Rate: p, Clock: clock.now})
			for _, k := range keys("once", 0, items) {
				w.AddString(k)
			}
			check("all Items keys at one instant", measure(w), w)
		})

		t.Run(fmt.Sprintf("p=%g/two-bursts", p), func(t *testing.T) {
			// d = 15 min; the first burst at the start of a generation, the
			// second just over an hour later, at the end of the generation
			// four after it: both are live together.
			start := time.Unix(0, 0).Add(1000 * time.Hour)
			clock := &fakeClock{t: start.Add(time.Second)}
			w := mustWindow(t, WindowConfig{Window: time.Hour, Items: items, Rate: p, Clock: clock.now})
			for _, k := range keys("first", 0, items) {
				w.AddString(k)
			}
			clock.set(start.Add(time.Hour + 14*time.Minute))
			for _, k := range keys("second", 0, items) {
				w.AddString(k)
			}
			if !w.TestString(key("first", 0)) || !w.TestString(key("second", 0)) {
				t.Fatal("a burst is not live")
			}
			check("two bursts of Items keys, 74 minutes apart", measure(w), w)
		})

		t.Run(fmt.Sprintf("p=%g/evening-peak", p), func(t *testing.T) {
			// A day's Items keys: 70% between 18:00 and 21:00, the rest
			// spread over the day, the same every day, so that any 24 h
			// holds Items keys. Measured after each evening's peak.
			day := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
			clock := &fakeClock{t: day}
			w := mustWindow(t, WindowConfig{Window: 24 * time.Hour, Items: items, Rate: p, Clock: clock.now})
			peak, rest := items*7/10, items-items*7/10
			worst := 0.0
			for d := range 3 {
				base := day.Add(time.Duration(d) * 24 * time.Hour)
				type arrival struct {
					at time.Duration
					k  string
				}
				var as []arrival
				for i := range peak {
					as = append(as, arrival{18*time.Hour + time.Duration(i)*(3*time.Hour/time.Duration(peak)), key(fmt.Sprintf("peak-%d", d), i)})
				}
				for i := range rest {
					as = append(as, arrival{time.Duration(i) * (24 * time.Hour / time.Duration(rest)), key(fmt.Sprintf("rest-%d", d), i)})
				}
				sort.Slice(as, func(i, j int) bool { return as[i].at < as[j].at })
				measured := false
				for _, a := range as {
					if !measured && a.at >= 21*time.Hour {
						worst = max(worst, measure(w)) // right after the peak
						measured = true
					}
					clock.set(base.Add(a.at))
					w.AddString(a.k)
				}
			}
			check("70% of each day's Items keys in a 3-hour evening peak", worst, w)
		})
	}
}
