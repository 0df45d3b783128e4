package server

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// ReadConfigFile applies a Redis-style config file to cfg: one directive a
// line, "name value", '#' comments, values with spaces in double quotes.
// The directives are those CONFIG GET reports: bind, port, dir, appendonly,
// appendfsync, requirepass, maxmemory, maxclients, timeout,
// slowlog-log-slower-than, slowlog-max-len, proto-max-bulk-len and
// client-query-buffer-limit. cfg.ConfigFile is set to path, so that CONFIG
// REWRITE writes changed settings back to it. An unknown directive or a
// bad value is an error naming the line.
func ReadConfigFile(path string, cfg *Config) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("server: config file: %w", err)
	}
	defer f.Close()
	host, port := "", ""
	if cfg.Addr != "" {
		host, port = splitHostPort(cfg.Addr)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		name = strings.ToLower(name)
		v := strings.TrimSpace(rest)
		if strings.HasPrefix(v, `"`) {
			u, err := strconv.Unquote(v)
			if err != nil {
				return fmt.Errorf("server: %s:%d: bad quoted value for %s", path, n, name)
			}
			v = u
		}
		bad := func(what string) error {
			return fmt.Errorf("server: %s:%d: %s: %s, not %q", path, n, name, what, v)
		}
		num := func(lo, hi int64) (int64, error) {
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil || x < lo || x > hi {
				return 0, bad(fmt.Sprintf("want an integer from %d to %d", lo, hi))
			}
			return x, nil
		}
		switch name {
		case "bind":
			host = strings.Fields(v + " ")[0]
		case "port":
			if _, err := num(0, 65535); err != nil {
				return err
			}
			port = v
		case "dir":
			cfg.Dir = v
		case "appendonly":
			switch strings.ToLower(v) {
			case "yes":
				cfg.NoPersistence = false
			case "no":
				cfg.NoPersistence = true
			default:
				return bad("want yes or no")
			}
		case "appendfsync":
			v = strings.ToLower(v)
			if v != "always" && v != "everysec" && v != "no" {
				return bad("want always, everysec or no")
			}
			cfg.AppendFsync = v
		case "requirepass":
			cfg.RequirePass = v
		case "maxmemory":
			m, ok := parseMemoryValue(v)
			if !ok {
				return bad("want a memory value such as 4gb")
			}
			cfg.MaxMemory = m
		case "maxclients":
			x, err := num(1, 1<<31-1)
			if err != nil {
				return err
			}
			cfg.MaxClients = int(x)
		case "timeout":
			x, err := num(0, 1<<31-1)
			if err != nil {
				return err
			}
			cfg.Timeout = time.Duration(x) * time.Second
		case "slowlog-log-slower-than":
			x, err := num(-1, 1<<62)
			if err != nil {
				return err
			}
			cfg.SlowlogLogSlowerThan = &x
		case "slowlog-max-len":
			x, err := num(0, 1<<31-1)
			if err != nil {
				return err
			}
			cfg.SlowlogMaxLen = &x
		case "proto-max-bulk-len", "client-query-buffer-limit":
			m, ok := parseMemoryValue(v)
			if !ok || m < 1024 || m > 1<<40 {
				return bad("want a memory value from 1kb to 1024gb")
			}
			if name == "proto-max-bulk-len" {
				cfg.MaxBulk = int(m)
			} else {
				cfg.MaxQuery = int(m)
			}
		default:
			return fmt.Errorf("server: %s:%d: unknown directive %q", path, n, name)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("server: config file %s: %w", path, err)
	}
	if host == "" {
		host = defaultHost
	}
	if port == "" {
		port = defaultPort
	}
	cfg.Addr = net.JoinHostPort(host, port)
	cfg.ConfigFile = path
	return nil
}
