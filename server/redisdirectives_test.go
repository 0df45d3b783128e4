package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// redisConfigNames are the settings Redis 7 and 8 take in redis.conf
// (src/config.c's table, aliases left out).
var redisConfigNames = []string{
	"acl-pubsub-default", "aclfile", "acllog-max-len", "active-defrag-cycle-max", "active-defrag-cycle-min",
	"active-defrag-ignore-bytes", "active-defrag-max-scan-fields", "active-defrag-threshold-lower",
	"active-defrag-threshold-upper", "active-expire-effort", "activedefrag", "activerehashing",
	"always-show-logo", "aof-disable-auto-gc", "aof-load-truncated", "aof-rewrite-cpulist",
	"aof-rewrite-incremental-fsync", "aof-timestamp-enabled", "aof-use-rdb-preamble", "appenddirname",
	"appendfilename", "appendfsync", "appendonly", "auto-aof-rewrite-min-size", "auto-aof-rewrite-percentage",
	"bgsave-cpulist", "bind", "bind-source-addr", "bio-cpulist", "busy-reply-threshold", "client-default-resp",
	"client-output-buffer-limit", "client-query-buffer-limit", "cluster-allow-pubsubshard-when-down",
	"cluster-allow-reads-when-down", "cluster-allow-replica-migration", "cluster-announce-bus-port",
	"cluster-announce-hostname", "cluster-announce-human-nodename", "cluster-announce-ip",
	"cluster-announce-port", "cluster-announce-tls-port", "cluster-config-file", "cluster-enabled",
	"cluster-link-sendbuf-limit", "cluster-migration-barrier", "cluster-node-timeout", "cluster-ping-interval",
	"cluster-port", "cluster-preferred-endpoint-type", "cluster-replica-no-failover",
	"cluster-replica-validity-factor", "cluster-require-full-coverage", "crash-log-enabled",
	"crash-memcheck-enabled", "daemonize", "databases", "dbfilename", "dir", "disable-thp", "dynamic-hz",
	"enable-debug-command", "enable-module-command", "enable-protected-configs", "hash-max-listpack-entries",
	"hash-max-listpack-value", "hide-user-data-from-log", "hll-sparse-max-bytes", "hz", "ignore-warnings",
	"io-threads", "io-threads-do-reads", "jemalloc-bg-thread", "key-load-delay", "latency-monitor-threshold",
	"latency-tracking", "latency-tracking-info-percentiles", "lazyfree-lazy-eviction", "lazyfree-lazy-expire",
	"lazyfree-lazy-server-del", "lazyfree-lazy-user-del", "lazyfree-lazy-user-flush", "lfu-decay-time",
	"lfu-log-factor", "list-compress-depth", "list-max-listpack-size", "loading-process-events-interval-bytes",
	"locale-collate", "logfile", "loglevel", "masterauth", "masteruser", "max-new-connections-per-cycle",
	"max-new-tls-connections-per-cycle", "maxclients", "maxmemory", "maxmemory-clients",
	"maxmemory-eviction-tenacity", "maxmemory-policy", "maxmemory-samples", "min-replicas-max-lag",
	"min-replicas-to-write", "no-appendfsync-on-rewrite", "notify-keyspace-events", "oom-score-adj",
	"oom-score-adj-values", "pidfile", "port", "proc-title-template", "propagation-error-behavior",
	"protected-mode", "proto-max-bulk-len", "rdb-del-sync-files", "rdb-key-save-delay",
	"rdb-save-incremental-fsync", "rdbchecksum", "rdbcompression", "repl-backlog-size", "repl-backlog-ttl",
	"repl-disable-tcp-nodelay", "repl-diskless-load", "repl-diskless-sync", "repl-diskless-sync-delay",
	"repl-diskless-sync-max-replicas", "repl-ping-replica-period", "repl-timeout", "replica-announce-ip",
	"replica-announce-port", "replica-announced", "replica-ignore-disk-write-errors",
	"replica-ignore-maxmemory", "replica-lazy-flush", "replica-priority", "replica-read-only",
	"replica-serve-stale-data", "replicaof", "req-res-logfile", "requirepass", "sanitize-dump-payload", "save",
	"server-cpulist", "set-max-intset-entries", "set-max-listpack-entries", "set-max-listpack-value",
	"set-proc-title", "shutdown-on-sigint", "shutdown-on-sigterm", "shutdown-timeout",
	"slowlog-log-slower-than", "slowlog-max-len", "socket-mark-id", "stop-writes-on-bgsave-error",
	"stream-node-max-bytes", "stream-node-max-entries", "supervised", "syslog-enabled", "syslog-facility",
	"syslog-ident", "tcp-backlog", "tcp-keepalive", "timeout", "tls-auth-clients", "tls-ca-cert-dir",
	"tls-ca-cert-file", "tls-cert-file", "tls-ciphers", "tls-ciphersuites", "tls-client-cert-file",
	"tls-client-key-file", "tls-client-key-file-pass", "tls-cluster", "tls-dh-params-file", "tls-key-file",
	"tls-key-file-pass", "tls-port", "tls-prefer-server-ciphers", "tls-protocols", "tls-replication",
	"tls-session-cache-size", "tls-session-cache-timeout", "tls-session-caching", "tracking-table-max-keys",
	"unixsocket", "unixsocketperm", "use-exit-on-panic", "watchdog-period", "zset-max-listpack-entries",
	"zset-max-listpack-value",
}

// Every setting a redis.conf may carry is either implemented or ignored
// with a warning that says why: a Redis configuration file never stops the
// server with "unknown directive" (io-threads, shutdown-timeout and
// locale-collate did).
func TestRedisDirectivesKnown(t *testing.T) {
	p := filepath.Join(t.TempDir(), "redis.conf")
	for _, n := range redisConfigNames {
		os.WriteFile(p, []byte(n+" 0\n"), 0o600)
		var cfg Config
		if err := ReadConfigFile(p, &cfg); err != nil && strings.Contains(err.Error(), "unknown directive") {
			t.Errorf("%s: %v", n, err)
		}
	}
}
