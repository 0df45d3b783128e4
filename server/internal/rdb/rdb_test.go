package rdb

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/bloomkit/bloomkit/cms"
	"github.com/bloomkit/bloomkit/topk"
	"hash/crc64"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/redisbloom"
)

func TestChecksumJones(t *testing.T) {
	// The check value Redis's crc64.c tests itself with.
	if got := Checksum(0, []byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("crc64(123456789) = %016x, want e9c6d914c4b8d9ca", got)
	}
	// Incremental equals whole.
	data := []byte(strings.Repeat("bloomkit", 100))
	if Checksum(Checksum(0, data[:333]), data[333:]) != Checksum(0, data) {
		t.Fatal("incremental checksum differs")
	}
	// Eight bytes at a time equals Go's crc64 with the same table (which
	// inverts before and after), at every length and split.
	rng := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, 3000)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for n := 0; n <= len(buf); n += 1 + n/8 {
		want := ^crc64.Update(^uint64(0), jonesTable, buf[:n])
		if got := Checksum(0, buf[:n]); got != want {
			t.Fatalf("%d bytes: %016x, want %016x", n, got, want)
		}
		cut := rng.IntN(n + 1)
		if got := Checksum(Checksum(0, buf[:cut]), buf[cut:n]); got != want {
			t.Fatalf("%d bytes split at %d: %016x, want %016x", n, cut, got, want)
		}
	}
}

func TestLZFRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	inputs := [][]byte{
		bytes.Repeat([]byte{0}, 100000),
		[]byte(strings.Repeat("abcabcabd", 1000)),
		[]byte("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
	}
	for range 50 {
		n := rng.IntN(5000) + 3
		b := make([]byte, n)
		alpha := rng.IntN(255) + 1
		for i := range b {
			b[i] = byte(rng.IntN(alpha))
		}
		inputs = append(inputs, b)
	}
	for i, in := range inputs {
		c := lzfCompress(in, len(in)+len(in)/16+64)
		if c == nil {
			t.Fatalf("input %d (%d bytes): no output within a generous limit", i, len(in))
		}
		out := make([]byte, len(in))
		if err := lzfDecompress(c, out); err != nil || !bytes.Equal(out, in) {
			t.Fatalf("input %d (%d bytes): round trip failed: %v", i, len(in), err)
		}
		// Within the limit the writer gives (len-4, or less), or nil.
		for _, limit := range []int{len(in) - 4, len(in) / 2, len(c), len(c) - 1, 3} {
			c := lzfCompress(in, limit)
			if c == nil {
				continue
			}
			clear(out)
			if len(c) > limit || lzfDecompress(c, out) != nil || !bytes.Equal(out, in) {
				t.Fatalf("input %d (%d bytes), limit %d: %d bytes that do not round-trip", i, len(in), limit, len(c))
			}
		}
	}
	if c := lzfCompress(bytes.Repeat([]byte{0}, 10000), 200); c == nil || len(c) > 200 {
		t.Fatalf("zeros compress to %d bytes", len(c))
	}
	// Random bytes do not fit in len-4: nil, the caller stores them raw.
	rnd := make([]byte, 1000)
	for i := range rnd {
		rnd[i] = byte(rng.Uint32())
	}
	if c := lzfCompress(rnd, len(rnd)-4); c != nil {
		t.Fatalf("random bytes compressed to %d bytes", len(c))
	}
}

func TestModuleTypeID(t *testing.T) {
	id, err := ModuleTypeID("MBbloom--", 4)
	if err != nil {
		t.Fatal(err)
	}
	name, ver := ModuleTypeName(id)
	if name != "MBbloom--" || ver != 4 {
		t.Fatalf("decoded %q %d", name, ver)
	}
	for _, bad := range []string{"short", "MBbloom-!", "MBbloom---"} {
		if _, err := ModuleTypeID(bad, 0); err == nil {
			t.Errorf("ModuleTypeID(%q) accepted", bad)
		}
	}
	if _, err := ModuleTypeID("MBbloom--", 1024); err == nil {
		t.Error("encoding version 1024 accepted")
	}
}

