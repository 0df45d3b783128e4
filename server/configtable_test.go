package server

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// configLog is a log destination the test reads while the server writes.
type configLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *configLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *configLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Every password parameter is marked secret in the table, and the value a
// CONFIG SET gives a secret parameter shows neither in SLOWLOG GET (as
// "(redacted)", as in Redis) nor in the server's log.
func TestConfigSecretsRedacted(t *testing.T) {
	var secrets []string
	for _, st := range settingList {
		looksSecret := strings.Contains(st.name, "pass") || strings.HasSuffix(st.name, "auth")
		if looksSecret != st.secret {
			t.Errorf("parameter %s: secret is %v", st.name, st.secret)
		}
		if st.secret {
			secrets = append(secrets, st.name)
		}
	}
	for _, want := range []string{"requirepass", "masterauth", "tls-key-file-pass", "tls-client-key-file-pass"} {
		if !isSecretParam(want) {
			t.Errorf("%s is not secret", want)
		}
	}
	var log configLog
	s := startServer(t, Config{NoPersistence: true, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	rc := dialRaw(t, s.Addr())
	if got := rc.do("CONFIG", "SET", "slowlog-log-slower-than", "0"); got != "+OK" {
		t.Fatal(got)
	}
	for _, name := range secrets {
		if name == "requirepass" {
			continue // would lock this client out of SLOWLOG GET
		}
		rc.do("CONFIG", "SET", name, "s3cr3t-"+name)
		// Several pairs: each secret value is redacted wherever it stands.
		rc.do("CONFIG", "SET", "slowlog-max-len", "128", strings.ToUpper(name), "s3cr3t-"+name)
	}
	rc.do("CONFIG", "SET", "requirepass", "s3cr3t-requirepass")
	rc.do("AUTH", "s3cr3t-requirepass")
	got := rc.do("SLOWLOG", "GET", "-1")
	if strings.Contains(got, "s3cr3t") {
		t.Errorf("SLOWLOG GET shows a secret: %s", got)
	}
	if n := strings.Count(got, `"(redacted)"`); n < 2*len(secrets)-1 {
		t.Errorf("SLOWLOG GET has %d redacted values, want at least %d: %s", n, 2*len(secrets)-1, got)
	}
	if strings.Contains(log.String(), "s3cr3t") {
		t.Errorf("the server's log shows a secret:\n%s", log.String())
	}
}
