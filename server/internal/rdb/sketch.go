package rdb

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/bloomkit/bloomkit/cms"
	"github.com/bloomkit/bloomkit/topk"
)

// RedisBloom's Count-Min Sketch (CMSk-TYPE) and Top-K (TopK-TYPE) module
// values, encoding version 0, field for field as its rm_cms.c and
// rm_topk.c save and load them:
//
//	CMSk-TYPE: width, depth, count (unsigned); the counters, row after
//	row, as one string of little-endian 32-bit words.
//	TopK-TYPE: k, width, depth (unsigned), decay (double); the buckets as
//	one string of (fingerprint, count) 32-bit pairs; the heap as one
//	string of k 24-byte C structs (fingerprint, item length, item pointer,
//	count, padding); then each slot's item as a C string with its NUL
//	("" alone for an empty slot).
//
// A Top-K's random generator is not part of RedisBloom's encoding: a
// decoded one starts from topk.InitialSeed, so two servers that load the
// same value make the same draws afterwards.

// Module type names and encoding versions.
const (
	CMSModuleType  = "CMSk-TYPE"
	TopKModuleType = "TopK-TYPE"
	SketchEncVer   = 0
)

// AddSketchDecoders adds decoders for RedisBloom's Count-Min Sketch and
// Top-K to opts.Modules: values decode to *cms.Sketch and *topk.TopK.
// allow (may be nil) is asked before each array is allocated, with its
// size in bytes.
func AddSketchDecoders(opts *Options, allow func(uint64) error) {
	if opts.Modules == nil {
		opts.Modules = map[string]ModuleDecoder{}
	}
	opts.Modules[CMSModuleType] = cmsDecoder{allow}
	opts.Modules[TopKModuleType] = topkDecoder{allow}
}

func sketchErr(format string, a ...any) error {
	return fmt.Errorf("rdb: "+format+": %w", append(a, ErrCorrupt)...)
}

// loadArray reads a string field that must be exactly want bytes long,
// once allow agrees to want bytes; the reader's MaxString bounds it too,
// so a forged length costs nothing before its bytes arrive.
func loadArray(m *ModuleReader, allow func(uint64) error, want uint64, what string) ([]byte, error) {
	if allow != nil {
		if err := allow(want); err != nil {
			return nil, err
		}
	}
	b, err := m.LoadString(want)
	if err != nil {
		return nil, err
	}
	if uint64(len(b)) != want {
		return nil, sketchErr("%s of %d bytes, want %d", what, len(b), want)
	}
	return b, nil
}

type cmsDecoder struct{ allow func(uint64) error }

func (d cmsDecoder) DecodeModule(m *ModuleReader, encver int) (any, error) {
	if encver != SketchEncVer {
		return nil, sketchErr("%s encoding version %d (only %d is read)", CMSModuleType, encver, SketchEncVer)
	}
	var f [3]uint64 // width, depth, count
	for i := range f {
		var err error
		if f[i], err = m.LoadUnsigned(); err != nil {
			return nil, err
		}
	}
	w, dp := f[0], f[1]
	if w == 0 || dp == 0 || w > cms.MaxCells/dp {
		return nil, sketchErr("count-min sketch of %d × %d counters", w, dp)
	}
	raw, err := loadArray(m, d.allow, 4*w*dp, "counters")
	if err != nil {
		return nil, err
	}
	counters := make([]uint32, w*dp)
	for i := range counters {
		counters[i] = binary.LittleEndian.Uint32(raw[4*i:])
	}
	return cms.FromCounters(w, dp, f[2], counters)
}

// CMSValue is a Count-Min Sketch as a module value to write.
type CMSValue struct{ *cms.Sketch }

// ModuleType implements ModuleEncoder.
func (CMSValue) ModuleType() (string, int) { return CMSModuleType, SketchEncVer }

