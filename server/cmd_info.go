package server

// INFO and its sections.

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// INFO [section ...]
func cmdInfo(s *Server, c *Session, args [][]byte, r *Reply) {
	want := map[string]bool{}
	for _, a := range args[1:] {
		want[strings.ToLower(string(a))] = true
	}
	all := len(want) == 0 || want["all"] || want["everything"] || want["default"]
	var b strings.Builder
	section := func(name string, lines ...string) {
		if !all && !want[strings.ToLower(name)] {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + name + "\r\n")
		for _, l := range lines {
			b.WriteString(l)
			b.WriteString("\r\n")
		}
	}
	uptime := int64(time.Since(s.started).Seconds())
	host, port := splitHostPort(s.Addr())
	_ = host
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	section("Server",
		"redis_version:"+RedisVersion,
		"bloomkit_version:"+BloomkitVersion,
		"redis_mode:standalone",
		"os:"+runtime.GOOS+" "+runtime.GOARCH,
		"arch_bits:64",
		"go_version:"+runtime.Version(),
		"process_id:"+strconv.Itoa(pid()),
		"tcp_port:"+port,
		"uptime_in_seconds:"+itoa(uptime),
		"uptime_in_days:"+itoa(uptime/86400),
		"executable:bloom serve",
	)
	section("Clients",
		"connected_clients:"+itoa(s.clients.Load()),
		"maxclients:10000",
	)
	limit := s.db.limit
	section("Memory",
		"used_memory:"+strconv.FormatUint(s.db.used, 10),
		"used_memory_human:"+human(s.db.used),
		"used_memory_rss:"+strconv.FormatUint(processRSS(ms.Sys), 10),
		"used_memory_go_heap:"+strconv.FormatUint(ms.HeapAlloc, 10),
		"maxmemory:"+strconv.FormatUint(s.cfg.MaxMemory, 10),
		"maxmemory_human:"+human(s.cfg.MaxMemory),
		"maxmemory_effective:"+strconv.FormatUint(limit, 10),
		"maxmemory_policy:noeviction",
	)
	section("Persistence", s.persistenceInfo()...)
	section("Stats",
		"total_connections_received:"+itoa(s.totalConns.Load()),
		"total_commands_processed:"+itoa(s.totalCmds.Load()),
		"expired_keys:"+strconv.FormatUint(s.db.expired, 10),
	)
	section("Replication", "role:master", "connected_slaves:0")
	var expires int
	for _, e := range s.db.keys {
		if e.expireAt != 0 {
			expires++
		}
	}
	if len(s.db.keys) > 0 {
		section("Keyspace", fmt.Sprintf("db0:keys=%d,expires=%d,avg_ttl=0", len(s.db.keys), expires))
	} else {
		section("Keyspace")
	}
	r.Verbatim(b.String())
}

func human(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// processRSS is the resident set size from /proc/self/statm, or fallback.
func processRSS(fallback uint64) uint64 {
	raw, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return fallback
	}
	f := strings.Fields(string(raw))
	if len(f) < 2 {
		return fallback
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return fallback
	}
	return pages * uint64(os.Getpagesize())
}
