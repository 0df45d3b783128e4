package main

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// progress draws a one-line progress report on a terminal: bytes read, keys
// per second and, when the input size is known, percent done and ETA.
type progress struct {
	w     io.Writer
	total int64         // input size in bytes; 0 when unknown
	bytes func() int64  // bytes read so far
	keys  *atomic.Int64 // keys added so far
	start time.Time
	stop  chan struct{}
	done  sync.WaitGroup
	once  sync.Once
}

// startProgress begins redrawing every interval until finish is called. It
// returns nil (and finish does nothing) when enabled is false.
func startProgress(enabled bool, w io.Writer, total int64, bytes func() int64, keys *atomic.Int64) *progress {
	if !enabled {
		return nil
	}
	p := &progress{w: w, total: total, bytes: bytes, keys: keys, start: time.Now(), stop: make(chan struct{})}
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
				fmt.Fprint(p.w, "\r"+p.line()+"\x1b[K")
			}
		}
	}()
	return p
}

func (p *progress) line() string {
	secs := time.Since(p.start).Seconds()
	read, keys := p.bytes(), p.keys.Load()
	s := humanBytes(uint64(read))
	if p.total > 0 {
		s += " / " + humanBytes(uint64(p.total)) + fmt.Sprintf(" (%d%%)", read*100/max(p.total, 1))
	}
	s += fmt.Sprintf("  %s keys  %s keys/s", commas(uint64(keys)), siRate(float64(keys)/max(secs, 1e-3)))
	if p.total > 0 && read > 0 && read < p.total {
		eta := time.Duration(secs * float64(p.total-read) / float64(read) * float64(time.Second))
		s += "  ETA " + eta.Round(time.Second).String()
	}
	return s
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
