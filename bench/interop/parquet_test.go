//go:build parquet

package interop

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/parquet-go/parquet-go"
	pqbloom "github.com/parquet-go/parquet-go/bloom"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	pqformat "github.com/parquet-go/parquet-go/format"

	"github.com/bloomkit/bloomkit/bloom"
)

// The split-block filter (bloom.SplitBlock) against parquet-go's, a
// Parquet implementation with its own XXH64 and its own (assembly) filter
// code: each side reads the other's bitset and both answer alike for
// inserted and absent keys; and the Bloom filters of a real Parquet file
// that parquet-go writes read with bloom.ReadParquet.

const parquetKeys = 50_000

// theirHash is parquet-go's XXH64 of a key.
func theirHash(k []byte) uint64 { return pqbloom.XXH64{}.Sum64(k) }

// sameAnswers checks that ours and theirs answer alike for keys 0 to
// 2·parquetKeys (the first half inserted), that no inserted key tests
// absent, and reports the false positives.
func sameAnswers(t *testing.T, ours *bloom.SplitBlock, theirs pqbloom.SplitBlockFilter) {
	t.Helper()
	fp := 0
	for i := range 2 * parquetKeys {
		k := key(i)
		o, th := ours.Test(k), theirs.Check(theirHash(k))
		if o != th {
			t.Fatalf("key %d: ours says %v, parquet-go %v", i, o, th)
		}
		if i < parquetKeys && !o {
			t.Fatalf("key %d was inserted and tests absent", i)
		}
		if i >= parquetKeys && o {
			fp++
		}
	}
	t.Logf("%d blocks: %d of %d absent keys test present in both", len(theirs), fp, parquetKeys)
}

// TestParquetHashes: bloom.SplitBlockHash is parquet-go's XXH64, for keys
// of every length class.
func TestParquetHashes(t *testing.T) {
	for i := range 10_000 {
		k := key(i)
		if bloom.SplitBlockHash(k) != theirHash(k) {
			t.Fatalf("key %d (%d bytes): hashes differ", i, len(k))
		}
	}
	for n := range 300 {
		k := bytes.Repeat([]byte{byte(n)}, n)
		if bloom.SplitBlockHash(k) != theirHash(k) || bloom.SplitBlockHashString(string(k)) != theirHash(k) {
			t.Fatalf("%d bytes: hashes differ", n)
		}
	}
}

