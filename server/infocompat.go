package server

// The rest of Redis 7's INFO fields: every field Redis 7.0's INFO
// everything has is here too, in the same section, so that monitoring
// written for Redis (redis_exporter, Datadog's Redis check, dashboards)
// finds each one. A field has its real value where the server has one (the
// Go runtime's heap for Redis's allocator fields, the replication backlog,
// the log's unwritten buffer); where Redis's concept does not exist here
// (Lua, functions, active defrag, client tracking, I/O threads, eviction)
// it is the value Redis shows with the feature unused: 0. docs/operations.md
// lists which are which.

import (
	"runtime"
	"strconv"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/keyspace"
)

func (s *Server) serverInfoCompat() []string {
	supervised := "no"
	if s.cfg.Supervised == "systemd" || s.cfg.Supervised == "auto" {
		supervised = "systemd"
	}
	build := gitSHA1(buildInfo)
	if len(build) > 16 {
		build = build[:16]
	}
	return []string{
		"redis_git_sha1:00000000",
		"redis_git_dirty:0",
		"redis_build_id:" + build,
		"monotonic_clock:POSIX clock_gettime",
		"atomicvar_api:c11-builtin",
		"gcc_version:0.0.0",
		"process_supervised:" + supervised,
		"configured_hz:10",
		// Redis's LRU clock: seconds, 24 bits.
		"lru_clock:" + itoa(time.Now().Unix()&(1<<24-1)),
		"io_threads_active:0",
	}
}

func clientsInfoCompat() []string {
	return []string{
		"client_recent_max_input_buffer:0",
		"client_recent_max_output_buffer:0",
	}
}

// memoryInfoCompat maps Redis's memory breakdown onto what this server
// knows: overhead is the per-key bookkeeping and the MULTI queues,
// dataset the rest of used_memory; the allocator fields are the Go heap's
// (allocated: live objects, active: spans in use, resident: obtained from
// the system and not returned).
func (s *Server) memoryInfoCompat(ms *runtime.MemStats, rss uint64) []string {
	used := s.db.Used()
	overhead := uint64(s.db.Len())*keyspace.KeyOverhead + uint64(max(s.queuedBytes.Load(), 0))
	overhead = min(overhead, used)
	dataset := used - overhead
	perc := 0.0
	if used > 0 {
		perc = float64(dataset) * 100 / float64(used)
	}
	allocated, active := ms.HeapAlloc, ms.HeapInuse
	resident := ms.HeapSys - ms.HeapReleased
	ratio := func(a, b uint64) string {
		if b == 0 {
			return "0.00"
		}
		return strconv.FormatFloat(float64(a)/float64(b), 'f', 2, 64)
	}
	diff := func(a, b uint64) string { return strconv.FormatInt(int64(a)-int64(b), 10) }
	var backlog uint64
	if b := s.repl.backlog.Load(); b != nil {
		backlog = uint64(b.End() - b.First())
	}
	var aofBuf int
	if s.aof != nil {
		aofBuf = s.aof.Unsynced()
	}
	u := func(n uint64) string { return strconv.FormatUint(n, 10) }
	return []string{
		"used_memory_overhead:" + u(overhead),
		"used_memory_startup:0",
		"used_memory_dataset:" + u(dataset),
		"used_memory_dataset_perc:" + strconv.FormatFloat(perc, 'f', 2, 64) + "%",
		"allocator_allocated:" + u(allocated),
		"allocator_active:" + u(active),
		"allocator_resident:" + u(resident),
		"used_memory_lua:0",
		"used_memory_vm_eval:0",
		"used_memory_lua_human:0B",
		"used_memory_scripts_eval:0",
		"number_of_cached_scripts:0",
		"number_of_functions:0",
		"number_of_libraries:0",
		"used_memory_vm_functions:0",
		"used_memory_vm_total:0",
		"used_memory_vm_total_human:0B",
		"used_memory_functions:0",
		"used_memory_scripts:0",
		"used_memory_scripts_human:0B",
		"allocator_frag_ratio:" + ratio(active, allocated),
		"allocator_frag_bytes:" + diff(active, allocated),
		"allocator_rss_ratio:" + ratio(resident, active),
		"allocator_rss_bytes:" + diff(resident, active),
		"rss_overhead_ratio:" + ratio(rss, resident),
		"rss_overhead_bytes:" + diff(rss, resident),
		"mem_not_counted_for_evict:0",
		"mem_replication_backlog:" + u(backlog),
		"mem_total_replication_buffers:" + u(backlog),
		"mem_clients_slaves:0",
		"mem_clients_normal:0",
		"mem_cluster_links:0",
		"mem_aof_buffer:" + strconv.Itoa(aofBuf),
		"active_defrag_running:0",
	}
}

func (s *Server) statsInfoCompat() []string {
	return []string{
		"total_net_repl_input_bytes:0",
		"total_net_repl_output_bytes:0",
		"instantaneous_input_repl_kbps:0.00",
		"instantaneous_output_repl_kbps:0.00",
		"expired_stale_perc:0.00",
		"expired_time_cap_reached_count:0",
		"expire_cycle_cpu_milliseconds:" + itoa(s.expireCycleNanos.Load()/int64(time.Millisecond)),
		"evicted_clients:0",
		"total_eviction_exceeded_time:0",
		"current_eviction_exceeded_time:0",
		"migrate_cached_sockets:0",
		"slave_expires_tracked_keys:0",
		"active_defrag_hits:0",
		"active_defrag_misses:0",
		"active_defrag_key_hits:0",
		"active_defrag_key_misses:0",
		"total_active_defrag_time:0",
		"current_active_defrag_time:0",
		"tracking_total_keys:0",
		"tracking_total_items:0",
		"tracking_total_prefixes:0",
		"unexpected_error_replies:0",
		"dump_payload_sanitizations:0",
		"total_reads_processed:0",
		"total_writes_processed:0",
		"io_threaded_reads_processed:0",
		"io_threaded_writes_processed:0",
		"reply_buffer_shrinks:0",
		"reply_buffer_expands:0",
	}
}
