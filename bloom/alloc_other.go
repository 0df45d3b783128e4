//go:build !linux

package bloom

func adviseHugePages([]uint64) {}