// TestParquetOursReadByTheirs: filters built here, of a power-of-two size
// (NewSplitBlock) and of one that is not, are read by parquet-go from the
// bitset and answer alike.
func TestParquetOursReadByTheirs(t *testing.T) {
	sized, err := bloom.NewSplitBlock(parquetKeys, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	odd, err := bloom.NewSplitBlockFromParams(bloom.Params{M: 1999 * bloom.SplitBlockBits})
	if err != nil {
		t.Fatal(err)
	}
	for _, ours := range []*bloom.SplitBlock{sized, odd} {
		var ks [][]byte
		for i := range parquetKeys {
			ks = append(ks, key(i))
		}
		bloom.AddMany(ours, ks[:parquetKeys/2])
		for _, k := range ks[parquetKeys/2:] {
			ours.Add(k)
		}
		theirs := pqbloom.MakeSplitBlockFilter(ours.AppendBitset(nil))
		sameAnswers(t, ours, theirs)
	}
}

// TestParquetTheirsReadByOurs: filters parquet-go builds, by Insert and by
// its vectorised InsertBulk, at a size that is not a power of two, read
// here from the bitset, answer alike, and hold the same bits as ours built
// from the same keys.
func TestParquetTheirsReadByOurs(t *testing.T) {
	theirs := make(pqbloom.SplitBlockFilter, pqbloom.NumSplitBlocksOf(parquetKeys, 10))
	var hs []uint64
	for i := range parquetKeys {
		hs = append(hs, theirHash(key(i)))
	}
	theirs.InsertBulk(hs[:parquetKeys/2])
	for _, h := range hs[parquetKeys/2:] {
		theirs.Insert(h)
	}
	ours, err := bloom.SplitBlockFromBitset(theirs.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	sameAnswers(t, ours, theirs)
	mine, _ := bloom.NewSplitBlockFromParams(bloom.Params{M: uint64(len(theirs)) * bloom.SplitBlockBits})
	for i := range parquetKeys {
		mine.Add(key(i))
	}
	if !bytes.Equal(mine.AppendBitset(nil), theirs.Bytes()) {
		t.Error("the same keys give different bitsets")
	}
}

// TestParquetHeaderTheirThrift: parquet-go's Thrift decoder reads the
// BloomFilterHeader WriteParquet writes, and ReadParquet reads the one
// parquet-go's encoder writes.
func TestParquetHeaderTheirThrift(t *testing.T) {
	ours, _ := bloom.NewSplitBlock(1000, 0.01)
	for i := range 1000 {
		ours.Add(key(i))
	}
	var buf bytes.Buffer
	if _, err := ours.WriteParquet(&buf); err != nil {
		t.Fatal(err)
	}
	hdrLen := buf.Len() - ours.Len()
	var h pqformat.BloomFilterHeader
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), buf.Bytes()[:hdrLen], &h); err != nil {
		t.Fatal(err)
	}
	_, block := h.Algorithm.Value.(*pqformat.SplitBlockAlgorithm)
	_, xx := h.Hash.Value.(*pqformat.XxHash)
	_, plain := h.Compression.Value.(*pqformat.BloomFilterUncompressed)
	if int(h.NumBytes) != ours.Len() || !block || !xx || !plain {
		t.Fatalf("parquet-go reads our header as %+v", h)
	}

	theirHdr, err := thrift.Marshal(new(thrift.CompactProtocol), &pqformat.BloomFilterHeader{
		NumBytes:    int32(ours.Len()),
		Algorithm:   pqformat.BloomFilterAlgorithm{Value: &pqformat.SplitBlockAlgorithm{}},
		Hash:        pqformat.BloomFilterHash{Value: &pqformat.XxHash{}},
		Compression: pqformat.BloomFilterCompression{Value: &pqformat.BloomFilterUncompressed{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	back, err := bloom.ReadParquet(bytes.NewReader(append(theirHdr, ours.AppendBitset(nil)...)))
	if err != nil {
		t.Fatal(err)
	}
	// The same bits; the plan (Params N and P) is not in Parquet's data.
	if !bytes.Equal(back.AppendBitset(nil), ours.AppendBitset(nil)) {
		t.Fatal("ReadParquet of parquet-go's header gives other bits")
	}
}

// TestParquetFile: parquet-go writes a real Parquet file with Bloom
// filters on a BYTE_ARRAY and an INT64 column in three row groups;
// bloom.ReadParquet reads each column chunk's filter at its
// bloom_filter_offset, finds every value of the row group (keyed by its
// plain encoding: a string's bytes, an int64's 8 little-endian bytes), and
// answers as parquet-go's own reader does for values that are absent.
func TestParquetFile(t *testing.T) {
	type row struct {
		Name string `parquet:"name"`
		ID   int64  `parquet:"id"`
	}
	const rows, perGroup = 30_000, 10_000
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[row](&buf,
		parquet.BloomFilters(parquet.SplitBlockFilter(10, "name"), parquet.SplitBlockFilter(10, "id")),
		parquet.MaxRowsPerRowGroup(perGroup))
	for i := range rows {
		if _, err := w.Write([]row{{Name: fmt.Sprintf("user-%d@example.com", i), ID: int64(i) * 7919}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	file, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	groups := file.Metadata().RowGroups
	if len(groups) != rows/perGroup {
		t.Fatalf("%d row groups", len(groups))
	}
	le := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	for g, rg := range groups {
		for c, col := range rg.Columns {
			md := col.MetaData
			if md.BloomFilterOffset == 0 {
				t.Fatalf("row group %d column %d has no Bloom filter", g, c)
			}
			r := io.NewSectionReader(bytes.NewReader(buf.Bytes()), md.BloomFilterOffset, int64(md.BloomFilterLength))
			ours, err := bloom.ReadParquet(r)
			if err != nil {
				t.Fatalf("row group %d column %d: %v", g, c, err)
			}
			if left := r.Size() - must(r.Seek(0, io.SeekCurrent)); left != 0 {
				t.Errorf("row group %d column %d: %d bytes of the Bloom filter data left unread", g, c, left)
			}
			theirs := file.RowGroups()[g].ColumnChunks()[c].BloomFilter()
			name := md.PathInSchema[0]
			fp := 0
			for i := range rows {
				var o bool
				var v parquet.Value
				if name == "name" {
					s := fmt.Sprintf("user-%d@example.com", i)
					o, v = ours.TestString(s), parquet.ValueOf(s)
				} else {
					id := int64(i) * 7919
					o, v = ours.Test(le(id)), parquet.ValueOf(id)
				}
				inGroup := i/perGroup == g
				if inGroup && !o {
					t.Fatalf("row group %d %s: value %d is there and tests absent", g, name, i)
				}
				th, err := theirs.Check(v)
				if err != nil {
					t.Fatal(err)
				}
				if th != o {
					t.Fatalf("row group %d %s: value %d: ours %v, parquet-go %v", g, name, i, o, th)
				}
				if !inGroup && o {
					fp++
				}
			}
			t.Logf("row group %d %s: %d-byte filter, %d of %d other groups' values test present", g, name, ours.Len(), fp, rows-perGroup)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestParquetReadsGolden: parquet-go reads the bitset of the golden file
// that bloom's tests pin byte for byte, and answers as we do. make test
// checks our writer against that file every run; this links the file to
// a real Parquet implementation.
func TestParquetReadsGolden(t *testing.T) {
	b, err := os.ReadFile("../../bloom/testdata/golden/splitblock-v1.bloom")
	if err != nil {
		t.Fatal(err)
	}
	var ours bloom.SplitBlock
	if err := ours.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	theirs := pqbloom.MakeSplitBlockFilter(ours.AppendBitset(nil))
	// The keys bloom's golden files hold (bloom/encoding_test.go), then
	// keys never added.
	golden := func(set string, i int) []byte {
		return []byte("https://" + set + ".example.com/articles/" + strconv.Itoa(i) + "?ref=feed")
	}
	fp := 0
	for i := range 21_000 {
		k := golden("golden", i)
		if i >= 1000 {
			k = golden("never-added", i-1000)
		}
		o, th := ours.Test(k), theirs.Check(theirHash(k))
		if o != th {
			t.Fatalf("key %q: ours says %v, parquet-go %v", k, o, th)
		}
		if i < 1000 && !o {
			t.Fatalf("golden key %q tests absent", k)
		}
		if i >= 1000 && o {
			fp++
		}
	}
	t.Logf("%d blocks: the 1,000 golden keys present in both, %d of 20,000 others", len(theirs), fp)
}
