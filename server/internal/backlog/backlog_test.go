package backlog

import (
	"bytes"
	"math/rand"
	"testing"
	"time"
)

// The bytes read back are the bytes appended, across block boundaries,
// from any position still held; history beyond Keep is trimmed unless a
// reader needs it.
func TestReadBackAndTrim(t *testing.T) {
	b := New(5, 3*blockSize)
	var all []byte
	rng := rand.New(rand.NewSource(1))
	r, _ := b.NewReader(5, Limits{})
	for i := 0; i < 2000; i++ {
		p := make([]byte, rng.Intn(900))
		rng.Read(p)
		all = append(all, p...)
		b.Append(p)
	}
	if b.End() != 5+int64(len(all)) {
		t.Fatalf("end %d, want %d", b.End(), 5+len(all))
	}
	if b.First() != 5 {
		t.Fatalf("a reader at 5 must pin the history: first %d", b.First())
	}
	got := make([]byte, 0, len(all))
	buf := make([]byte, 7777)
	for {
		n, err := r.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, all) {
		t.Fatal("read back differs from what was appended")
	}
	r.Close()
	if held := b.End() - b.First(); held < 3*blockSize || held > 4*blockSize {
		t.Fatalf("after the reader left, %d bytes held, want Keep..Keep+block", held)
	}
	if _, ok := b.NewReader(b.First()-1, Limits{}); ok {
		t.Fatal("a reader before the history was accepted")
	}
	r2, ok := b.NewReader(b.First()+10, Limits{})
	if !ok {
		t.Fatal("a reader inside the history was refused")
	}
	n, _ := r2.Read(buf[:100])
	off := int(b.First() + 10 - 5)
	if !bytes.Equal(buf[:n], all[off:off+100]) {
		t.Fatal("read from the middle of the history differs")
	}
}

// A reader that does not read is dropped at its hard limit; the buffer
// does not grow past it for that reader.
func TestHardLimitDropsReader(t *testing.T) {
	b := New(0, blockSize)
	r, _ := b.NewReader(0, Limits{Hard: 4 * blockSize})
	p := make([]byte, 1000)
	for i := 0; i < 2000; i++ {
		b.Append(p)
	}
	if _, err := r.Read(p); err != ErrTooSlow {
		t.Fatalf("err %v, want ErrTooSlow", err)
	}
	if held := b.End() - b.First(); held > 2*blockSize {
		t.Fatalf("%d bytes held after the slow reader was dropped", held)
	}
}

// The soft limit drops a reader that stays behind it for the period.
func TestSoftLimit(t *testing.T) {
	b := New(0, blockSize)
	clock := time.Unix(0, 0)
	b.now = func() time.Time { return clock }
	r, _ := b.NewReader(0, Limits{Soft: 2 * blockSize, SoftFor: time.Minute})
	p := make([]byte, blockSize)
	for i := 0; i < 4; i++ {
		b.Append(p)
	}
	if _, err := r.Read(p[:1]); err != nil {
		t.Fatalf("dropped before the soft period: %v", err)
	}
	clock = clock.Add(2 * time.Minute)
	b.Append(p)
	if _, err := r.Read(p[:1]); err != ErrTooSlow {
		t.Fatalf("err %v, want ErrTooSlow after the soft period", err)
	}
}
