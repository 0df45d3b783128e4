package tdigest

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"errors"
	"flag"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/bloomkit/bloomkit/internal/format"
)

var update = flag.Bool("update", false, "write golden files that are missing (never overwrites)")

// goldenDigest is built the same way in every version of this package:
// merged centroids and a non-empty buffer.
func goldenDigest(t testing.TB) *Digest {
	d, err := New(20)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 12))
	for i := range 500 {
		if err := d.Add(math.Round(r.NormFloat64()*1000) / 8); err != nil {
			t.Fatal(err)
		}
		if i == 450 {
			d.Quantile(0.5)
		}
	}
	return d
}

// TestGolden pins the file bytes: a digest built the same way encodes to
// the stored file, and the stored file decodes to an equal digest.
func TestGolden(t *testing.T) {
	d := goldenDigest(t)
	if d.Info().UnmergedNodes == 0 || d.Info().MergedNodes == 0 {
		t.Fatalf("golden digest should hold both centroids and a buffer: %+v", d.Info())
	}
	b, err := d.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "golden", "compression20.tdigest")
	want, err := os.ReadFile(path)
	if os.IsNotExist(err) && *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Fatal("encoding differs from the golden file")
	}
	g, err := Read(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	if !g.Equal(d) {
		t.Fatal("golden file decodes to a different digest")
	}
}

// TestRoundTripEvolves: a digest read back answers and evolves bit for bit
// as the one written, buffer included.
func TestRoundTripEvolves(t *testing.T) {
	for _, n := range []int{0, 1, 2, 300, 5000} {
		d, _ := New(DefaultCompression)
		for i := range n {
			_ = d.Add(float64(i%97) * 1.5)
		}
		b, err := d.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		e := new(Digest)
		if err := e.UnmarshalBinary(b); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if !e.Equal(d) {
			t.Fatalf("n=%d: decoded digest differs", n)
		}
		for i := range 1000 {
			_ = d.Add(float64(i) / 3)
			_ = e.Add(float64(i) / 3)
		}
		if !e.Equal(d) || math.Float64bits(e.Quantile(0.3)) != math.Float64bits(d.Quantile(0.3)) {
			t.Fatalf("n=%d: digests diverged after the same adds", n)
		}
	}
}

func TestStdEncoders(t *testing.T) {
	d := goldenDigest(t)
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(d); err != nil {
		t.Fatal(err)
	}
	var g Digest
	if err := gob.NewDecoder(&buf).Decode(&g); err != nil {
		t.Fatal(err)
	}
	if !g.Equal(d) {
		t.Fatal("gob round trip differs")
	}
	j, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var h Digest
	if err := json.Unmarshal(j, &h); err != nil {
		t.Fatal(err)
	}
	if !h.Equal(d) {
		t.Fatal("JSON round trip differs")
	}
	if err := h.UnmarshalBinary([]byte("bloomkit")); err == nil || !h.Equal(d) {
		t.Fatal("a failed decode must leave the digest unchanged")
	}
	if _, err := new(Digest).MarshalBinary(); !errors.Is(err, ErrZero) {
		t.Fatalf("zero digest: %v", err)
	}
}

// resign recomputes both checksums, so that only the decoder's own checks
// can refuse a forged file.
func resign(b []byte) []byte {
	binary.LittleEndian.PutUint32(b[72:], crc32.Checksum(b[:72], format.Castagnoli))
	n := len(b) - 4
	binary.LittleEndian.PutUint32(b[n:], crc32.Checksum(b[:n], format.Castagnoli))
	return b
}

func TestDecodeRejects(t *testing.T) {
	d := goldenDigest(t)
	good, _ := d.MarshalBinary()
	nn := d.Info().MergedNodes + d.Info().UnmergedNodes
	hdr := format.HeaderSize
	w := func(i int) int { return hdr + 8*i }
	cases := []struct {
		name string
		edit func(b []byte) []byte
		want error
	}{
		{"flipped payload bit", func(b []byte) []byte { b[w(7)] ^= 1; return b }, ErrChecksum},
		{"truncated", func(b []byte) []byte { return b[:len(b)-9] }, ErrTruncated},
		{"compression 0", func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[48:], math.Float64bits(0))
			return resign(b)
		}, ErrCorrupt},
		{"capacity mismatch", func(b []byte) []byte { binary.LittleEndian.PutUint64(b[24:], 1<<40); return resign(b) }, ErrCorrupt},
		{"node counts", func(b []byte) []byte { binary.LittleEndian.PutUint64(b[w(0):], 1<<31); return resign(b) }, ErrCorrupt},
		{"zero weight", func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[w(metaWords+nn):], 0)
			return resign(b)
		}, ErrCorrupt},
		{"NaN mean", func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[w(metaWords):], math.Float64bits(math.NaN()))
			return resign(b)
		}, ErrCorrupt},
		{"weights disagree", func(b []byte) []byte { binary.LittleEndian.PutUint64(b[w(2):], 3); return resign(b) }, ErrCorrupt},
		{"wrong type", func(b []byte) []byte { b[10] = format.TypeCuckoo; return resign(b) }, ErrType},
		{"huge payload", func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[64:], 1<<39)
			return resign(b)
		}, ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.edit(append([]byte(nil), good...))
			_, err := Read(bytes.NewReader(b))
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

// FuzzDecode: no input may panic the decoder or make it allocate without
// bound; what decodes answers queries, accepts values and re-encodes to
// the same bytes.
func FuzzDecode(f *testing.F) {
	good, _ := goldenDigest(f).MarshalBinary()
	f.Add(good)
	f.Add(good[:format.HeaderSize])
	e, _ := New(1)
	b, _ := e.MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Digest
		if err := d.UnmarshalBinary(data); err != nil {
			for _, e := range []error{ErrBadMagic, ErrVersion, ErrType, ErrHash, ErrCorrupt, ErrChecksum, ErrTruncated, ErrTooLarge} {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("undocumented error %v", err)
		}
		again, err := d.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, data) {
			t.Fatal("decoded digest re-encodes differently")
		}
		d.Quantiles([]float64{0, 0.5, 1}, nil)
		d.CDF(0)
		d.Rank(1)
		d.ByRevRank(2)
		d.TrimmedMean(0.1, 0.9)
		for i := range 50 {
			_ = d.Add(float64(i))
		}
	})
}
