//go:build unix

package redisbloom

import "syscall"

// Large arrays are mapped outside the Go heap: they are zero-filled and
// only become resident when touched, and the garbage collector neither
// scans them nor counts them towards its heap target, so a server holding
// a 1 GB filter does not also grow its heap by up to 1 GB of garbage
// (GOGC=100). Small arrays use the Go heap.
const mmapThreshold = 1 << 20

func allocLarge(n uint64) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, ErrTooLarge
	}
	return b, nil
}

func freeLarge(b []byte) { _ = syscall.Munmap(b) }