// EncodeModule implements ModuleEncoder.
func (v CMSValue) EncodeModule(m *ModuleWriter) error {
	m.SaveUnsigned(v.Width())
	m.SaveUnsigned(v.Depth())
	m.SaveUnsigned(v.Count())
	c := v.Counters()
	b := make([]byte, 4*len(c))
	for i, x := range c {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	m.SaveString(b)
	return m.Err()
}

// heapSlotSize is sizeof(HeapBucket) in RedisBloom on 64-bit machines.
const heapSlotSize = 24

type topkDecoder struct{ allow func(uint64) error }

func (d topkDecoder) DecodeModule(m *ModuleReader, encver int) (any, error) {
	if encver != SketchEncVer {
		return nil, sketchErr("%s encoding version %d (only %d is read)", TopKModuleType, encver, SketchEncVer)
	}
	var f [3]uint64 // k, width, depth
	for i := range f {
		var err error
		if f[i], err = m.LoadUnsigned(); err != nil {
			return nil, err
		}
	}
	decay, err := m.LoadDouble()
	if err != nil {
		return nil, err
	}
	k, w, dp := f[0], f[1], f[2]
	if k == 0 || w == 0 || dp == 0 || k > math.MaxUint32 || w > math.MaxUint32 || dp > math.MaxUint32 ||
		w*dp > topk.MaxBuckets || !(decay > 0 && decay <= 1) {
		return nil, sketchErr("top-k of k %d, %d × %d buckets, decay %v", k, w, dp, decay)
	}
	data, err := loadArray(m, d.allow, 8*w*dp, "buckets")
	if err != nil {
		return nil, err
	}
	heap, err := loadArray(m, d.allow, heapSlotSize*k, "heap")
	if err != nil {
		return nil, err
	}
	st := topk.State{K: uint32(k), Width: uint32(w), Depth: uint32(dp), Decay: decay, RNG: topk.InitialSeed,
		Buckets: make([]topk.Bucket, w*dp), Heap: make([]topk.Slot, k)}
	for i := range st.Buckets {
		st.Buckets[i] = topk.Bucket{Fingerprint: binary.LittleEndian.Uint32(data[8*i:]), Count: binary.LittleEndian.Uint32(data[8*i+4:])}
	}
	for i := range st.Heap {
		b := heap[heapSlotSize*i:]
		st.Heap[i] = topk.Slot{Fingerprint: binary.LittleEndian.Uint32(b), Count: binary.LittleEndian.Uint32(b[16:])}
		item, err := m.LoadString(math.MaxUint32)
		if err != nil {
			return nil, err
		}
		if len(item) == 0 || item[len(item)-1] != 0 {
			return nil, sketchErr("top-k item %d is not a C string", i)
		}
		if len(item) > 1 {
			st.Heap[i].Item = item[: len(item)-1 : len(item)-1]
		}
	}
	return topk.FromState(st)
}

// TopKValue is a Top-K as a module value to write. Items are C strings
// there: one holding a NUL byte is saved up to it, as RedisBloom saves it.
type TopKValue struct{ *topk.TopK }

// ModuleType implements ModuleEncoder.
func (TopKValue) ModuleType() (string, int) { return TopKModuleType, SketchEncVer }

// EncodeModule implements ModuleEncoder.
func (v TopKValue) EncodeModule(m *ModuleWriter) error {
	st := v.State()
	m.SaveUnsigned(uint64(st.K))
	m.SaveUnsigned(uint64(st.Width))
	m.SaveUnsigned(uint64(st.Depth))
	m.SaveDouble(st.Decay)
	data := make([]byte, 8*len(st.Buckets))
	for i, b := range st.Buckets {
		binary.LittleEndian.PutUint32(data[8*i:], b.Fingerprint)
		binary.LittleEndian.PutUint32(data[8*i+4:], b.Count)
	}
	m.SaveString(data)
	heap := make([]byte, heapSlotSize*len(st.Heap))
	items := make([][]byte, len(st.Heap))
	for i, s := range st.Heap {
		item := s.Item
		if j := indexNUL(item); j >= 0 {
			item = item[:j]
		}
		items[i] = append(append(make([]byte, 0, len(item)+1), item...), 0)
		b := heap[heapSlotSize*i:]
		binary.LittleEndian.PutUint32(b, s.Fingerprint)
		binary.LittleEndian.PutUint32(b[4:], uint32(len(item)))
		binary.LittleEndian.PutUint32(b[16:], s.Count)
	}
	m.SaveString(heap)
	for _, it := range items {
		m.SaveString(it)
	}
	return m.Err()
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}
