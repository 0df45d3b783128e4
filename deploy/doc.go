// Package deploy holds no code: its folder has what running bloom serve in
// production needs beside the binary — a systemd unit (systemd/), Prometheus
// alert rules with their tests (prometheus/), a Grafana dashboard
// (grafana/) and a Kubernetes StatefulSet with its Services (kubernetes/) —
// and its tests check them: systemd-analyze verify on the unit, promtool on
// the rules, every metric the rules and the dashboard name against what a
// running server exports, and the manifest's ports and probes against a
// running server.
package deploy
