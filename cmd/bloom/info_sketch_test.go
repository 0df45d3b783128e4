package main

import (
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/cms"
	"github.com/bloomkit/bloomkit/topk"
)

// info reads Count-Min Sketch and Top-K files (checksums verified) and
// shows their dimensions; test refuses them with a message.
func TestInfoSketches(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	s, _ := cms.New(300, 4)
	s.IncrByString("a", 7)
	s.IncrByString("b", 5)
	b, _ := s.MarshalBinary()
	writeFile(t, dir, "s.cms", string(b))
	tk, _ := topk.New(12, 60, 3, 0.85)
	tk.AddString("x")
	b, _ = tk.MarshalBinary()
	writeFile(t, dir, "t.topk", string(b))
	r := bloomIn(t, dir, "", "info", "s.cms", "t.topk").want(t, exitOK, "info of sketches")
	for _, want := range []string{
		"type:         count-min sketch\n", "counters:     300 × 4 of 32 bits (width × depth)\n", "count:        12 (the sum of every increment)\n",
		"type:         top-k\n", "top:          12 items\n", "buckets:      60 × 3 (width × depth), decay 0.85\n",
		"checksum:     ok (CRC-32C of header and data)\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("info lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "seed:") || strings.Contains(r.stdout, "items:") {
		t.Errorf("info shows a seed or items for a sketch:\n%s", r.stdout)
	}
	r = bloomIn(t, dir, "a\n", "test", "s.cms")
	if r.code == exitOK || !strings.Contains(r.stderr, "cannot be tested") {
		t.Errorf("test of a sketch: exit %d, %s", r.code, r.stderr)
	}
}
