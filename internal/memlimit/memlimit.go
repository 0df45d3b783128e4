// Package memlimit says how much memory this process may use: the memory
// limit of its cgroup (v2 memory.max, v1 memory.limit_in_bytes, the
// tightest of the cgroup and its ancestors) and the machine's memory from
// /proc/meminfo. The server sizes its default maxmemory from Limit; the
// command-line tools check a filter fits with Available.
package memlimit

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// System reads the files under Root ("" is the real root, "/"). Tests give
// a directory holding a fake proc/ and sys/fs/cgroup/.
type System struct {
	Root string
}

func (s System) path(p string) string {
	if s.Root == "" {
		return p
	}
	return filepath.Join(s.Root, p)
}

// Limit is the most memory the process may hold: the lower of the
// cgroup's limit and the machine's MemTotal, and where it comes from. ok
// is false when neither can be read.
func (s System) Limit() (limit uint64, source string, ok bool) {
	if v, found := s.meminfo("MemTotal:"); found {
		limit, source, ok = v, "MemTotal in /proc/meminfo", true
	}
	if lim, _, found := s.cgroup(); found && (!ok || lim < limit) {
		limit, source, ok = lim, "the cgroup's memory limit", true
	}
	return limit, source, ok
}

// Available is the memory the process can still allocate: the lower of
// the cgroup's free room (limit minus usage) and MemAvailable, and where
// it comes from. ok is false when neither can be read.
func (s System) Available() (avail uint64, source string, ok bool) {
	if v, found := s.meminfo("MemAvailable:"); found {
		avail, source, ok = v, "MemAvailable in /proc/meminfo", true
	}
	if _, room, found := s.cgroup(); found && (!ok || room < avail) {
		avail, source, ok = room, "the cgroup's memory limit", true
	}
	return avail, source, ok
}

// Total is the machine's memory (MemTotal in /proc/meminfo), whatever the
// cgroup allows; ok is false when it cannot be read.
func (s System) Total() (total uint64, ok bool) { return s.meminfo("MemTotal:") }

// meminfo reads one field of /proc/meminfo, in bytes.
func (s System) meminfo(field string) (uint64, bool) {
	f, err := os.Open(s.path("/proc/meminfo"))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == field {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			if err != nil || kb > math.MaxUint64/1024 {
				return 0, false
			}
			return kb * 1024, true
		}
	}
	return 0, false
}

// cgroup returns the tightest memory limit among this process's cgroup and
// its ancestors, and the room left under it (limit - usage) at the
// tightest point. found is false when no cgroup sets a limit ("max", or
// v1's near-2^63 "unlimited").
func (s System) cgroup() (limit, room uint64, found bool) {
	data, err := os.ReadFile(s.path("/proc/self/cgroup"))
	if err != nil {
		return 0, 0, false
	}
	limit, room = math.MaxUint64, math.MaxUint64
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var mount, limitFile, usageFile string
		v1 := false
		switch {
		case parts[0] == "0" && parts[1] == "": // cgroup v2
			mount, limitFile, usageFile = "/sys/fs/cgroup", "memory.max", "memory.current"
		case strings.Contains(","+parts[1]+",", ",memory,"): // cgroup v1
			mount, limitFile, usageFile, v1 = "/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes", true
		default:
			continue
		}
		// The cgroup and every ancestor: a limit on any of them holds
		// (a pod's, a slice's). Inside a container the path may name the
		// host's hierarchy while the mount shows the container's own
		// cgroup at its root, which the walk reaches last.
		var dirs []string
		for p := parts[2]; ; p = filepath.Dir(p) {
			dirs = append(dirs, s.path(filepath.Join(mount, p)))
			if p == "/" || p == "." {
				break
			}
		}
		if v1 {
			// v1 also states the limit in force from every ancestor,
			// including those above the mount's root that are not
			// visible: memory.stat's hierarchical_memory_limit.
			for _, d := range dirs {
				if lim, ok := statField(filepath.Join(d, "memory.stat"), "hierarchical_memory_limit"); ok && lim < 1<<60 {
					usage, _ := readUint(filepath.Join(d, usageFile))
					limit, room, found = min(limit, lim), min(room, lim-min(lim, usage)), true
				}
			}
		}
		for _, d := range dirs {
			lim, ok := readUint(filepath.Join(d, limitFile))
			if !ok || lim >= 1<<60 {
				continue
			}
			usage, _ := readUint(filepath.Join(d, usageFile))
			r := uint64(0)
			if lim > usage {
				r = lim - usage
			}
			limit, room, found = min(limit, lim), min(room, r), true
		}
	}
	return limit, room, found
}

// statField reads one "name value" line of a memory.stat file.
func statField(path, name string) (uint64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// readUint reads a file holding one number ("max" is not one).
func readUint(path string) (uint64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	return v, err == nil
}
