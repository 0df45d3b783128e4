//go:build !amd64

package bloom

func prefetch(*uint64) {}

const hasPrefetch = false
