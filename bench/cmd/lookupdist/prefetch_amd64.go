package main

// prefetch asks the CPU to start loading the cache line at addr (the
// instruction bloomkit's batch methods use).
//
//go:noescape
func prefetch(addr *uint64)
