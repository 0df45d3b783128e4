package cuckoo

import (
	"strconv"
	"testing"
)

// Benchmarks at 1M keys, one key an op; bench/ compares with other
// libraries.
const benchN = 1 << 20

var benchKeys = func() (in, out [][]byte) {
	for i := range benchN {
		in = append(in, []byte("https://www.site"+strconv.Itoa(i%99991)+".example.com/path/to/article-"+strconv.Itoa(i)+".html"))
		out = append(out, []byte("https://www.site"+strconv.Itoa(i%99991)+".example.com/path/to/article-"+strconv.Itoa(i+benchN)+".html"))
	}
	return in, out
}

var benchIn, benchOut [][]byte

func benchFilter(b *testing.B) *Filter {
	if benchIn == nil {
		benchIn, benchOut = benchKeys()
	}
	f, err := New(benchN)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := AddMany(f, benchIn); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	return f
}

func BenchmarkAdd(b *testing.B) {
	f := benchFilter(b)
	for i := 0; i < b.N; i++ {
		if i%benchN == 0 {
			b.StopTimer()
			f.Reset()
			b.StartTimer()
		}
		_ = f.Add(benchIn[i%benchN])
	}
}

func BenchmarkTestHit(b *testing.B) {
	f := benchFilter(b)
	for i := 0; i < b.N; i++ {
		f.Test(benchIn[(i*7919)%benchN])
	}
}

func BenchmarkTestMiss(b *testing.B) {
	f := benchFilter(b)
	for i := 0; i < b.N; i++ {
		f.Test(benchOut[i%benchN])
	}
}

func BenchmarkTestManyMiss(b *testing.B) {
	f := benchFilter(b)
	dst := make([]bool, 0, 1024)
	for i := 0; i < b.N; i += 1024 {
		j := i % benchN
		dst = TestMany(f, benchOut[j:j+1024], dst[:0])
	}
}

func BenchmarkDelete(b *testing.B) {
	f := benchFilter(b)
	for i := 0; i < b.N; i++ {
		if i%benchN == 0 && i > 0 {
			b.StopTimer()
			_, _ = AddMany(f, benchIn)
			b.StartTimer()
		}
		f.Delete(benchIn[i%benchN])
	}
}
