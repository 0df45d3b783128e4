package deploy

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/server"
	"github.com/redis/go-redis/v9"
)

// need returns the path of a program, or skips the test saying why, or
// fails it when env (set by CI) says the program is required.
func need(t *testing.T, prog, env, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(prog)
	if err == nil {
		return p
	}
	if os.Getenv(env) == "1" {
		t.Fatalf("%s is required (%s=1) but not installed: make deps installs it (Debian package %s)", prog, env, pkg)
	}
	t.Skipf("%s is not installed (Debian package %s; make deps installs it)", prog, pkg)
	return ""
}

// TestSystemdUnit checks the unit with systemd-analyze verify (any warning
// fails), its exposure score with systemd-analyze security, and that the
// password comes from a credential, never from the unit's text.
func TestSystemdUnit(t *testing.T) {
	unit := filepath.Join("systemd", "bloomkit.service")
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if !strings.Contains(text, "\nLoadCredential=requirepass:") || !strings.Contains(text, `$CREDENTIALS_DIRECTORY/requirepass`) {
		t.Error("the unit does not read the password from a credential (LoadCredential=)")
	}
	if regexp.MustCompile(`(?m)^Environment=.*(PASS|pass)`).MatchString(text) {
		t.Error("the unit puts a password in Environment=, which any user can read with systemctl show")
	}
	sa := need(t, "systemd-analyze", "BLOOMKIT_REQUIRE_SYSTEMD", "systemd")
	check := func(path string) string {
		out, err := exec.Command(sa, "verify", path).CombinedOutput()
		if err != nil {
			return err.Error() + ": " + string(out)
		}
		return string(out)
	}
	abs, _ := filepath.Abs(unit)
	if out := check(abs); strings.TrimSpace(out) != "" {
		t.Errorf("systemd-analyze verify %s:\n%s", unit, out)
	}
	// The check catches a misspelt directive.
	bad := filepath.Join(t.TempDir(), "bloomkit.service")
	os.WriteFile(bad, bytes.Replace(b, []byte("NoNewPrivileges="), []byte("NoNewPrivilege="), 1), 0o644)
	if out := check(bad); !strings.Contains(out, "NoNewPrivilege") {
		t.Errorf("a misspelt directive passed systemd-analyze verify: %q", out)
	}
	out, err := exec.Command(sa, "security", "--offline=yes", abs).CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for bloomkit.service: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Logf("systemd-analyze security --offline gave no score (%v): %.300s", err, out)
		return
	}
	if score, _ := strconv.ParseFloat(string(m[1]), 64); score > 2.0 {
		t.Errorf("exposure level %v, want at most 2.0 (systemd-analyze security --offline=yes %s)", score, unit)
	}
}

