package bloomproc

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Sample is one redis-benchmark run: requests per second and latencies in
// milliseconds.
type Sample struct {
	RPS, Avg, P50, P99 float64
}

// RedisBenchmark runs redis-benchmark (tool) --csv against addr for one
// command line: n requests over c connections, pipeline depth p, random
// keyspace r (__rand_int__).
func RedisBenchmark(tool, addr string, n, c, p, r int, args []string) (Sample, error) {
	h, port, _ := net.SplitHostPort(addr)
	full := []string{"-h", h, "-p", port, "-n", strconv.Itoa(n), "-c", strconv.Itoa(c), "-P", strconv.Itoa(p),
		"-r", strconv.Itoa(r), "--csv"}
	cmd := exec.Command(tool, append(full, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Sample{}, fmt.Errorf("redis-benchmark: %v: %s", err, stderr.String())
	}
	rows, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	if err != nil || len(rows) < 2 || len(rows[1]) < 7 {
		return Sample{}, fmt.Errorf("unexpected redis-benchmark output %q %s", out, stderr.String())
	}
	f := func(i int) float64 { v, _ := strconv.ParseFloat(rows[1][i], 64); return v }
	return Sample{RPS: f(1), Avg: f(2), P50: f(4), P99: f(6)}, nil
}

// RSS is a process's resident set size in bytes (Linux, /proc).
func RSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "VmRSS:") {
			fs := strings.Fields(sc.Text())
			kb, _ := strconv.ParseInt(fs[1], 10, 64)
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
