package redisbloom

import (
	"testing"
	"unsafe"
)

// A server keeps one Bloom and one Link per small filter key: their sizes
// are paid once per key, so padding must not creep back in.
func TestStructSizes(t *testing.T) {
	if s := unsafe.Sizeof(Link{}); s > 80 {
		t.Errorf("Link is %d bytes, want at most 80", s)
	}
	if s := unsafe.Sizeof(Bloom{}); s > 64 {
		t.Errorf("Bloom is %d bytes, want at most 64", s)
	}
}
