package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/server"
)

// paramCase is how the round trip drives one CONFIG parameter: the value
// the config file gives it and what CONFIG GET answers for that (fileGet,
// "" for the value itself), then for a mutable one the value CONFIG SET
// gives it and what CONFIG GET answers for that. An alias is set through
// the parameter it names, and answers what that one answers.
type paramCase struct {
	file, fileGet string
	set, setGet   string
	alias         string
}

// Every parameter the server has (server.ConfigParams, the table CONFIG
// GET/SET/REWRITE and the config file's reader use) round-trips: a value
// in the config file reaches the server through bloom serve (CONFIG GET),
// CONFIG SET changes a mutable one, CONFIG REWRITE writes it, and after a
// restart from the rewritten file CONFIG GET answers the same. A parameter
// without a case here fails the test, so a new one cannot be forgotten;
// so does one the file's value, or the rewritten value, does not reach.
func TestServeConfigParamsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p1, p2, t1, t2 := freePort(t), freePort(t), freePort(t), freePort(t)
	for p2 == p1 || t1 == p1 || t1 == p2 || t2 == p1 || t2 == p2 || t2 == t1 {
		p2, t1, t2 = freePort(t), freePort(t), freePort(t)
	}
	pki := newTestPKI(t)
	for _, n := range []string{"server", "server2", "client", "client2"} {
		pki.issue(n)
	}
	caDirs := [2]string{filepath.Join(dir, "ca1"), filepath.Join(dir, "ca2")}
	caPEM, err := os.ReadFile(pki.File)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range caDirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "ca.pem"), caPEM, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	caCopy := filepath.Join(dir, "ca-copy.pem")
	if err := os.WriteFile(caCopy, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	aclFile := filepath.Join(dir, "users.acl")
	if err := os.WriteFile(aclFile, []byte("user default on nopass ~* &* +@all\nuser admin on >adminpw ~* &* +@all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	ps, pt1, pt2 := strconv.Itoa(p1), strconv.Itoa(t1), strconv.Itoa(t2)
	outLimit := func(normal, pubsub string) string {
		return "normal " + normal + " slave 268435456 67108864 60 pubsub " + pubsub
	}
	const suites13 = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
	cases := map[string]paramCase{
		"acl-pubsub-default":         {file: "allchannels", set: "resetchannels"},
		"aclfile":                    {file: aclFile},
		"acllog-max-len":             {file: "9", set: "11"},
		"appendfsync":                {file: "always", set: "no"},
		"appendonly":                 {file: "no"},
		"auto-aof-rewrite-min-size":  {file: "32mb", fileGet: "33554432"},
		"bf-error-rate":              {file: "0.001", set: "0.002"},
		"bf-expansion-factor":        {file: "4", set: "5"},
		"bf-initial-size":            {file: "1234", set: "2345"},
		"bind":                       {file: "127.0.0.1"},
		"cf-bucket-size":             {file: "3", set: "4"},
		"cf-expansion-factor":        {file: "2", set: "3"},
		"cf-initial-size":            {file: "2048", set: "4096"},
		"cf-max-expansions":          {file: "7", set: "8"},
		"cf-max-iterations":          {file: "30", set: "40"},
		"client-output-buffer-limit": {file: "pubsub 64mb 16mb 90", fileGet: outLimit("0 0 0", "67108864 16777216 90"), set: "normal 1mb 2mb 3", setGet: outLimit("1048576 2097152 3", "67108864 16777216 90")},
		"client-query-buffer-limit":  {file: "2gb", fileGet: "2147483648"},
		"daemonize":                  {file: "no"},
		"enable-debug-command":       {file: "local"},
		"databases":                  {file: "1"}, // one database: any other value is ignored with a warning
		// Ignored in a file (with a warning); CONFIG GET shows the event
		// loops, half the CPUs by default.
		"io-threads":                        {file: "4", fileGet: strconv.Itoa(max(1, min(runtime.GOMAXPROCS(0)/2, 8)))},
		"dir":                               {file: data},
		"latency-monitor-threshold":         {file: "5", set: "6"},
		"latency-tracking":                  {file: "no", set: "yes"},
		"latency-tracking-info-percentiles": {file: "50 90", set: "99"},
		"logfile":                           {file: filepath.Join(dir, "bloom.log")},
		"loglevel":                          {file: "verbose"},
		"masterauth":                        {file: "mpw", set: "mpw2"},
		"masteruser":                        {file: "mu", set: "mu2"},
		"maxclients":                        {file: "33", set: "44"},
		"maxmemory":                         {file: "100mb", fileGet: "104857600", set: "200mb", setGet: "209715200"},
		"maxmemory-policy":                  {file: "noeviction"}, // filters are never evicted
		"min-replicas-max-lag":              {file: "5", set: "6"},
		"min-replicas-to-write":             {file: "2", set: "3"},
		"min-slaves-max-lag":                {alias: "min-replicas-max-lag"},
		"min-slaves-to-write":               {alias: "min-replicas-to-write"},
		"pidfile":                           {file: filepath.Join(dir, "bloom.pid")},
		"port":                              {file: ps, set: strconv.Itoa(p2)},
		"protected-mode":                    {file: "no", set: "yes"},
		"proto-max-bulk-len":                {file: "100mb", fileGet: "104857600"},
		"repl-backlog-size":                 {file: "2mb", fileGet: "2097152", set: "3mb", setGet: "3145728"},
		"repl-ping-replica-period":          {file: "5", set: "6"},
		"repl-ping-slave-period":            {alias: "repl-ping-replica-period"},
		"repl-timeout":                      {file: "30", set: "40"},
		"replica-announce-ip":               {file: "10.0.0.1", set: "10.0.0.2"},
		"replica-announce-port":             {file: "1234", set: "2345"},
		"replica-announced":                 {file: "no", set: "yes"},
		"replica-priority":                  {file: "7", set: "8"},
		"replica-read-only":                 {file: "no", set: "yes"},
		"replica-serve-stale-data":          {file: "no", set: "yes"},
		"replicaof":                         {file: "127.0.0.1 1"},
		"requirepass":                       {file: "filepw", set: "setpw"},
		"save":                              {file: "900 1", set: "300 10 60 1000"},
		"unixsocket":                        {file: filepath.Join(dir, "bloom.sock")},
		"unixsocketperm":                    {file: "700"},
		"slave-announce-ip":                 {alias: "replica-announce-ip"},
		"slave-announce-port":               {alias: "replica-announce-port"},
		"slave-priority":                    {alias: "replica-priority"},
		"slave-read-only":                   {alias: "replica-read-only"},
		"slave-serve-stale-data":            {alias: "replica-serve-stale-data"},
		"slaveof":                           {alias: "replicaof"},
		"slowlog-log-slower-than":           {file: "5000", set: "6000"},
		"slowlog-max-len":                   {file: "5", set: "6"},
		"supervised":                        {file: "auto"},
		"tcp-keepalive":                     {file: "100"},
		"timeout":                           {file: "40", set: "50"},
		"tls-auth-clients":                  {file: "optional", set: "no"},
		"tls-ca-cert-dir":                   {file: caDirs[0], set: caDirs[1]},
		"tls-ca-cert-file":                  {file: pki.File, set: caCopy},
		"tls-cert-file":                     {file: pki.file("server.crt"), set: pki.file("server2.crt")},
		"tls-ciphers":                       {file: "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256", set: "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384"},
		"tls-ciphersuites":                  {file: suites13, set: "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384"},
		"tls-client-cert-file":              {file: pki.file("client.crt"), set: pki.file("client2.crt")},
		"tls-client-key-file":               {file: pki.file("client.key"), set: pki.file("client2.key")},
		"tls-client-key-file-pass":          {file: ""}, // encrypted keys are refused: the only value is none
		"tls-cluster":                       {file: "yes", set: "no"},
		"tls-dh-params-file":                {file: filepath.Join(dir, "dh1.pem"), set: filepath.Join(dir, "dh2.pem")},
		"tls-key-file":                      {file: pki.file("server.key"), set: pki.file("server2.key")},
		"tls-key-file-pass":                 {file: ""},
		"tls-port":                          {file: pt1, set: pt2},
		"tls-prefer-server-ciphers":         {file: "yes", set: "no"},
		"tls-protocols":                     {file: "TLSv1.2 TLSv1.3", set: "TLSv1.3"},
		"tls-replication":                   {file: "yes", set: "no"},
		"tls-session-cache-size":            {file: "100", set: "200"},
		"tls-session-cache-timeout":         {file: "60", set: "120"},
		"tls-session-caching":               {file: "no", set: "yes"},
	}
	params := server.ConfigParams()
	mutable := map[string]bool{}
	var missing []string
	var conf strings.Builder
	for _, p := range params {
		mutable[p.Name] = p.Mutable
		c, ok := cases[p.Name]
		if !ok {
			missing = append(missing, p.Name)
			continue
		}
		if c.alias != "" {
			if _, ok := cases[c.alias]; !ok {
				t.Errorf("%s: alias of %s, which has no case", p.Name, c.alias)
			}
			continue
		}
		if p.Mutable && c.set == "" && c.file != "" && p.Name != "tls-client-key-file-pass" && p.Name != "tls-key-file-pass" {
			t.Errorf("%s is mutable: give it a CONFIG SET value", p.Name)
		}
		v := strconv.Quote(c.file)
		if p.Name == "replicaof" {
			v = c.file // host and port: two words
		}
		conf.WriteString(p.Name + " " + v + "\n")
	}
	if len(missing) > 0 {
		t.Fatalf("parameters with no round-trip case: %s", strings.Join(missing, " "))
	}
	for name := range cases {
		if _, ok := mutable[name]; !ok {
			t.Errorf("case %s is not a parameter", name)
		}
	}
	file := filepath.Join(dir, "bloomkit.conf")
	if err := os.WriteFile(file, []byte(conf.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	want := func(name string, afterSet bool) string {
		c := cases[name]
		if c.alias != "" {
			c = cases[c.alias]
			name = c.alias
		}
		if afterSet && c.set != "" {
			if c.setGet != "" {
				return c.setGet
			}
			return c.set
		}
		if c.fileGet != "" {
			return c.fileGet
		}
		return c.file
	}
	ctx := context.Background()
	check := func(port int, stage string, afterSet bool) {
		t.Helper()
		c := confClient(t, port, "admin", "adminpw")
		got, err := c.ConfigGet(ctx, "*").Result()
		if err != nil {
			t.Fatalf("%s: CONFIG GET *: %v", stage, err)
		}
		var bad []string
		for _, p := range params {
			if w := want(p.Name, afterSet); got[p.Name] != w {
				bad = append(bad, p.Name+" = "+strconv.Quote(got[p.Name])+", want "+strconv.Quote(w))
			}
		}
		sort.Strings(bad)
		for _, b := range bad {
			t.Errorf("%s: CONFIG GET %s", stage, b)
		}
	}
	srv := startConf(t, file, p1)
	check(p1, "from the file", false)
	args := []any{"CONFIG", "SET"}
	for _, p := range params {
		if c := cases[p.Name]; p.Mutable && c.alias == "" && c.set != "" {
			args = append(args, p.Name, c.set)
		}
	}
	admin := confClient(t, p1, "admin", "adminpw")
	if err := admin.Do(ctx, args...).Err(); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	check(p2, "after CONFIG SET", true)
	if err := confClient(t, p2, "admin", "adminpw").ConfigRewrite(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	srv.stop(t)
	raw, _ := os.ReadFile(file)
	startConf(t, file, p2)
	check(p2, "after CONFIG REWRITE and a restart", true)
	if t.Failed() {
		t.Logf("rewritten file:\n%s", raw)
	}
}
