package server

import (
	"context"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/internal/redistest"
)

// redisInfo reads one INFO field of a real redis-server.
func redisInfo(t *testing.T, r *redistest.Server, section, field string) string {
	t.Helper()
	out, err := r.CLI(context.Background(), "INFO", section)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			return v
		}
	}
	return ""
}
