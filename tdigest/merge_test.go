package tdigest

import "testing"

// TestMergeSelf: merging a digest into itself doubles every count, as
// merging an equal copy does. Here the digest's centroids fill more than
// half its capacity, so the adds merge its nodes while they are being
// read: they must be read from a copy.
func TestMergeSelf(t *testing.T) {
	xs := []float64{0.6858624104870158, 0.03715573643845549, 0.5928894099550405, 0.8374766063217555, 0.5211756963868627, 0.6017742976555763, 0.6813787516794869, 0.7448945051181788, 0.10176939197108503, 0.38101620045526996, 0.5270311911345729, 0.8702736084629777, 0.34285310221824983}
	ws := []int64{118721869374, 1, 13021, 32060817, 2183176789324, 5634445943181, 197770626639, 352882, 4617926, 136570, 80344640, 1093, 1350799}
	d, _ := New(1)
	for i, x := range xs {
		if err := d.AddWeighted(x, ws[i]); err != nil {
			t.Fatal(err)
		}
	}
	_ = d.Compress()
	if in := d.Info(); 2*in.MergedNodes < in.Capacity-1 {
		t.Fatalf("the case needs centroids filling half the capacity: %+v", in)
	}
	twin := d.Clone()
	if err := twin.Merge(d.Clone()); err != nil {
		t.Fatal(err)
	}
	if err := d.Merge(d); err != nil {
		t.Fatal(err)
	}
	if !d.Equal(twin) || d.Count() != twin.Count() {
		t.Fatalf("self-merge %+v, merge of a copy %+v", d.Info(), twin.Info())
	}
}
