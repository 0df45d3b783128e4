package topk

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/bloomkit/bloomkit/internal/format"
)

var update = flag.Bool("update", false, "write golden files that are missing (never overwrites)")

func golden() *TopK {
	tk, _ := New(10, 40, 4, 0.9)
	for i := range 3000 {
		tk.AddString(fmt.Sprint("golden", i*i%97))
	}
	tk.AddString("") // an empty item in the heap
	tk.IncrByString("", 500)
	return tk
}

func answers(tk *TopK) string {
	var b bytes.Buffer
	for _, it := range tk.List() {
		fmt.Fprintf(&b, "%q %d\n", it.Item, it.Count)
	}
	for i := range 100 {
		fmt.Fprintln(&b, tk.CountString(fmt.Sprint("golden", i)), tk.QueryString(fmt.Sprint("golden", i)))
	}
	return b.String()
}

// TestGoldenFile pins the file bytes and the answers forever.
func TestGoldenFile(t *testing.T) {
	path := filepath.Join("testdata", "golden", "topk-10-40x4.bkf")
	ans := filepath.Join("testdata", "golden", "topk-10-40x4.answers")
	b, err := golden().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		for p, data := range map[string][]byte{path: b, ans: []byte(answers(golden()))} {
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
		t.Fatal("the TopK no longer encodes to the golden bytes")
	}
	tk, err := Read(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	wantAns, _ := os.ReadFile(ans)
	if answers(tk) != string(wantAns) {
		t.Fatal("the golden TopK answers differently")
	}
}

// Encode → decode gives the same state, random generator included: both
// go on to make the same choices.
func TestRoundTrip(t *testing.T) {
	tk := golden()
	b, err := tk.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Read(io.MultiReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g.State(), tk.State()) {
		t.Fatal("decoded state differs")
	}
	for i := range 2000 {
		x := fmt.Sprint("more", i%31)
		e1, ok1 := tk.AddString(x)
		e2, ok2 := g.AddString(x)
		if !bytes.Equal(e1, e2) || ok1 != ok2 {
			t.Fatalf("add %d: %q %v vs %q %v", i, e1, ok1, e2, ok2)
		}
	}
	if answers(tk) != answers(g) {
		t.Fatal("the decoded TopK went on differently")
	}
	j, _ := json.Marshal(tk)
	var k TopK
	if err := json.Unmarshal(j, &k); err != nil || answers(&k) != answers(tk) {
		t.Fatalf("json: %v", err)
	}
}

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
	heapAt := 80 + 16 + 8*40*4
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"short", good[:len(good)-9], ErrTruncated},
		{"flipped", func() []byte { b := append([]byte(nil), good...); b[300] ^= 4; return b }(), ErrChecksum},
		{"decay", edit(func(b []byte) { binary.LittleEndian.PutUint64(b[48:], 0) }), ErrCorrupt},
		{"k", edit(func(b []byte) { binary.LittleEndian.PutUint64(b[40:], 1<<33) }), ErrCorrupt},
		{"huge", edit(func(b []byte) {
			binary.LittleEndian.PutUint32(b[32:], 1<<31)
			binary.LittleEndian.PutUint64(b[24:], 1<<31)
		}), ErrTooLarge},
		{"flags", edit(func(b []byte) { b[80] = 1 }), ErrCorrupt},
		{"item length", edit(func(b []byte) { binary.LittleEndian.PutUint64(b[heapAt+8:], 1<<50) }), ErrCorrupt},
		{"type", edit(func(b []byte) { b[10] = format.TypeCMS }), ErrType},
	} {
		var tk TopK
		if err := tk.UnmarshalBinary(c.data); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if tk.heap != nil {
			t.Errorf("%s: a failed decode changed the TopK", c.name)
		}
	}
}

// FuzzDecode: no input panics the decoder; what decodes answers, takes
// items and re-encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	good, _ := golden().MarshalBinary()
	f.Add(good)
	small, _ := New(1, 1, 1, 0.5)
	small.AddString("x")
	b, _ := small.MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		var tk TopK
		if err := tk.UnmarshalBinary(data); err != nil {
			for _, e := range []error{ErrBadMagic, ErrVersion, ErrType, ErrHash, ErrCorrupt, ErrChecksum, ErrTruncated, ErrTooLarge} {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("undocumented error %v", err)
		}
		out, err := tk.MarshalBinary()
		if err != nil || !bytes.Equal(out, data) {
			t.Fatalf("re-encoding differs: %v", err)
		}
		tk.AddString("fuzz")
		tk.List()
		tk.CountString("fuzz")
	})
}
