package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// monitoredFields are the INFO fields redis_exporter turns into metrics
// and Grafana's Redis dashboards chart (redis_exporter's metric maps and
// its Latencystats/Errorstats/Commandstats parsers): a server that lacks
// one shows an empty panel.
var monitoredFields = []string{
	"uptime_in_seconds", "process_id", "redis_version", "redis_mode", "os", "tcp_port", "run_id",
	"connected_clients", "blocked_clients", "maxclients", "tracking_clients", "clients_in_timeout_table", "pubsub_clients", "total_blocking_keys",
	"used_memory", "used_memory_rss", "used_memory_peak", "used_memory_peak_human", "used_memory_peak_perc",
	"maxmemory", "maxmemory_policy", "mem_fragmentation_ratio", "mem_fragmentation_bytes", "total_system_memory",
	"loading", "rdb_changes_since_last_save", "rdb_bgsave_in_progress", "rdb_last_save_time", "rdb_last_bgsave_status",
	"rdb_last_bgsave_time_sec", "rdb_current_bgsave_time_sec", "rdb_saves", "rdb_last_cow_size",
	"aof_enabled", "aof_rewrite_in_progress", "aof_rewrite_scheduled", "aof_last_rewrite_time_sec", "aof_last_bgrewrite_status",
	"aof_last_write_status", "aof_last_cow_size",
	"total_connections_received", "total_commands_processed", "instantaneous_ops_per_sec",
	"total_net_input_bytes", "total_net_output_bytes", "instantaneous_input_kbps", "instantaneous_output_kbps",
	"rejected_connections", "expired_keys", "evicted_keys", "keyspace_hits", "keyspace_misses",
	"latest_fork_usec", "total_forks", "total_error_replies",
	"role", "connected_slaves",
	"used_cpu_sys", "used_cpu_user",
	"cluster_enabled",
}

func infoMap(t *testing.T, c *redis.Client, sections ...string) map[string]string {
	t.Helper()
	m, err := c.InfoMap(context.Background(), sections...).Result()
	if err != nil {
		t.Fatalf("INFO %v: %v", sections, err)
	}
	out := map[string]string{}
	for _, fields := range m {
		for k, v := range fields {
			out[k] = v
		}
	}
	return out
}

func infoInt(t *testing.T, info map[string]string, field string) int64 {
	t.Helper()
	v, ok := info[field]
	if !ok {
		t.Fatalf("INFO lacks %s", field)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("INFO %s:%s is not an integer", field, v)
	}
	return n
}

// TestInfoMonitoringFields: every field the monitoring tools read is in
// INFO everything, as parsed by a real client.
func TestInfoMonitoringFields(t *testing.T) {
	s := startServer(t, Config{})
	c := newClient(t, s.Addr(), 2)
	info := infoMap(t, c, "everything")
	for _, f := range monitoredFields {
		if _, ok := info[f]; !ok {
			t.Errorf("INFO everything lacks %s", f)
		}
	}
	for _, f := range []string{"mem_fragmentation_ratio", "instantaneous_input_kbps", "instantaneous_output_kbps"} {
		if _, err := strconv.ParseFloat(info[f], 64); err != nil {
			t.Errorf("%s:%s is not a number", f, info[f])
		}
	}
	if p := info["used_memory_peak_perc"]; !strings.HasSuffix(p, "%") {
		t.Errorf("used_memory_peak_perc:%s has no %%", p)
	}
}