// TestPrometheusRules runs promtool check rules and promtool test rules.
func TestPrometheusRules(t *testing.T) {
	promtool := need(t, "promtool", "BLOOMKIT_REQUIRE_PROMTOOL", "prometheus")
	for _, args := range [][]string{
		{"check", "rules", "bloomkit-rules.yml"},
		{"test", "rules", "bloomkit-rules.test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// redisExporterFields are the redis_exporter metrics the rules and the
// dashboard use, with the INFO field each is made from; replication fields
// appear only on a server with replicas (or on a replica).
var redisExporterFields = map[string]string{
	"redis_up":                          "",
	"redis_commands_processed_total":    "total_commands_processed",
	"redis_keyspace_hits_total":         "keyspace_hits",
	"redis_keyspace_misses_total":       "keyspace_misses",
	"redis_net_input_bytes_total":       "total_net_input_bytes",
	"redis_net_output_bytes_total":      "total_net_output_bytes",
	"redis_connected_clients":           "connected_clients",
	"redis_errors_total":                "errorstat_",
	"redis_aof_last_write_status":       "aof_last_write_status",
	"redis_rdb_last_bgsave_status":      "rdb_last_bgsave_status",
	"redis_connected_slave_lag_seconds": "", // slaveN:...,lag=N in INFO replication
	"redis_master_link_up":              "", // master_link_status on a replica
}

// TestMetricNames checks that every metric the alert rules and the
// dashboard name exists: bloomkit_*, go_* and process_* in what a running
// server's /metrics exports, redis_* among redis_exporter's names whose
// INFO fields the server reports.
func TestMetricNames(t *testing.T) {
	s := startServer(t, server.Config{MetricsKeys: 10, MaxMemory: 1 << 20})
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
	defer c.Close()
	ctx := t.Context()
	c.Do(ctx, "BF.ADD", "urls", "a")
	c.Do(ctx, "CF.ADD", "carts", "a")
	c.Do(ctx, "BF.BOGUS")
	info, err := c.Info(ctx, "everything").Result()
	if err != nil {
		t.Fatal(err)
	}
	c.Do(ctx, "BF.ADD", "urls", "a")
	c.Do(ctx, "BF.ADD", "urls", "a")
	resp, err := http.Get("http://" + s.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	exported := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) `).FindAllSubmatch(body, -1) {
		exported[string(m[1])] = true
	}

	used := map[string][]string{} // metric → where
	nameRe := regexp.MustCompile(`\b((?:bloomkit|redis|process|go)_[a-z0-9_]+)`)
	collect := func(where, expr string) {
		for _, m := range nameRe.FindAllString(expr, -1) {
			used[m] = append(used[m], where)
		}
	}
	rules, err := os.ReadFile(filepath.Join("prometheus", "bloomkit-rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(rules), "\n") {
		if e, ok := strings.CutPrefix(strings.TrimSpace(line), "expr:"); ok {
			collect("bloomkit-rules.yml", e)
		}
	}
	var dash struct {
		Panels []struct {
			Title       string
			Description string
			Targets     []struct{ Expr string }
		}
		Templating struct{ List []struct{ Definition string } }
	}
	raw, err := os.ReadFile(filepath.Join("grafana", "bloomkit-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	exprs := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			collect("dashboard panel "+strconv.Quote(p.Title), tg.Expr)
			exprs++
			// Per-filter series exist only with --metrics-keys: a panel
			// showing them says so, or it looks broken when empty.
			if strings.Contains(tg.Expr, "bloomkit_filter_") && !strings.Contains(p.Description, "--metrics-keys") {
				t.Errorf("dashboard panel %q shows per-filter series without saying they need --metrics-keys", p.Title)
			}
		}
	}
	for _, v := range dash.Templating.List {
		collect("dashboard variable", v.Definition)
	}
	if exprs < 15 {
		t.Errorf("the dashboard has %d queries: is it being read?", exprs)
	}
	for name, where := range used {
		switch {
		case strings.HasPrefix(name, "redis_"):
			field, known := redisExporterFields[name]
			if !known {
				t.Errorf("%s (%s) is not among the redis_exporter metrics this test knows", name, where[0])
			} else if field != "" && !strings.Contains(info, "\n"+field) {
				t.Errorf("%s (%s): redis_exporter makes it from INFO's %s, which the server does not report", name, where[0], field)
			}
		default:
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
			if !exported[name] && !exported[base] {
				t.Errorf("%s (%s) is not exported by the server's /metrics", name, where[0])
			}
		}
	}
	for _, want := range []string{"bloomkit_filter_fill_ratio", "bloomkit_filter_estimated_fpr", "bloomkit_memory_used_bytes", "redis_connected_slave_lag_seconds"} {
		if used[want] == nil {
			t.Errorf("neither the rules nor the dashboard use %s", want)
		}
	}
}

// startServer runs a server without persistence, its Redis port and its
// metrics port on free loopback ports, until the test ends.
func startServer(t *testing.T, cfg server.Config) *server.Server {
	t.Helper()
	cfg.Addr, cfg.MetricsAddr, cfg.NoPersistence = "127.0.0.1:0", "127.0.0.1:0", true
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Close() })
	return s
}
