package rdb

import (
	"errors"
	"fmt"
	"math"

	"github.com/bloomkit/bloomkit/tdigest"
)

// RedisBloom's t-digest module type, TDIS-TYPE, encoding version 0: the
// compression, min and max (doubles); capacity, merged nodes, unmerged
// nodes and total compressions (signed); merged and unmerged weight
// (doubles); then the merged centroids' means and their weights (doubles).
// RedisBloom merges the buffer before saving, and saves no buffered
// values: a digest of one value (which its library leaves unmerged) is
// written with one unmerged node and no node data, and read back here as
// that value, its min.

// TDigestModuleType is RedisBloom's module type name for a t-digest.
const TDigestModuleType = "TDIS-TYPE"

// TDigestEncVer is the encoding version RedisBloom 2.4 to 8.x write.
const TDigestEncVer = 0

var errTDigest = errors.New("rdb: t-digest value")

type tdigestDecoder struct{ allow func(uint64) error }

// TDigestDecoder decodes TDIS-TYPE values to *tdigest.Digest, for
// Options.Modules; allow (may be nil) is asked for the digest's memory
// before its nodes are read.
func TDigestDecoder(allow func(uint64) error) ModuleDecoder { return tdigestDecoder{allow} }

func (d tdigestDecoder) DecodeModule(m *ModuleReader, encver int) (any, error) {
	if encver != TDigestEncVer {
		return nil, fmt.Errorf("%w: encoding version %d", errTDigest, encver)
	}
	var s tdigest.State
	var err error
	dbl := func(p *float64) {
		if err == nil {
			*p, err = m.LoadDouble()
		}
	}
	sig := func(p *int64) {
		if err == nil {
			*p, err = m.LoadSigned()
		}
	}
	var capacity, merged, unmerged, compressions int64
	var mw, uw float64
	dbl(&s.Compression)
	dbl(&s.Min)
	dbl(&s.Max)
	sig(&capacity)
	sig(&merged)
	sig(&unmerged)
	sig(&compressions)
	dbl(&mw)
	dbl(&uw)
	if err != nil {
		return nil, err
	}
	if !(s.Compression >= 1 && s.Compression <= tdigest.MaxCompression) || capacity != int64(tdigest.Capacity(int(s.Compression))) {
		return nil, fmt.Errorf("%w: compression %v, capacity %d", errTDigest, s.Compression, capacity)
	}
	if merged < 0 || merged > capacity || compressions < 0 {
		return nil, fmt.Errorf("%w: %d merged nodes of %d", errTDigest, merged, capacity)
	}
	lone := merged == 0 && unmerged == 1 && uw == 1 && mw == 0 && s.Min == s.Max
	if !lone && (unmerged != 0 || uw != 0) {
		return nil, fmt.Errorf("%w: %d unmerged nodes of weight %v", errTDigest, unmerged, uw)
	}
	if d.allow != nil {
		if err := d.allow(uint64(8 + 16*capacity)); err != nil {
			return nil, err
		}
	}
	s.Capacity, s.MergedNodes, s.Compressions = int(capacity), int(merged), compressions
	s.Means = make([]float64, merged)
	s.Weights = make([]int64, merged)
	for i := range s.Means {
		dbl(&s.Means[i])
	}
	var sum float64
	for i := range s.Weights {
		var w float64
		dbl(&w)
		if err == nil && !(w >= 1 && w < 1<<62 && w == math.Trunc(w)) {
			return nil, fmt.Errorf("%w: node %d has weight %v", errTDigest, i, w)
		}
		s.Weights[i] = int64(w)
		sum += w
	}
	if err != nil {
		return nil, err
	}
	if sum != mw {
		return nil, fmt.Errorf("%w: node weights sum to %v, merged weight %v", errTDigest, sum, mw)
	}
	if lone {
		s.Means, s.Weights = []float64{s.Min}, []int64{1}
	}
	td, err := tdigest.FromState(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errTDigest, err)
	}
	return td, nil
}

// TDigestValue is a t-digest as a module value to write (TDIS-TYPE,
// encoding version 0). The digest is not changed: a merged copy is
// written, as RedisBloom writes its digest after merging the buffer.
type TDigestValue struct{ *tdigest.Digest }

// ModuleType implements ModuleEncoder.
func (TDigestValue) ModuleType() (string, int) { return TDigestModuleType, TDigestEncVer }

// EncodeModule implements ModuleEncoder.
func (v TDigestValue) EncodeModule(m *ModuleWriter) error {
	d := v.Clone()
	if err := d.Compress(); err != nil {
		return err
	}
	s := d.State()
	in := d.Info()
	m.SaveDouble(s.Compression)
	m.SaveDouble(s.Min)
	m.SaveDouble(s.Max)
	m.SaveSigned(int64(s.Capacity))
	m.SaveSigned(int64(in.MergedNodes))
	m.SaveSigned(int64(in.UnmergedNodes))
	m.SaveSigned(s.Compressions)
	m.SaveDouble(float64(in.MergedWeight))
	m.SaveDouble(float64(in.UnmergedWeight))
	for _, x := range s.Means[:in.MergedNodes] {
		m.SaveDouble(x)
	}
	for _, w := range s.Weights[:in.MergedNodes] {
		m.SaveDouble(float64(w))
	}
	return m.Err()
}