// TestInfoCountersMove: the counters move by what the commands did, as
// Redis counts: read commands' lookups are hits or misses, BF.ADD's and
// SET's are neither (TestKeyspaceHitsLikeRedis has the writes that
// count); traffic, the rate, the memory peak, the snapshot
// pause and the latency percentiles of commands that ran.
func TestInfoCountersMove(t *testing.T) {
	s := startServer(t, Config{})
	ctx := context.Background()
	c := newClient(t, s.Addr(), 2)
	must := func(err error) {
		t.Helper()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
	}
	before := infoMap(t, c, "stats")
	must(c.BFAdd(ctx, "f", "a").Err())    // write: no hit, no miss
	must(c.BFExists(ctx, "f", "a").Err()) // hit
	must(c.BFExists(ctx, "nof", "a").Err())
	must(c.Do(ctx, "CF.EXISTS", "nocf", "a").Err()) // miss (ERR not found... is not an error for CF.EXISTS)
	must(c.Get(ctx, "nostring").Err())              // miss
	must(c.Set(ctx, "s", "v", 0).Err())             // write
	must(c.MGet(ctx, "s", "f", "nothing").Err())    // hit, hit (WRONGTYPE is nil in MGET), miss
	must(c.Exists(ctx, "s", "zz").Err())            // hit, miss
	after := infoMap(t, c, "stats")
	if d := infoInt(t, after, "keyspace_hits") - infoInt(t, before, "keyspace_hits"); d != 4 {
		t.Errorf("keyspace_hits moved by %d, want 4", d)
	}
	if d := infoInt(t, after, "keyspace_misses") - infoInt(t, before, "keyspace_misses"); d != 5 {
		t.Errorf("keyspace_misses moved by %d, want 5", d)
	}
	// The bytes of the commands above, sent and answered.
	if d := infoInt(t, after, "total_net_input_bytes") - infoInt(t, before, "total_net_input_bytes"); d < 150 {
		t.Errorf("total_net_input_bytes moved by %d, want at least 150", d)
	}
	if d := infoInt(t, after, "total_net_output_bytes") - infoInt(t, before, "total_net_output_bytes"); d < 400 {
		// the first INFO stats reply alone is over 400 bytes
		t.Errorf("total_net_output_bytes moved by %d, want at least 400", d)
	}

	// instantaneous_ops_per_sec: the mean rate of the last 1.6 s.
	deadline := time.Now().Add(3 * time.Second)
	ops := int64(0)
	for time.Now().Before(deadline) && ops == 0 {
		p := c.Pipeline()
		for i := 0; i < 200; i++ {
			p.BFExists(ctx, "f", "a")
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		ops = infoInt(t, infoMap(t, c, "stats"), "instantaneous_ops_per_sec")
	}
	if ops == 0 {
		t.Error("instantaneous_ops_per_sec stayed 0 under load")
	}

	// used_memory_peak keeps a filter's size after it is gone.
	must(c.Do(ctx, "BF.RESERVE", "big", "0.001", "1000000").Err())
	mem := infoMap(t, c, "memory")
	used := infoInt(t, mem, "used_memory")
	must(c.Del(ctx, "big").Err())
	mem = infoMap(t, c, "memory")
	if peak := infoInt(t, mem, "used_memory_peak"); peak < used || used < 1<<20 {
		t.Errorf("used_memory_peak %d after a filter of %d bytes was deleted", peak, used)
	}

	// A snapshot's start pause.
	must(c.Save(ctx).Err())
	if n := infoInt(t, infoMap(t, c, "stats"), "total_forks"); n < 1 {
		t.Errorf("total_forks %d after SAVE", n)
	}

	// latencystats: the commands that ran, and only those.
	lat := infoMap(t, c, "latencystats")
	v, ok := lat["latency_percentiles_usec_bf.exists"]
	if !ok {
		t.Fatalf("no latencystats for bf.exists: %v", lat)
	}
	var p50, p99, p999 float64
	if _, err := fmt.Sscanf(v, "p50=%f,p99=%f,p99.9=%f", &p50, &p99, &p999); err != nil || p50 <= 0 || p50 > p99 || p99 > p999 {
		t.Errorf("latency_percentiles_usec_bf.exists:%s", v)
	}
	if _, ok := lat["latency_percentiles_usec_cf.add"]; ok {
		t.Error("latencystats for cf.add, which never ran")
	}
	must(c.ConfigSet(ctx, "latency-tracking-info-percentiles", "90").Err())
	lat = infoMap(t, c, "latencystats")
	if v := lat["latency_percentiles_usec_bf.exists"]; !strings.HasPrefix(v, "p90=") || strings.Contains(v, ",") {
		t.Errorf("with percentiles 90: %s", v)
	}

	// CONFIG RESETSTAT starts the counters again.
	must(c.ConfigResetStat(ctx).Err())
	after = infoMap(t, c, "stats")
	if infoInt(t, after, "keyspace_hits") != 0 || infoInt(t, after, "keyspace_misses") != 0 {
		t.Errorf("after RESETSTAT: hits %s misses %s", after["keyspace_hits"], after["keyspace_misses"])
	}
	if n := infoInt(t, after, "total_net_input_bytes"); n > 200 {
		t.Errorf("after RESETSTAT: total_net_input_bytes %d", n)
	}
	if _, ok := infoMap(t, c, "latencystats")["latency_percentiles_usec_bf.exists"]; ok {
		t.Error("latencystats of bf.exists survived RESETSTAT")
	}
}

// slowCommand runs an MSET of n keys: a command that takes milliseconds.
func slowCommand(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	args := make([]any, 0, 2*n)
	for i := 0; i < n; i++ {
		args = append(args, "slow:"+strconv.Itoa(i), "v")
	}
	if err := c.MSet(context.Background(), args...).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestLatencyMonitor: LATENCY records nothing with the threshold at 0
// (the default), and a command over the threshold once it is set.
func TestLatencyMonitor(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	ctx := context.Background()
	c := newClient(t, s.Addr(), 2)
	rc := dialRaw(t, s.Addr())
	if got := rc.do("CONFIG", "GET", "latency-monitor-threshold"); got != `{"latency-monitor-threshold":"0"}` && got != `["latency-monitor-threshold" "0"]` {
		t.Errorf("default threshold: %s", got)
	}
	slowCommand(t, c, 100000)
	if got := rc.do("LATENCY", "LATEST"); got != "[]" {
		t.Errorf("LATENCY LATEST with the monitor off: %s", got)
	}
	if !strings.Contains(rc.do("LATENCY", "DOCTOR"), "disabled") {
		t.Error("LATENCY DOCTOR does not say the monitor is off")
	}
	if got := rc.do("CONFIG", "SET", "latency-monitor-threshold", "1"); got != "+OK" {
		t.Fatal(got)
	}
	slowCommand(t, c, 100000)
	res, err := c.Do(ctx, "LATENCY", "LATEST").Slice()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range res {
		ev := e.([]any)
		if ev[0] == "command" {
			found = true
			if last, worst := ev[2].(int64), ev[3].(int64); last < 1 || worst < last {
				t.Errorf("command event: last %d ms, worst %d ms", last, worst)
			}
			if at := ev[1].(int64); time.Since(time.Unix(at, 0)) > time.Minute {
				t.Errorf("command event at %d", at)
			}
		}
	}
	if !found {
		t.Fatalf("LATENCY LATEST after a slow MSET: %v", res)
	}
	hist, err := c.Do(ctx, "LATENCY", "HISTORY", "command").Slice()
	if err != nil || len(hist) == 0 {
		t.Fatalf("LATENCY HISTORY command: %v %v", hist, err)
	}
	if !strings.Contains(rc.do("LATENCY", "DOCTOR"), "1. command") {
		t.Error("LATENCY DOCTOR does not list the command event")
	}
	if got := rc.do("LATENCY", "RESET", "nosuchevent"); got != ":0" {
		t.Errorf("LATENCY RESET nosuchevent: %s", got)
	}
	if got := rc.do("LATENCY", "RESET"); got == ":0" {
		t.Errorf("LATENCY RESET: %s", got)
	}
	if got := rc.do("LATENCY", "LATEST"); got != "[]" {
		t.Errorf("LATENCY LATEST after RESET: %s", got)
	}
	if got := rc.do("LATENCY", "NOPE"); got != "-ERR unknown subcommand 'NOPE'. Try LATENCY HELP." {
		t.Errorf("LATENCY NOPE: %s", got)
	}
	if got := rc.do("LATENCY", "HISTORY"); !strings.HasPrefix(got, "-ERR wrong number of arguments") {
		t.Errorf("LATENCY HISTORY: %s", got)
	}
	// LATENCY HISTOGRAM, the reply redis_exporter reads.
	h, err := c.Do(ctx, "LATENCY", "HISTOGRAM", "mset", "nosuchcommand").Result()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := h.(map[any]any)
	if !ok {
		// RESP2: a flat array
		arr := h.([]any)
		if len(arr) != 2 || arr[0] != "mset" {
			t.Fatalf("LATENCY HISTOGRAM mset: %v", h)
		}
		d := arr[1].([]any)
		if d[0] != "calls" || d[1].(int64) != 2 || d[2] != "histogram_usec" || len(d[3].([]any)) == 0 {
			t.Errorf("LATENCY HISTOGRAM mset: %v", d)
		}
	} else if len(m) != 1 {
		t.Errorf("LATENCY HISTOGRAM mset: %v", m)
	}
}

// TestLatencyHistogramBuckets: each value falls in a bucket whose range
// holds it, within 1% (two significant digits, as Redis's).
func TestLatencyHistogramBuckets(t *testing.T) {
	prevUpper := int64(0)
	for i := 1; prevUpper < histMax; i++ {
		u := histUpper(i)
		if u <= prevUpper {
			t.Fatalf("bucket %d ends at %d, not after %d", i, u, prevUpper)
		}
		if histIndex(prevUpper+1) != i || histIndex(min(u, histMax)) != i || i >= histLen {
			t.Fatalf("bucket %d = [%d, %d], but index(%d)=%d index(%d)=%d", i, prevUpper+1, u, prevUpper+1, histIndex(prevUpper+1), u, histIndex(u))
		}
		if float64(u-prevUpper) > float64(u)/100+1 {
			t.Fatalf("bucket %d = [%d, %d] is wider than 1%%", i, prevUpper+1, u)
		}
		prevUpper = u
	}
	var h latencyHist
	for v := 1; v <= 1000; v++ {
		h.record(time.Duration(v) * time.Microsecond)
	}
	for _, c := range []struct {
		p    float64
		want int64
	}{{50, 500_000}, {99, 990_000}, {99.9, 999_000}, {100, 1_000_000}} {
		got := h.percentile(c.p)
		if got < c.want || float64(got) > float64(c.want)*1.01 {
			t.Errorf("p%v = %d ns, want %d within 1%%", c.p, got, c.want)
		}
	}
}

// TestMetricsBounded: an idle server exports no series for commands that
// never ran, and no per-key series unless MetricsKeys asks, then for at
// most that many keys, the same ones each time; writes refused are
// counted by reason.
func TestMetricsBounded(t *testing.T) {
	scrape := func(s *Server) string {
		t.Helper()
		invalidateFilterStats(s)
		resp, err := http.Get("http://" + s.MetricsAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	series := func(body, prefix string) []string {
		var out []string
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, prefix) {
				out = append(out, l)
			}
		}
		return out
	}
	s := startServer(t, Config{NoPersistence: true, MetricsAddr: "127.0.0.1:0", MaxMemory: 2 << 20})
	rc := dialRaw(t, s.Addr())
	for i := 0; i < 5; i++ {
		rc.do("BF.ADD", "k"+strconv.Itoa(i), "x")
	}
	body := scrape(s)
	if got := series(body, "bloomkit_filter_"); len(got) != 0 {
		t.Errorf("per-key series without MetricsKeys: %v", got)
	}
	if got := series(body, `bloomkit_command_duration_seconds_bucket{cmd="cf.add"`); len(got) != 0 {
		t.Errorf("a histogram for cf.add, which never ran: %v", got)
	}
	if got := series(body, `bloomkit_command_duration_seconds_count{cmd="bf.add"}`); len(got) != 1 || !strings.HasSuffix(got[0], " 5") {
		t.Errorf("bf.add's histogram: %v", got)
	}
	if n := len(series(body, "bloomkit_")) + len(series(body, "# ")); n > 200 {
		t.Errorf("%d lines of bloomkit_ series on a server with 5 keys", n)
	}
	// Over maxmemory: refused, counted.
	if got := rc.do("BF.RESERVE", "huge", "0.001", "100000000"); !strings.HasPrefix(got, "-ERR Insufficient memory") {
		t.Fatalf("BF.RESERVE over maxmemory: %s", got)
	}
	if got := series(scrape(s), `bloomkit_writes_refused_total{reason="maxmemory"}`); len(got) != 1 || !strings.HasSuffix(got[0], " 1") {
		t.Errorf("writes refused by maxmemory: %v", got)
	}

	s2 := startServer(t, Config{NoPersistence: true, MetricsAddr: "127.0.0.1:0", MetricsKeys: 3})
	rc2 := dialRaw(t, s2.Addr())
	for i := 0; i < 10; i++ {
		rc2.do("BF.ADD", "k"+strconv.Itoa(i), "x")
	}
	first := series(scrape(s2), "bloomkit_filter_items")
	if len(first) != 3 {
		t.Fatalf("MetricsKeys 3: %d keys exported: %v", len(first), first)
	}
	if again := series(scrape(s2), "bloomkit_filter_items"); strings.Join(again, "\n") != strings.Join(first, "\n") {
		t.Errorf("the keys exported changed between scrapes: %v then %v", first, again)
	}
	if _, err := New(Config{NoPersistence: true, MetricsKeys: MaxMetricsKeys + 1}); err == nil {
		t.Errorf("MetricsKeys %d accepted", MaxMetricsKeys+1)
	}
}