// testValue is a module value of every field kind, for round trips.
type testValue struct {
	U   uint64
	S   int64
	D   float64
	F   float32
	Str []byte
	Big []byte
}

const testModule = "bktest-00"

func (v *testValue) ModuleType() (string, int) { return testModule, 7 }

func (v *testValue) EncodeModule(m *ModuleWriter) error {
	m.SaveUnsigned(v.U)
	m.SaveSigned(v.S)
	m.SaveDouble(v.D)
	m.SaveFloat(v.F)
	m.SaveString(v.Str)
	m.SaveString(v.Big)
	return nil
}

type testDecoder struct{ maxBig uint64 }

func (d testDecoder) DecodeModule(m *ModuleReader, encver int) (any, error) {
	if encver != 7 {
		return nil, fmt.Errorf("encoding version %d", encver)
	}
	var v testValue
	var err error
	if v.U, err = m.LoadUnsigned(); err != nil {
		return nil, err
	}
	if v.S, err = m.LoadSigned(); err != nil {
		return nil, err
	}
	if v.D, err = m.LoadDouble(); err != nil {
		return nil, err
	}
	if v.F, err = m.LoadFloat(); err != nil {
		return nil, err
	}
	if v.Str, err = m.LoadString(100); err != nil {
		return nil, err
	}
	err = m.LoadStringInto(func(n uint64) ([]byte, error) {
		if n > d.maxBig {
			return nil, fmt.Errorf("big string of %d bytes refused", n)
		}
		v.Big = make([]byte, n)
		return v.Big, nil
	})
	return &v, err
}

// stringCases covers every string encoding the writer chooses.
var stringCases = [][]byte{
	[]byte(""), []byte("0"), []byte("-1"), []byte("127"), []byte("-128"), []byte("128"),
	[]byte("32767"), []byte("-32768"), []byte("32768"), []byte("2147483647"), []byte("-2147483648"),
	[]byte("2147483648"), []byte("9223372036854775807"), []byte("+5"), []byte("007"), []byte("-0"),
	[]byte("hello"), []byte(strings.Repeat("x", 63)), []byte(strings.Repeat("y", 64)),
	[]byte(strings.Repeat("z", 16383)), []byte(strings.Repeat("w", 16384)),
	[]byte(strings.Repeat("compress me ", 1000)), {0, 1, 2, 255, 254, 0},
}

func writeSample(t *testing.T, version int, compress bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, version)
	if err != nil {
		t.Fatal(err)
	}
	w.SetCompression(compress)
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check(w.Aux("redis-ver", "7.0.15"))
	check(w.Aux("redis-bits", "64"))
	check(w.SelectDB(0))
	check(w.ResizeDB(uint64(len(stringCases)+1), 1))
	for i, s := range stringCases {
		exp := int64(-1)
		if i == 3 {
			exp = 1893456000123
		}
		check(w.String([]byte(fmt.Sprintf("k%d", i)), s, exp))
	}
	check(w.Module([]byte("mod"), -1, &testValue{U: math.MaxUint64, S: -5, D: 0.25, F: 1.5,
		Str: []byte("12"), Big: bytes.Repeat([]byte{0, 0, 7}, 5000)}))
	check(w.SelectDB(3))
	check(w.String([]byte("in3"), []byte("v"), -1))
	check(w.Close())
	return buf.Bytes()
}

