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

// memBreakdown is Redis's memory breakdown as this server knows it, for
// INFO memory and MEMORY STATS: overhead is the per-key bookkeeping and
// the MULTI queues, dataset the rest of used_memory; the allocator fields
// are the Go heap's (allocated: live objects, active: spans in use,
// resident: obtained from the system and not returned).
type memBreakdown struct {
	used, peak, overhead, dataset, keys uint64
	allocated, active, resident, rss    uint64
	backlog, aofBuf                     uint64
}

func (s *Server) memBreakdown(ms *runtime.MemStats, rss uint64) memBreakdown {
	m := memBreakdown{used: s.db.Used(), keys: uint64(s.db.Len()), rss: rss}
	s.notePeak(m.used)
	m.peak = s.peakMem.Load()
	m.overhead = min(m.keys*keyspace.KeyOverhead+uint64(max(s.queuedBytes.Load(), 0)), m.used)
	m.dataset = m.used - m.overhead
	m.allocated, m.active, m.resident = ms.HeapAlloc, ms.HeapInuse, ms.HeapSys-ms.HeapReleased
	if b := s.repl.backlog.Load(); b != nil {
		m.backlog = uint64(b.End() - b.First())
	}
	if lg := s.appendLog(); lg != nil {
		m.aofBuf = uint64(lg.Unsynced())
	}
	return m
}

// ratio is a/b (0 for b 0).
func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func (s *Server) memoryInfoCompat(ms *runtime.MemStats, rss uint64) []string {
	m := s.memBreakdown(ms, rss)
	f2 := func(a, b uint64) string { return strconv.FormatFloat(ratio(a, b), 'f', 2, 64) }
	diff := func(a, b uint64) string { return strconv.FormatInt(int64(a)-int64(b), 10) }
	u := func(n uint64) string { return strconv.FormatUint(n, 10) }
	return []string{
		"used_memory_overhead:" + u(m.overhead),
		"used_memory_startup:0",
		"used_memory_dataset:" + u(m.dataset),
		"used_memory_dataset_perc:" + strconv.FormatFloat(100*ratio(m.dataset, m.used), 'f', 2, 64) + "%",
		"allocator_allocated:" + u(m.allocated),
		"allocator_active:" + u(m.active),
		"allocator_resident:" + u(m.resident),
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
		"allocator_frag_ratio:" + f2(m.active, m.allocated),
		"allocator_frag_bytes:" + diff(m.active, m.allocated),
		"allocator_rss_ratio:" + f2(m.resident, m.active),
		"allocator_rss_bytes:" + diff(m.resident, m.active),
		"rss_overhead_ratio:" + f2(m.rss, m.resident),
		"rss_overhead_bytes:" + diff(m.rss, m.resident),
		"mem_not_counted_for_evict:0",
		"mem_replication_backlog:" + u(m.backlog),
		"mem_total_replication_buffers:" + u(m.backlog),
		"mem_clients_slaves:0",
		"mem_clients_normal:0",
		"mem_cluster_links:0",
		"mem_aof_buffer:" + u(m.aofBuf),
		"active_defrag_running:0",
	}
}

// memoryStats is MEMORY STATS: Redis 7's fields, from memBreakdown, then
// the Go runtime's own two.
func (s *Server) memoryStats(r *Reply, ms *runtime.MemStats, rss uint64) {
	m := s.memBreakdown(ms, rss)
	perKey := uint64(0)
	if m.keys > 0 {
		perKey = m.used / m.keys
	}
	// db.0 is there when the database holds keys, as Redis's db.<n>.
	if m.keys > 0 {
		r.Map(30)
	} else {
		r.Map(29)
	}
	for _, f := range []struct {
		name string
		v    uint64
	}{{"peak.allocated", m.peak}, {"total.allocated", m.used}, {"startup.allocated", 0},
		{"replication.backlog", m.backlog}, {"clients.slaves", 0}, {"clients.normal", 0}, {"cluster.links", 0},
		{"aof.buffer", m.aofBuf}, {"lua.caches", 0}, {"functions.caches", 0}} {
		r.BulkString(f.name)
		r.Uint(f.v)
	}
	if m.keys > 0 {
		r.BulkString("db.0")
		r.Map(3)
		r.BulkString("overhead.hashtable.main")
		r.Uint(m.overhead)
		r.BulkString("overhead.hashtable.expires")
		r.Uint(0)
		r.BulkString("overhead.hashtable.slot-to-keys")
		r.Uint(0)
	}
	for _, f := range []struct {
		name string
		v    uint64
	}{{"overhead.total", m.overhead}, {"keys.count", m.keys}, {"keys.bytes-per-key", perKey}, {"dataset.bytes", m.dataset}} {
		r.BulkString(f.name)
		r.Uint(f.v)
	}
	r.BulkString("dataset.percentage")
	r.Double(100 * ratio(m.dataset, m.used))
	r.BulkString("peak.percentage")
	r.Double(100 * ratio(m.used, m.peak))
	for _, f := range []struct {
		name string
		v    uint64
	}{{"allocator.allocated", m.allocated}, {"allocator.active", m.active}, {"allocator.resident", m.resident}} {
		r.BulkString(f.name)
		r.Uint(f.v)
	}
	pair := func(name string, a, b uint64) {
		r.BulkString(name + ".ratio")
		r.Double(ratio(a, b))
		r.BulkString(name + ".bytes")
		r.Int(int64(a) - int64(b))
	}
	pair("allocator-fragmentation", m.active, m.allocated)
	pair("allocator-rss", m.resident, m.active)
	pair("rss-overhead", m.rss, m.resident)
	r.BulkString("fragmentation")
	r.Double(ratio(m.rss, m.used))
	r.BulkString("fragmentation.bytes")
	r.Int(int64(m.rss) - int64(m.used))
	r.BulkString("go.heap.allocated")
	r.Uint(ms.HeapAlloc)
	r.BulkString("go.sys")
	r.Uint(ms.Sys)
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
