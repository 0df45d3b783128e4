//go:build !unix

package redisbloom

const mmapThreshold = 1 << 62

func allocLarge(n uint64) ([]byte, error) { return nil, ErrTooLarge }

func freeLarge(b []byte) {}
