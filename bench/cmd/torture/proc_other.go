//go:build !linux

package main

import "os/exec"

// setDeathSignal does nothing outside Linux: the deferred cleanup stops the
// server on every ordinary exit.
func setDeathSignal(cmd *exec.Cmd) {}
