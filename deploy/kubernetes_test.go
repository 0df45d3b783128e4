package deploy

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/server"
)

// TestKubernetesManifest reads deploy/kubernetes/bloomkit.yaml (with
// Python's YAML parser: the module holds no YAML library) and checks it
// against a running server: the probes' paths answer on the metrics port
// the arguments open, every port the containers and Services name is one
// the arguments listen on, the password comes from a Secret, and the pod
// runs as the image's user without root.
func TestKubernetesManifest(t *testing.T) {
	py := need(t, "python3", "BLOOMKIT_REQUIRE_PYTHON", "python3")
	if exec.Command(py, "-c", "import yaml").Run() != nil {
		t.Skip("python3 has no yaml module (Debian package python3-yaml)")
	}
	path := filepath.Join("kubernetes", "bloomkit.yaml")
	out, err := exec.Command(py, "-c", "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))", path).Output()
	if err != nil {
		t.Fatalf("%s does not parse: %v", path, err)
	}
	var docs []map[string]any
	if err := json.Unmarshal(out, &docs); err != nil {
		t.Fatal(err)
	}
	get := func(v any, keys ...string) any {
		for _, k := range keys {
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		}
		return v
	}
	var sts map[string]any
	var servicePorts []any
	for _, d := range docs {
		switch d["kind"] {
		case "StatefulSet":
			sts = d
		case "Service":
			servicePorts = append(servicePorts, get(d, "spec", "ports").([]any)...)
		}
	}
	if sts == nil {
		t.Fatal("no StatefulSet")
	}
	pod := get(sts, "spec", "template", "spec")
	if get(pod, "securityContext", "runAsUser") != float64(65532) || get(pod, "securityContext", "runAsNonRoot") != true {
		t.Errorf("the pod does not run as the image's user 65532 without root: %v", get(pod, "securityContext"))
	}
	c := get(pod, "containers").([]any)[0]
	var args []string
	for _, a := range get(c, "args").([]any) {
		args = append(args, a.(string))
	}
	flag := func(name string) string {
		for i, a := range args {
			if a == name && i+1 < len(args) {
				return args[i+1]
			}
		}
		t.Fatalf("args %v have no %s", args, name)
		return ""
	}
	addr, metrics := flag("--addr"), flag("--metrics-addr")
	ports := map[string]string{} // port name → number
	for _, p := range get(c, "ports").([]any) {
		ports[get(p, "name").(string)] = strconv.Itoa(int(get(p, "containerPort").(float64)))
	}
	if !strings.HasSuffix(addr, ":"+ports["redis"]) || !strings.HasSuffix(metrics, ":"+ports["metrics"]) {
		t.Errorf("container ports %v, but the server listens on %s and %s", ports, addr, metrics)
	}
	for _, sp := range servicePorts {
		if _, ok := ports[get(sp, "targetPort").(string)]; !ok {
			t.Errorf("a Service targets port %v, which the container does not name", get(sp, "targetPort"))
		}
	}
	for _, e := range get(c, "env").([]any) {
		if get(e, "name") == "BLOOMKIT_REQUIREPASS" && get(e, "valueFrom", "secretKeyRef") == nil {
			t.Error("the password is not read from a Secret")
		}
	}

	s := startServer(t, server.Config{})
	for _, probe := range []string{"startupProbe", "livenessProbe", "readinessProbe"} {
		p := get(c, probe, "httpGet", "path")
		if p == nil || get(c, probe, "httpGet", "port") != "metrics" {
			t.Errorf("%s is not an HTTP probe of the metrics port", probe)
			continue
		}
		resp, err := http.Get("http://" + s.MetricsAddr() + p.(string))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s: %s from a healthy server", probe, p, resp.Status)
		}
	}
}