func readAll(t *testing.T, data []byte, opts Options) ([]*Entry, error) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data), opts)
	if err != nil {
		return nil, err
	}
	var out []*Entry
	for {
		e, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	for _, version := range []int{9, 10, 11, 12} {
		for _, compress := range []bool{false, true} {
			data := writeSample(t, version, compress)
			es, err := readAll(t, data, Options{Modules: map[string]ModuleDecoder{testModule: testDecoder{maxBig: 1 << 20}}})
			if err != nil {
				t.Fatalf("v%d: %v", version, err)
			}
			if es[0].Kind != KindAux || string(es[0].Key) != "redis-ver" || string(es[0].String) != "7.0.15" {
				t.Fatalf("first record %+v", es[0])
			}
			keys := es[2:]
			if len(keys) != len(stringCases)+2 {
				t.Fatalf("%d keys", len(keys))
			}
			for i, s := range stringCases {
				e := keys[i]
				if e.Kind != KindKey || e.Type != TypeString || string(e.Key) != fmt.Sprintf("k%d", i) || !bytes.Equal(e.String, s) || e.Err != nil {
					t.Fatalf("v%d key %d: %+v, want %q", version, i, e, s)
				}
				if (i == 3) != e.HasExpire || (i == 3 && e.ExpireAt != 1893456000123) {
					t.Fatalf("key %d expiry %v %d", i, e.HasExpire, e.ExpireAt)
				}
			}
			m := keys[len(stringCases)]
			want := &testValue{U: math.MaxUint64, S: -5, D: 0.25, F: 1.5, Str: []byte("12"), Big: bytes.Repeat([]byte{0, 0, 7}, 5000)}
			if m.Err != nil || m.Module != testModule || m.EncVer != 7 || !reflect.DeepEqual(m.Value, want) {
				t.Fatalf("module entry %+v err %v", m, m.Err)
			}
			if last := keys[len(keys)-1]; last.DB != 3 || string(last.Key) != "in3" {
				t.Fatalf("last %+v", last)
			}
		}
	}
}

