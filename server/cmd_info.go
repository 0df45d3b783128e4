package server

// INFO and its sections.

import (
	"fmt"
	"github.com/bloomkit/bloomkit/server/internal/acl"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkit/bloomkit/internal/version"
)

// infoDefault are the sections INFO and INFO default show (Redis leaves
// commandstats out of them); all adds commandstats; everything adds
// modules too.
var infoDefault = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules", "errorstats", "cluster", "keyspace"}

// gitSHA1 is the build's commit for INFO: 00000000 when unknown, as Redis
// prints redis_git_sha1 for a build outside git.
func gitSHA1(i version.Info) string {
	if i.Commit == "" {
		return "00000000"
	}
	return i.Commit
}

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// INFO [section ...]: sections by name (any case), or all, everything,
// default.
func cmdInfo(s *Server, c *Session, args [][]byte, r *Reply) {
	want := map[string]bool{}
	names := args[1:]
	if len(names) == 0 {
		names = [][]byte{[]byte("default")}
	}
	for _, a := range names {
		switch n := strings.ToLower(string(a)); n {
		case "default":
			for _, d := range infoDefault {
				want[d] = true
			}
		case "all", "everything":
			for _, d := range infoDefault {
				want[d] = true
			}
			want["commandstats"] = true
			want["latencystats"] = true
		default:
			want[n] = true
		}
	}
	var b strings.Builder
	section := func(name string, lines func() []string) {
		if !want[strings.ToLower(name)] {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + name + "\r\n")
		for _, l := range lines() {
			b.WriteString(l)
			b.WriteString("\r\n")
		}
	}
	section("Server", func() []string {
		uptime := int64(time.Since(s.started).Seconds())
		_, port := splitHostPort(s.Addr())
		exe, _ := os.Executable()
		return append([]string{
			"redis_version:" + RedisVersion,
			"bloomkit_version:" + buildInfo.Version,
			"bloomkit_git_sha1:" + gitSHA1(buildInfo),
			"bloomkit_git_dirty:" + boolDigit(buildInfo.Modified),
			"redis_mode:standalone",
			"os:" + runtime.GOOS + " " + runtime.GOARCH,
			"arch_bits:64",
			"multiplexing_api:epoll",
			"go_version:" + runtime.Version(),
			"process_id:" + strconv.Itoa(pid()),
			"run_id:" + s.runID,
			"tcp_port:" + port,
			"server_time_usec:" + itoa(time.Now().UnixMicro()),
			"uptime_in_seconds:" + itoa(uptime),
			"uptime_in_days:" + itoa(uptime/86400),
			"hz:10",
			"executable:" + exe,
			"config_file:" + s.configFile,
		}, s.serverInfoCompat()...)
	})
	section("Clients", func() []string {
		return append([]string{
			"connected_clients:" + itoa(s.clients.Load()),
			"cluster_connections:0",
			"maxclients:" + itoa(s.maxClients()),
			"blocked_clients:" + itoa(int64(s.blockedClients())),
			"tracking_clients:0",
			"pubsub_clients:" + itoa(s.pubsub.clients.Load()),
			"clients_in_timeout_table:0",
			"total_blocking_keys:0",
		}, clientsInfoCompat()...)
	})
	section("Memory", func() []string {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return append([]string{
			"used_memory:" + strconv.FormatUint(s.db.Used(), 10),
			"used_memory_human:" + human(s.db.Used()),
			"used_memory_rss:" + strconv.FormatUint(processRSS(ms.Sys), 10),
			"used_memory_rss_human:" + human(processRSS(ms.Sys)),
			"used_memory_go_heap:" + strconv.FormatUint(ms.HeapAlloc, 10),
			"maxmemory:" + strconv.FormatUint(s.db.Limit(), 10),
			"maxmemory_human:" + human(s.db.Limit()),
			"maxmemory_configured:" + strconv.FormatUint(s.set.maxMemory.Load(), 10),
			"maxmemory_policy:noeviction",
		}, append(s.memoryInfoExtra(processRSS(ms.Sys)), s.memoryInfoCompat(&ms, processRSS(ms.Sys))...)...)
	})
	section("Persistence", s.persistenceInfo)
	section("Stats", func() []string {
		channels, patterns := s.pubsubCounts()
		return append([]string{
			"total_connections_received:" + itoa(s.totalConns.Load()),
			"total_commands_processed:" + itoa(s.totalCmds.Load()),
			"rejected_connections:" + itoa(s.rejectedConns.Load()),
			"expired_keys:" + strconv.FormatUint(s.db.Expired(), 10),
			"evicted_keys:0",
			"total_error_replies:" + itoa(s.stats.errorsTotal.Load()),
			"total_protocol_errors:" + itoa(s.protoErrors.Load()),
			"total_slow_client_disconnects:" + itoa(s.slowClients.Load()),
			"client_output_buffer_limit_disconnections:" + itoa(s.slowSubscribers.Load()),
			"pubsub_channels:" + strconv.Itoa(channels),
			"pubsub_patterns:" + strconv.Itoa(patterns),
			"pubsubshard_channels:0",
			"acl_access_denied_auth:" + itoa(s.aclCounts[acl.DeniedAuth].Load()),
			"acl_access_denied_cmd:" + itoa(s.aclCounts[acl.DeniedCommand].Load()),
			"acl_access_denied_key:" + itoa(s.aclCounts[acl.DeniedKey].Load()),
			"acl_access_denied_channel:" + itoa(s.aclCounts[acl.DeniedChannel].Load()),
		}, append(append(s.replStatsLines(), s.statsInfoExtra()...), s.statsInfoCompat()...)...)
	})
	section("Replication", s.replicationInfo)
	section("CPU", cpuInfo)
	section("Modules", modulesInfo)
	section("Commandstats", s.stats.commandLines)
	section("Errorstats", s.stats.errorLines)
	section("Latencystats", s.latencyLines)
	section("Cluster", func() []string { return []string{"cluster_enabled:0"} })
	section("Keyspace", func() []string {
		if s.db.Len() == 0 {
			return nil
		}
		return []string{fmt.Sprintf("db0:keys=%d,expires=%d,avg_ttl=0", s.db.Len(), s.db.Expires())}
	})
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
