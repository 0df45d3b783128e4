package redisbloom

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// dumpFromRecording writes the SCANDUMP replies RedisBloom gave as a dump
// file, as `bloom pull --format scandump` does.
func dumpFromRecording(t *testing.T, r *Recording, kind byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := NewDumpWriter(&b, kind)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Scandump {
		if c.Iter == 0 {
			continue // the end of the stream
		}
		data, err := hex.DecodeString(c.Hex)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Chunk(c.Iter, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestDumpFilesFromRecordings: each stream real RedisBloom dumped, saved
// as a dump file, loads in-process and answers the recorded queries
// exactly as RedisBloom did (false positives included), and WriteDump of
// the loaded filter gives back the same file.
func TestDumpFilesFromRecordings(t *testing.T) {
	for prefix, kind := range map[string]byte{"bf_": DumpBloom, "cf_": DumpCuckoo} {
		checked := 0
		defer func() {
			if checked < 3 {
				t.Errorf("only %d %s recordings have a dump and queries", checked, prefix)
			}
		}()
		for name, r := range loadRecordings(t, prefix) {
			if len(r.Scandump) == 0 || len(r.Queries) == 0 {
				continue
			}
			checked++
			file := dumpFromRecording(t, r, kind)
			f, err := ReadDump(bytes.NewReader(file), nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if kind == DumpBloom {
				if _, ok := f.(*Bloom); !ok {
					t.Fatalf("%s: loaded a %T", name, f)
				}
			}
			for i, q := range r.Queries {
				if got := f.Exists([]byte(q)); got != (r.Exists[i] == 1) {
					t.Errorf("%s: %q exists %v, RedisBloom said %d", name, q, got, r.Exists[i])
				}
			}
			var again bytes.Buffer
			if _, err := WriteDump(&again, f); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again.Bytes(), file) {
				t.Errorf("%s: WriteDump of the loaded filter differs from RedisBloom's stream", name)
			}
		}
	}
}

func TestDumpFileErrors(t *testing.T) {
	b, err := NewBloom(1000, 0.01, 2, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Add([]byte("x"))
	var buf bytes.Buffer
	if _, err := WriteDump(&buf, b); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	mod := func(i int, v byte) []byte { c := bytes.Clone(good); c[i] = v; return c }
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrDumpTrunc},
		{"bloomkit file", []byte("bloomkit" + strings.Repeat("\x00", 80)), ErrDumpMagic},
		{"bad kind", mod(8, 'X'), ErrDumpCorrupt},
		{"reserved", mod(10, 1), ErrDumpCorrupt},
		{"first record not the header", mod(12, 2), ErrDumpCorrupt},
		{"chunk too long", mod(23, 0x7f), ErrDumpCorrupt},
		{"cut in a chunk", good[:60], ErrDumpTrunc},
		{"cut before checksum", good[:len(good)-2], ErrDumpTrunc},
		{"flipped bit", mod(len(good)-30, good[len(good)-30]^1), ErrDumpChecksum},
	}
	for _, c := range cases {
		if _, err := ReadDump(bytes.NewReader(c.in), nil); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	refuse := errors.New("too big")
	if _, err := ReadDump(bytes.NewReader(good), func(uint64) error { return refuse }); !errors.Is(err, ErrDumpCorrupt) {
		t.Errorf("allow refusing: %v", err)
	}
	f, err := ReadDump(bytes.NewReader(good), nil)
	if err != nil || !f.Exists([]byte("x")) {
		t.Fatalf("round trip: %v", err)
	}
	d, _ := NewDumpReader(bytes.NewReader(good))
	n := 0
	for {
		_, _, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Errorf("%d records, want header and one chunk", n)
	}
}

func ExampleReadDump() {
	// A filter as BF.RESERVE makes it, saved as `bloom pull --format
	// scandump` saves a server's key, then tested without any server.
	b, err := NewBloom(1000, 0.01, 2, false, nil)
	if err != nil {
		panic(err)
	}
	b.Add([]byte("alice"))
	var file bytes.Buffer
	if _, err := WriteDump(&file, b); err != nil {
		panic(err)
	}
	f, err := ReadDump(&file, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(f.Exists([]byte("alice")), f.Exists([]byte("bob")))
	// Output: true false
}
