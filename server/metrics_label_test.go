package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetricsKeyNames: key names that are not UTF-8 (and one spelled like
// another's escape) cannot break the scrape. A key "\xffkey" used to make
// /metrics answer HTTP 500 for every metric.
func TestMetricsKeyNames(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true, MetricsAddr: "127.0.0.1:0", MetricsKeys: 100})
	rc := dialRaw(t, s.Addr())
	for _, k := range []string{"\xffkey", `\xffkey`, "ok", "a\xc3", "line\nbreak\"q"} {
		if got := rc.do("BF.ADD", k, "x"); got != ":1" {
			t.Fatalf("BF.ADD %q: %s", k, got)
		}
	}
	resp, err := http.Get("http://" + s.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: HTTP %d: %.300s", resp.StatusCode, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("the scrape does not parse: %v", err)
	}
	if fams["bloomkit_keys"] == nil || fams["bloomkit_commands_total"] == nil {
		t.Fatal("metrics missing from the scrape")
	}
	keys := map[string]bool{}
	for _, m := range fams["bloomkit_filter_items"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "key" {
				keys[l.GetValue()] = true
			}
		}
	}
	for _, want := range []string{`\xffkey`, "ok", `a\xc3`, "line\nbreak\"q"} {
		if !keys[want] {
			t.Errorf("no series for key %q (have %v)", want, keys)
		}
	}
}