func TestReaderModuleRefusedAndUnknown(t *testing.T) {
	data := writeSample(t, 10, true)
	// The decoder refuses the big string: the value is skipped, the stream goes on.
	es, err := readAll(t, data, Options{Modules: map[string]ModuleDecoder{testModule: testDecoder{maxBig: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	var me *ModuleError
	m := es[2+len(stringCases)]
	if !errors.As(m.Err, &me) || me.Module != testModule || string(me.Key) != "mod" || m.Value != nil {
		t.Fatalf("refused value: %+v", m)
	}
	if last := es[len(es)-1]; string(last.Key) != "in3" {
		t.Fatalf("stream did not go on: %+v", last)
	}
	// No decoder at all: a TypeError naming the module.
	es, err = readAll(t, data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var te *TypeError
	m = es[2+len(stringCases)]
	if !errors.As(m.Err, &te) || te.Module != testModule || !strings.Contains(m.Err.Error(), `"mod"`) {
		t.Fatalf("undecoded module: %+v", m)
	}
	// A decoder reading fields of the wrong kind: refused, stream goes on.
	es, err = readAll(t, data, Options{Modules: map[string]ModuleDecoder{testModule: wrongDecoder{}}})
	if err != nil {
		t.Fatal(err)
	}
	if m = es[2+len(stringCases)]; !errors.As(m.Err, &me) {
		t.Fatalf("wrong-kind decoder: %+v", m)
	}
	// A decoder reading too little: refused, stream goes on.
	es, err = readAll(t, data, Options{Modules: map[string]ModuleDecoder{testModule: shortDecoder{}}})
	if err != nil {
		t.Fatal(err)
	}
	if m = es[2+len(stringCases)]; !errors.As(m.Err, &me) || string(es[len(es)-1].Key) != "in3" {
		t.Fatalf("short decoder: %+v", m)
	}
}

type wrongDecoder struct{}

func (wrongDecoder) DecodeModule(m *ModuleReader, _ int) (any, error) {
	_, err := m.LoadDouble()
	return nil, err
}

type shortDecoder struct{}

func (shortDecoder) DecodeModule(m *ModuleReader, _ int) (any, error) {
	_, err := m.LoadUnsigned()
	return 1, err
}

func TestReaderLimitsAndCorruption(t *testing.T) {
	data := writeSample(t, 10, true)
	opts := Options{Modules: map[string]ModuleDecoder{testModule: testDecoder{maxBig: 1 << 20}}}
	// A key longer than MaxString is refused with ErrLimit.
	if _, err := readAll(t, data, Options{MaxString: 100}); !errors.Is(err, ErrLimit) {
		t.Fatalf("MaxString 100: %v", err)
	}
	// Every truncation is an error, never a panic or io.EOF.
	for n := 0; n < len(data); n += 1 + n/50 {
		_, err := readAll(t, data[:n], opts)
		if err == nil || err == io.EOF {
			t.Fatalf("truncated at %d of %d: %v", n, len(data), err)
		}
	}
	// A flipped byte in the body is caught (by the checksum at the latest).
	for _, at := range []int{20, len(data) / 2, len(data) - 12} {
		bad := bytes.Clone(data)
		bad[at] ^= 0x40
		if _, err := readAll(t, bad, opts); err == nil {
			t.Fatalf("byte %d flipped: no error", at)
		}
	}
	// A checksum of 0 means "not computed" (rdbchecksum no).
	nock := bytes.Clone(data)
	clear(nock[len(nock)-8:])
	if _, err := readAll(t, nock, opts); err != nil {
		t.Fatalf("zero checksum: %v", err)
	}
	bad := bytes.Clone(data)
	bad[len(bad)-1] ^= 1
	if _, err := readAll(t, bad, opts); !errors.Is(err, ErrChecksum) {
		t.Fatalf("wrong checksum: %v", err)
	}
	for _, hdr := range []string{"REDIS0013", "REDIS0000", "RADIS0010", "REDIS00x1"} {
		if _, err := NewReader(strings.NewReader(hdr), Options{}); err == nil {
			t.Errorf("header %q accepted", hdr)
		}
	}
}

func TestReaderLeavesWhatFollows(t *testing.T) {
	data := writeSample(t, 10, true)
	br := bufio.NewReader(io.MultiReader(bytes.NewReader(data), strings.NewReader("*1\r\n$4\r\nPING\r\n")))
	r, err := NewReader(br, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := r.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if r.Offset() != int64(len(data)) {
		t.Fatalf("offset %d, file %d", r.Offset(), len(data))
	}
	rest, _ := io.ReadAll(br)
	if string(rest) != "*1\r\n$4\r\nPING\r\n" {
		t.Fatalf("after the RDB: %q", rest)
	}
}

func TestDumpPayload(t *testing.T) {
	for _, s := range stringCases {
		p := DumpString(s, DumpVersion)
		e, err := ParseDump(p, Options{})
		if err != nil || e.Type != TypeString || !bytes.Equal(e.String, s) {
			t.Fatalf("%q: %+v %v", s, e, err)
		}
	}
	// Redis 7.0.15's DUMP of "hello" (RDB 10).
	redis := []byte("\x00\x05hello\n\x00cr\xdfve4 \n")
	if e, err := ParseDump(redis, Options{}); err != nil || string(e.String) != "hello" {
		t.Fatalf("Redis's payload: %+v %v", e, err)
	}
	if got := DumpString([]byte("hello"), 10); !bytes.Equal(got, redis) {
		t.Fatalf("DumpString(hello, 10) = %q, Redis writes %q", got, redis)
	}
	v := &testValue{U: 1, Big: []byte("abc")}
	p, err := DumpModule(v, DumpVersion)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ParseDump(p, Options{Modules: map[string]ModuleDecoder{testModule: testDecoder{maxBig: 10}}})
	if err != nil || !reflect.DeepEqual(e.Value, &testValue{U: 1, Str: []byte{}, Big: []byte("abc")}) {
		t.Fatalf("module dump: %+v %v", e, err)
	}
	bad := bytes.Clone(p)
	bad[3] ^= 1
	if _, err := ParseDump(bad, Options{}); !errors.Is(err, ErrDumpFooter) {
		t.Fatalf("bad checksum: %v", err)
	}
	v12 := DumpString([]byte("twelve"), 12)
	v9 := WithDumpVersion(v12, 9)
	if !bytes.Equal(v9, DumpString([]byte("twelve"), 9)) || bytes.Equal(v12, v9) {
		t.Fatalf("WithDumpVersion: %q from %q", v9, v12)
	}
	newer := DumpString([]byte("x"), MaxVersion+1)
	if _, err := ParseDump(newer, Options{}); !errors.Is(err, ErrDumpFooter) {
		t.Fatalf("newer version: %v", err)
	}
	// A valid footer around garbage: bad data format.
	junk := []byte{0xee, 1, 2}
	junk = append(junk, 10, 0)
	junk = append(junk, make([]byte, 8)...)
	crc := Checksum(0, junk[:len(junk)-8])
	for i := range 8 {
		junk[len(junk)-8+i] = byte(crc >> (8 * i))
	}
	if _, err := ParseDump(junk, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("garbage value: %v", err)
	}
}

func FuzzReader(f *testing.F) {
	t := &testing.T{}
	f.Add(writeSample(t, 10, true))
	f.Add(writeSample(t, 12, false))
	f.Add([]byte("REDIS0010\xff\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Add(sampleWithFilters(t))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data), fuzzOptions())
		if err != nil {
			return
		}
		for range 10000 {
			if _, err := r.Next(); err != nil {
				return
			}
		}
	})
}

func FuzzParseDump(f *testing.F) {
	f.Add(DumpString([]byte("hello"), 10))
	f.Add(DumpString([]byte(strings.Repeat("ab", 100)), 10))
	p, _ := DumpModule(&testValue{Big: []byte("x")}, 9)
	f.Add(p)
	b, _ := redisbloom.NewBloom(10, 0.1, 2, false, nil)
	p, _ = DumpModule(BloomValue{b}, 10)
	f.Add(p)
	c, _ := redisbloom.NewCuckoo(10, 2, 20, 2, nil)
	p, _ = DumpModule(CuckooValue{c}, 10)
	f.Add(p)
	sk, _ := cms.New(5, 2)
	sk.IncrByString("x", 3)
	p, _ = DumpModule(CMSValue{sk}, 10)
	f.Add(p)
	tk, _ := topk.New(2, 4, 2, 0.9)
	tk.AddString("x")
	p, _ = DumpModule(TopKValue{tk}, 10)
	f.Add(p)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParseDump(data, fuzzOptions())
	})
}

// fuzzOptions bounds everything a fuzzed stream may make the reader
// allocate: strings to 64 KiB, filters to 1 MiB in all.
func fuzzOptions() Options {
	var total uint64
	opts := Options{MaxString: 1 << 16, Modules: map[string]ModuleDecoder{testModule: testDecoder{maxBig: 1 << 16}}}
	budget := func(n uint64) error {
		if total += n; total > 1<<20 {
			return errors.New("over the fuzz budget")
		}
		return nil
	}
	AddRedisBloomDecoders(&opts, budget)
	AddSketchDecoders(&opts, budget)
	return opts
}

// sampleWithFilters is an RDB holding one filter of each family.
func sampleWithFilters(t *testing.T) []byte {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, 11)
	b, _ := redisbloom.NewBloom(10, 0.1, 2, false, nil)
	for i := range 30 {
		b.Add([]byte{byte(i)})
	}
	c, _ := redisbloom.NewCuckoo(10, 2, 20, 2, nil)
	w.Module([]byte("b"), 5, BloomValue{b})
	w.Module([]byte("c"), -1, CuckooValue{c})
	w.Close()
	return buf.Bytes()
}

// TestReaderPassesOverEveryType writes values of every type Redis 6.2 to
// 7.4 saves, in their exact layouts (as rdb.c's loader reads them), each
// followed by a string key: the reader names each type, passes over it
// exactly and reads the string after it.
func TestReaderPassesOverEveryType(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, 12)
	if err != nil {
		t.Fatal(err)
	}
	o := &w.out
	s := func(v string) { o.str([]byte(v)) }
	n := func(v uint64) { o.length(v) }
	raw := func(k int) { o.write(make([]byte, k)) }
	cases := []struct {
		t    byte
		name string
		body func()
	}{
		{1, "list", func() { n(2); s("a"); s("12") }},
		{2, "set", func() { n(1); s("m") }},
		{3, "zset", func() {
			n(3)
			s("a")
			o.byte(3)
			o.write([]byte("1.5"))
			s("b")
			o.byte(254)
			s("c")
			o.byte(253)
		}},
		{4, "hash", func() { n(1); s("f"); s("v") }},
		{5, "zset", func() { n(1); s("a"); raw(8) }},
		{7, "module", func() {
			id, _ := ModuleTypeID("other-mod", 3)
			n(id)
			n(modUint)
			n(5)
			n(modSigned)
			n(7)
			n(modFloat)
			raw(4)
			n(modDouble)
			raw(8)
			n(modString)
			s("x")
			n(modEOF)
		}},
		{9, "hash", func() { s("zipmap") }},
		{10, "list", func() { s("ziplist") }},
		{11, "set", func() { s("intset") }},
		{12, "zset", func() { s("ziplist") }},
		{13, "hash", func() { s("ziplist") }},
		{14, "list", func() { n(2); s("zl1"); s(strings.Repeat("z", 100)) }},
		{16, "hash", func() { s("listpack") }},
		{17, "zset", func() { s("listpack") }},
		{18, "list", func() { n(2); n(2); s("lp"); n(1); s("plain node") }},
		{20, "set", func() { s("listpack") }},
		{22, "hash", func() {
			n(2)
			n(0)
			s("f")
			s("v")
			n(1700000000000)
			s("g")
			s("w")
		}},
		{23, "hash", func() { s("listpack ex") }},
		{24, "hash", func() { raw(8); n(1); n(5); s("f"); s("v") }},
		{25, "hash", func() { raw(8); s("listpack ex") }},
		{15, "stream", func() { streamBody(o, 15) }},
		{19, "stream", func() { streamBody(o, 19) }},
		{21, "stream", func() { streamBody(o, 21) }},
	}
	for i, c := range cases {
		o.byte(c.t)
		s(fmt.Sprintf("key%d", i))
		c.body()
		if err := w.String([]byte(fmt.Sprintf("after%d", i)), []byte("ok"), -1); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	es, err := readAll(t, buf.Bytes(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2*len(cases) {
		t.Fatalf("%d records for %d cases", len(es), len(cases))
	}
	for i, c := range cases {
		var te *TypeError
		e, after := es[2*i], es[2*i+1]
		if !errors.As(e.Err, &te) || te.Name != c.name || te.Type != c.t || string(te.Key) != fmt.Sprintf("key%d", i) {
			t.Errorf("type %d: %+v (%v)", c.t, e, e.Err)
		}
		if c.t == 7 && te.Module != "other-mod" {
			t.Errorf("module named %q", te.Module)
		}
		if string(after.Key) != fmt.Sprintf("after%d", i) || string(after.String) != "ok" {
			t.Fatalf("after type %d: %+v", c.t, after)
		}
	}
}

// streamBody writes a stream of RDB type t (15: Redis 5-6.2, 19: 7.0,
// 21: 7.2+) with a listpack, a consumer group, a pending entry and a
// consumer.
func streamBody(o *output, t byte) {
	n := func(v uint64) { o.length(v) }
	s := func(v string) { o.str([]byte(v)) }
	n(1)
	s(string(make([]byte, 16)))
	s("listpack")
	n(3)
	n(1700000000000)
	n(0)
	if t >= 19 {
		n(1700000000000)
		n(0)
		n(0)
		n(0)
		n(3)
	}
	n(1) // groups
	s("g")
	n(1700000000000)
	n(0)
	if t >= 19 {
		n(2)
	}
	n(1) // PEL
	o.write(make([]byte, 16+8))
	n(1)
	n(1) // consumers
	s("c1")
	o.write(make([]byte, 8))
	if t >= 21 {
		o.write(make([]byte, 8))
	}
	n(1)
	o.write(make([]byte, 16))
}

// TestLargeStringsCompressedWhenWorthIt: a large string is LZF-compressed
// when its start compresses (an empty filter's zeros) and stored raw
// without compressing it all when not (a used filter's random bits).
func TestLargeStringsCompressedWhenWorthIt(t *testing.T) {
	zeros := make([]byte, 4<<20)
	random := make([]byte, 4<<20)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	for _, c := range []struct {
		data       []byte
		compressed bool
	}{{zeros, true}, {random, false}} {
		p := DumpString(c.data, DumpVersion)
		if got := len(p) < len(c.data)/2; got != c.compressed {
			t.Errorf("%d bytes dumped as %d", len(c.data), len(p))
		}
		e, err := ParseDump(p, Options{})
		if err != nil || !bytes.Equal(e.String, c.data) {
			t.Fatalf("round trip: %v", err)
		}
	}
}

// TestReaderKeyAttributes: the expiry in seconds of old files, the LRU
// idle time and the LFU frequency are given with the key they precede,
// and not with the next one; RESIZEDB, SLOT_INFO and module aux data are
// passed over.
func TestReaderKeyAttributes(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, 12)
	o := &w.out
	o.byte(opResizeDB)
	o.length(3)
	o.length(1)
	o.byte(opSlotInfo)
	o.length(1)
	o.length(2)
	o.length(3)
	o.byte(opModuleAux)
	id, _ := ModuleTypeID("other-mod", 1)
	o.length(id)
	o.length(modUint)
	o.length(2)
	o.length(modString)
	o.str([]byte("aux data"))
	o.length(modEOF)
	o.byte(opExpireTime)
	o.write([]byte{0x40, 0x9f, 0xdc, 0x70}) // 1893506880 s, little-endian
	o.byte(opIdle)
	o.length(77)
	w.String([]byte("a"), []byte("1"), -1)
	o.byte(opFreq)
	o.byte(9)
	w.String([]byte("b"), []byte("2"), -1)
	w.String([]byte("c"), []byte("3"), -1)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	es, err := readAll(t, buf.Bytes(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 4 || es[0].Kind != KindModuleAux || es[0].Module != "other-mod" || es[0].EncVer != 1 {
		t.Fatalf("records %+v", es)
	}
	a, b, c := es[1], es[2], es[3]
	if !a.HasExpire || a.ExpireAt != 1893506880000 || a.Idle != 77 || a.Freq != -1 {
		t.Errorf("a: %+v", a)
	}
	if b.HasExpire || b.Idle != -1 || b.Freq != 9 {
		t.Errorf("b: %+v", b)
	}
	if c.HasExpire || c.Idle != -1 || c.Freq != -1 {
		t.Errorf("c: %+v", c)
	}
}

// The RESIZEDB hints reach Options.ResizeDB with their database, and the
// records read are the same with it as without.
func TestReaderResizeDBHint(t *testing.T) {
	data := writeSample(t, 10, false)
	type hint struct {
		db            int
		keys, expires uint64
	}
	var got []hint
	opts := Options{ResizeDB: func(db int, keys, expires uint64) { got = append(got, hint{db, keys, expires}) }}
	with, err := readAll(t, data, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []hint{{0, uint64(len(stringCases) + 1), 1}}
	if len(got) != len(want) || got[0] != want[0] {
		t.Fatalf("hints %v, want %v", got, want)
	}
	without, err := readAll(t, data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(with) != len(without) {
		t.Fatalf("%d records with the hint callback, %d without", len(with), len(without))
	}
}

// With Options.Reuse, Next returns one Entry overwritten each time, whose
// contents are each time those of the new Entry it returns without.
func TestReaderReuse(t *testing.T) {
	data := writeSample(t, 10, true)
	want, err := readAll(t, data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(data), Options{Reuse: true})
	if err != nil {
		t.Fatal(err)
	}
	var first *Entry
	keys := 0
	for i := 0; ; i++ {
		e, err := r.Next()
		if err == io.EOF {
			if i != len(want) {
				t.Fatalf("%d records with Reuse, %d without", i, len(want))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(want) || !reflect.DeepEqual(*e, *want[i]) {
			t.Fatalf("record %d with Reuse: %+v; without: %+v", i, *e, want[min(i, len(want)-1)])
		}
		if e.Kind == KindKey {
			if first == nil {
				first = e
			} else if e != first {
				t.Fatalf("record %d: a new Entry with Reuse", i)
			}
			keys++
		}
	}
	if keys < 2 {
		t.Fatalf("the sample holds %d keys", keys)
	}
}
