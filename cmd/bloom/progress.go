package main

import (
	"flag"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// feedback holds the --progress and --quiet flags every long command has:
// a progress line redrawn on stderr while it runs and a one-line summary at
// the end, both only on a terminal unless forced.
type feedback struct {
	when  *string
	quiet *bool
}

// addFeedbackFlags defines --progress and --quiet on fs.
func addFeedbackFlags(fs *flag.FlagSet) *feedback {
	return &feedback{
		when:  fs.String("progress", "auto", "progress and a summary on stderr: `WHEN` is auto (if a terminal), always or never"),
		quiet: fs.Bool("quiet", false, "no progress and no summary (warnings and errors still print)"),
	}
}

// enabled decides whether to show progress and the summary on stderr.
func (f *feedback) enabled(stderr io.Writer) (bool, error) {
	if *f.quiet {
		return false, nil
	}
	switch *f.when {
	case "auto":
		return isTerminal(stderr), nil
	case "always":
		return true, nil
	case "never":
		return false, nil
	}
	return false, fmt.Errorf("--progress %q: want auto, always or never", *f.when)
}

// progress draws a one-line progress report on a terminal: bytes read,
// items and items per second and, when the input size is known, percent
// done and ETA. extra, when set, adds a few words (a fill ratio, drops).
type progress struct {
	w     io.Writer
	total int64         // input size in bytes; 0 when unknown
	bytes func() int64  // bytes read so far
	items *atomic.Int64 // items handled so far
	unit  string        // what items are: keys, lines, files
	extra func() string
	start time.Time
	stop  chan struct{}
	done  sync.WaitGroup
	once  sync.Once
	mu    sync.Mutex // serialises drawing with printing a warning
}

// startProgress begins redrawing every quarter second until finish is
// called. It returns nil (and its methods do nothing) when enabled is false.
func startProgress(enabled bool, w io.Writer, total int64, bytes func() int64, items *atomic.Int64, unit string, extra func() string) *progress {
	if !enabled {
		return nil
	}
	p := &progress{w: w, total: total, bytes: bytes, items: items, unit: unit, extra: extra, start: time.Now(), stop: make(chan struct{})}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.mu.Lock()
				fmt.Fprint(p.w, "\r"+p.line()+"\x1b[K")
				p.mu.Unlock()
			}
		}
	}()
	return p
}

func (p *progress) line() string {
	secs := time.Since(p.start).Seconds()
	var read int64
	if p.bytes != nil {
		read = p.bytes()
	}
	items := p.items.Load()
	s := humanBytes(uint64(read))
	if p.total > 0 {
		s += " / " + humanBytes(uint64(p.total)) + fmt.Sprintf(" (%d%%)", min(read*100/max(p.total, 1), 100))
	}
	s += fmt.Sprintf("  %s %s  %s %s/s", commas(uint64(items)), p.unit, siRate(float64(items)/max(secs, 1e-3)), p.unit)
	if p.extra != nil {
		s += "  " + p.extra()
	}
	if p.total > 0 && read > 0 && read < p.total {
		eta := time.Duration(secs * float64(p.total-read) / float64(read) * float64(time.Second))
		s += "  ETA " + eta.Round(time.Second).String()
	}
	return s
}

// printf prints a message (a warning) on its own line, clearing the
// progress line first; it works on a nil progress too.
func (p *progress) printf(format string, args ...any) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\x1b[K")
	fmt.Fprintf(p.w, format, args...)
}

// finish stops the redraws and clears the line; later calls do nothing.
func (p *progress) finish() {
	if p == nil {
		return
	}
	p.once.Do(func() {
		close(p.stop)
		p.done.Wait()
		fmt.Fprint(p.w, "\r\x1b[K")
	})
}

// siRate prints a rate as 950, 12.3K, 4.56M.
func siRate(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fK", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// seconds prints a duration for a summary: 0.42 s, 12.3 s, 3m20s.
func seconds(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return d.Round(time.Second).String()
}
