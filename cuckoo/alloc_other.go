//go:build !linux

package cuckoo

func adviseHugePages([]uint64) {}
