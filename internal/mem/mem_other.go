//go:build !linux

package mem

import "errors"

func adviseHugePages([]uint64) {}

// HugeBytes reports huge-page backing on Linux only.
func HugeBytes(w []uint64) (huge, span int64, err error) { return 0, 0, errors.ErrUnsupported }
