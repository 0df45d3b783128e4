package memlimit

import (
	"os"
	"path/filepath"
	"testing"
)

func write(t *testing.T, root, path, data string) {
	t.Helper()
	p := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

const meminfo = "MemTotal:       16000000 kB\nMemFree:        1000 kB\nMemAvailable:    8000000 kB\n"

func TestCgroupV2(t *testing.T) {
	root := t.TempDir()
	write(t, root, "proc/meminfo", meminfo)
	write(t, root, "proc/self/cgroup", "0::/kubepods/pod1/ctr\n")
	write(t, root, "sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "max\n")
	write(t, root, "sys/fs/cgroup/kubepods/pod1/ctr/memory.current", "100\n")
	write(t, root, "sys/fs/cgroup/kubepods/pod1/memory.max", "536870912\n") // the pod's 512 MiB
	write(t, root, "sys/fs/cgroup/kubepods/pod1/memory.current", "134217728\n")
	s := System{Root: root}
	lim, src, ok := s.Limit()
	if !ok || lim != 512<<20 || src != "the cgroup's memory limit" {
		t.Fatalf("Limit = %d %q %v; want 512 MiB from the cgroup", lim, src, ok)
	}
	av, _, ok := s.Available()
	if !ok || av != 384<<20 {
		t.Fatalf("Available = %d %v; want 384 MiB", av, ok)
	}
}

func TestCgroupV1(t *testing.T) {
	root := t.TempDir()
	write(t, root, "proc/meminfo", meminfo)
	write(t, root, "proc/self/cgroup", "12:cpu,cpuacct:/docker/abc\n5:memory:/docker/abc\n")
	write(t, root, "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "1073741824\n")
	write(t, root, "sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes", "0\n")
	write(t, root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n") // unlimited
	lim, src, ok := System{Root: root}.Limit()
	if !ok || lim != 1<<30 || src != "the cgroup's memory limit" {
		t.Fatalf("Limit = %d %q %v; want 1 GiB from the cgroup", lim, src, ok)
	}
}

func TestNoCgroupLimit(t *testing.T) {
	root := t.TempDir()
	write(t, root, "proc/meminfo", meminfo)
	write(t, root, "proc/self/cgroup", "0::/user.slice\n")
	write(t, root, "sys/fs/cgroup/user.slice/memory.max", "max\n")
	lim, src, ok := System{Root: root}.Limit()
	if !ok || lim != 16000000*1024 || src != "MemTotal in /proc/meminfo" {
		t.Fatalf("Limit = %d %q %v; want MemTotal", lim, src, ok)
	}
	// A cgroup limit above the machine's memory does not count.
	write(t, root, "sys/fs/cgroup/user.slice/memory.max", "99000000000000\n")
	if lim, _, _ := (System{Root: root}).Limit(); lim != 16000000*1024 {
		t.Fatalf("Limit = %d; want MemTotal", lim)
	}
}

func TestNothingReadable(t *testing.T) {
	if _, _, ok := (System{Root: t.TempDir()}).Limit(); ok {
		t.Fatal("Limit with no files: want ok=false")
	}
}

// cgroup v1: a limit on a parent cgroup holds for its children (a
// parent's 512 MiB under an unlimited child used to be ignored).
func TestCgroupV1ParentLimit(t *testing.T) {
	root := t.TempDir()
	write(t, root, "proc/meminfo", meminfo)
	write(t, root, "proc/self/cgroup", "5:memory:/kubepods/pod1/ctr\n")
	write(t, root, "sys/fs/cgroup/memory/kubepods/pod1/ctr/memory.limit_in_bytes", "9223372036854771712\n")
	write(t, root, "sys/fs/cgroup/memory/kubepods/pod1/ctr/memory.usage_in_bytes", "1000\n")
	write(t, root, "sys/fs/cgroup/memory/kubepods/pod1/memory.limit_in_bytes", "536870912\n")
	write(t, root, "sys/fs/cgroup/memory/kubepods/pod1/memory.usage_in_bytes", "134217728\n")
	write(t, root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n")
	s := System{Root: root}
	if lim, src, ok := s.Limit(); !ok || lim != 512<<20 || src != "the cgroup's memory limit" {
		t.Fatalf("Limit = %d %q %v; want the parent's 512 MiB", lim, src, ok)
	}
	if av, _, ok := s.Available(); !ok || av != 384<<20 {
		t.Fatalf("Available = %d %v; want 384 MiB", av, ok)
	}
}

// cgroup v1 inside a container: /proc/self/cgroup names the host's path,
// the mount shows the container's cgroup at its root, and the limits set
// above it are visible only as memory.stat's hierarchical_memory_limit.
func TestCgroupV1HierarchicalLimit(t *testing.T) {
	root := t.TempDir()
	write(t, root, "proc/meminfo", meminfo)
	write(t, root, "proc/self/cgroup", "5:memory:/docker/0123abcd\n")
	write(t, root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n")
	write(t, root, "sys/fs/cgroup/memory/memory.usage_in_bytes", "0\n")
	write(t, root, "sys/fs/cgroup/memory/memory.stat", "cache 0\nrss 0\nhierarchical_memory_limit 268435456\nhierarchical_memsw_limit 9223372036854771712\n")
	if lim, _, ok := (System{Root: root}).Limit(); !ok || lim != 256<<20 {
		t.Fatalf("Limit = %d %v; want the hierarchical 256 MiB", lim, ok)
	}
}
