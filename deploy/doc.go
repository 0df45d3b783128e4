// Package deploy holds no code: its folder has what running bloom serve in
// production needs beside the binary — a systemd unit (systemd/), Prometheus
// alert rules with their tests (prometheus/) and a Grafana dashboard
// (grafana/) — and its tests check them: systemd-analyze verify on the unit,
// promtool on the rules, and every metric the rules and the dashboard name
// against what a running server exports.
package deploy
