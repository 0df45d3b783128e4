//go:build !amd64

package main

func prefetch(*uint64) {}
