//go:build !amd64

package main

// prefetch does nothing on this platform: the prefetched reference then
// measures demand loads.
func prefetch(*uint64) {}
