//go:build unix

package server

import (
	"strconv"
	"syscall"
)

// cpuInfo is INFO cpu: the process's system and user CPU seconds.
func cpuInfo() []string {
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) != nil {
		return nil
	}
	sec := func(t syscall.Timeval) string {
		return strconv.FormatFloat(float64(t.Sec)+float64(t.Usec)/1e6, 'f', 6, 64)
	}
	return []string{
		"used_cpu_sys:" + sec(self.Stime),
		"used_cpu_user:" + sec(self.Utime),
		"used_cpu_sys_children:" + sec(children.Stime),
		"used_cpu_user_children:" + sec(children.Utime),
		// Redis's main thread does all its commands; here every
		// goroutine may: the process's time.
		"used_cpu_sys_main_thread:" + sec(self.Stime),
		"used_cpu_user_main_thread:" + sec(self.Utime),
	}
}
