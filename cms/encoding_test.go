package cms

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/bloomkit/bloomkit/internal/format"
)

var update = flag.Bool("update", false, "write golden files that are missing (never overwrites)")

// golden builds the same sketch in every version of this package.
func golden() *Sketch {
	s, _ := New(100, 5)
	for i := range 1000 {
		s.IncrByString(fmt.Sprint("golden", i), uint64(i%7+1))
	}
	return s
}

func goldenAnswers(s *Sketch) string {
	var b bytes.Buffer
	for i := range 1200 {
		fmt.Fprintln(&b, s.QueryString(fmt.Sprint("golden", i)))
	}
	return b.String()
}

// TestGoldenFile pins the file bytes and the answers forever.
func TestGoldenFile(t *testing.T) {
	path := filepath.Join("testdata", "golden", "cms-100x5.bkf")
	ans := filepath.Join("testdata", "golden", "cms-100x5.answers")
	b, err := golden().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		for p, data := range map[string][]byte{path: b, ans: []byte(goldenAnswers(golden()))} {
			if _, err := os.Stat(p); err == nil {
				continue
			}
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGoldenFile -update once to create it)", err)
	}
	if !bytes.Equal(b, want) {
		t.Fatal("the sketch no longer encodes to the golden bytes")
	}
	s, err := Read(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	wantAns, _ := os.ReadFile(ans)
	if goldenAnswers(s) != string(wantAns) {
		t.Fatal("the golden sketch answers differently")
	}
}

func TestRoundTrip(t *testing.T) {
	for _, dims := range [][2]uint64{{1, 1}, {3, 1}, {7, 3}, {1000, 4}} {
		s, _ := New(dims[0], dims[1])
		s.Conservative = dims[0] == 7
		for i := range 500 {
			s.IncrByString(fmt.Sprint(i), uint64(i))
		}
		b, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if len(b)%8 != 4 {
			t.Fatalf("file of %d bytes is not header + whole words + trailer", len(b))
		}
		var g Sketch
		if err := g.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		if g.width != s.width || g.depth != s.depth || g.count != s.count || g.Conservative != s.Conservative ||
			fmt.Sprint(g.counters) != fmt.Sprint(s.counters) {
			t.Fatalf("%v: decoded sketch differs", dims)
		}
		// Through an unknown-length reader too.
		h, err := Read(io.MultiReader(bytes.NewReader(b)))
		if err != nil || fmt.Sprint(h.counters) != fmt.Sprint(s.counters) {
			t.Fatalf("streamed read: %v", err)
		}
		j, _ := json.Marshal(s)
		var k Sketch
		if err := json.Unmarshal(j, &k); err != nil || k.count != s.count {
			t.Fatalf("json: %v", err)
		}
		var gb bytes.Buffer
		if err := gob.NewEncoder(&gb).Encode(s); err != nil {
			t.Fatal(err)
		}
		var m Sketch
		if err := gob.NewDecoder(&gb).Decode(&m); err != nil || m.count != s.count {
			t.Fatalf("gob: %v", err)
		}
	}
}

// resign recomputes both checksums after a test edits a file.
func resign(b []byte) []byte {
	binary.LittleEndian.PutUint32(b[72:], crc32.Checksum(b[:72], format.Castagnoli))
	n := len(b) - 4
	binary.LittleEndian.PutUint32(b[n:], crc32.Checksum(b[:n], format.Castagnoli))
	return b
}

func TestDecodeRejects(t *testing.T) {
	good, _ := golden().MarshalBinary()
	edit := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return resign(b)
	}
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"magic", append([]byte("bloomkix"), good[8:]...), ErrBadMagic},
		{"short", good[:len(good)-10], ErrTruncated},
		{"flipped counter", func() []byte { b := append([]byte(nil), good...); b[200] ^= 1; return b }(), ErrChecksum},
		{"width 0", edit(func(b []byte) { binary.LittleEndian.PutUint64(b[24:], 0) }), ErrCorrupt},
		{"huge", edit(func(b []byte) { binary.LittleEndian.PutUint64(b[24:], 1<<40) }), ErrTooLarge},
		{"payload", edit(func(b []byte) { binary.LittleEndian.PutUint64(b[64:], 16) }), ErrCorrupt},
		{"flags", edit(func(b []byte) { b[80] = 2 }), ErrCorrupt},
		{"hash", edit(func(b []byte) { b[11] = 1 }), ErrHash},
		{"type", edit(func(b []byte) { b[10] = format.TypeTopK }), ErrType},
		{"trailing", append(append([]byte(nil), good...), 0), ErrCorrupt},
	} {
		var s Sketch
		err := s.UnmarshalBinary(c.data)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if s.counters != nil {
			t.Errorf("%s: a failed decode changed the sketch", c.name)
		}
	}
}

// A header announcing a huge sketch on a short stream of unknown length
// allocates no more than format.EagerBytes before the data runs out.
func TestForgedHeaderBounded(t *testing.T) {
	h := format.Header{Type: TypeCMS, Hash: HashMurmur2, M: 1 << 30, N: 64, PayloadLen: payloadLen(1 << 36)}
	data := append(h.Marshal(), make([]byte, 1024)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := Read(io.MultiReader(bytes.NewReader(data))); !errors.Is(err, ErrTruncated) {
		t.Fatalf("forged: %v", err)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 4*format.EagerBytes {
		t.Fatalf("a forged header made the reader allocate %d bytes", n)
	}
}

// FuzzDecode: no input panics the decoder; what decodes answers, takes
// increments and re-encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	good, _ := golden().MarshalBinary()
	f.Add(good)
	f.Add(good[:90])
	small, _ := New(3, 1)
	small.Add([]byte("x"))
	b, _ := small.MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Sketch
		if err := s.UnmarshalBinary(data); err != nil {
			for _, e := range []error{ErrBadMagic, ErrVersion, ErrType, ErrHash, ErrCorrupt, ErrChecksum, ErrTruncated, ErrTooLarge} {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("undocumented error %v", err)
		}
		out, err := s.MarshalBinary()
		if err != nil || !bytes.Equal(out, data) {
			t.Fatalf("re-encoding differs: %v", err)
		}
		s.IncrByString("fuzz", 3)
		if s.QueryString("fuzz") < 3 {
			t.Fatal("estimate below the increment")
		}
	})
}
