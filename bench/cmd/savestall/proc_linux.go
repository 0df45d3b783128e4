package main

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel kill the server if this program dies
// without cleaning up (a crash, SIGKILL), so no server outlives a run.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
