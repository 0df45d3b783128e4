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
// line, "name value", '#' comments, values quoted as Redis reads them
// (double quotes with \n \r \t \a \b \\ \" \xNN escapes, or single
// quotes), so that any byte string CONFIG REWRITE writes reads back the same.
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
		words, err := splitConfigLine(line)
		if err != nil {
			return fmt.Errorf("server: %s:%d: %v", path, n, err)
		}
		name := strings.ToLower(words[0])
		if len(words) < 2 {
			return fmt.Errorf("server: %s:%d: %s: needs a value", path, n, name)
		}
		if len(words) > 2 && name != "bind" {
			return fmt.Errorf("server: %s:%d: %s: takes one value, not %d (quote a value with spaces)", path, n, name, len(words)-1)
		}
		v := words[1]
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
			host = v // the first address (bloomkit listens on one)
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
				cfg.NoPersistence, cfg.NoAppendLog = false, false
			case "no":
				// Redis's meaning: no log, snapshots still written.
				cfg.NoAppendLog = true
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

// splitConfigLine splits a config line into words as Redis's sdssplitargs
// does (the inline-request reader's splitArgs): blanks separate words;
// "..." takes the escapes \n \r \t \a \b \xNN and \<c> for c; '...'
// takes \' only. A bad line is an error, never a panic.
func splitConfigLine(line string) ([]string, error) {
	args, err := splitArgs([]byte(line), nil, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("unbalanced quotes, or a closing quote not followed by a space")
	}
	words := make([]string, len(args))
	for i, a := range args {
		words[i] = string(a)
	}
	return words, nil
}

// configQuote writes a value for a config file: bare when it is plain
// printable ASCII with nothing the reader treats specially, otherwise
// double-quoted as Redis's sdscatrepr does (\" \\ \n \r \t \a \b, other
// bytes outside printable ASCII as \xNN), which splitConfigLine reads back
// byte for byte.
func configQuote(v string) string {
	plain := v != ""
	for i := 0; i < len(v) && plain; i++ {
		c := v[i]
		plain = c > ' ' && c < 0x7f && c != '"' && c != '\'' && c != '\\' && c != '#'
	}
	if plain {
		return v
	}
	b := []byte{'"'}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\', '"':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if c >= ' ' && c < 0x7f {
				b = append(b, c)
			} else {
				b = append(b, fmt.Sprintf("\\x%02x", c)...)
			}
		}
	}
	return string(append(b, '"'))
}
