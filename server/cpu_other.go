//go:build !unix

package server

// cpuInfo is INFO cpu: empty where getrusage is missing.
func cpuInfo() []string { return nil }
