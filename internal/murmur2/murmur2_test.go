package murmur2

import "testing"

// Values of RedisBloom's MurmurHash2 (deps/murmur2), compiled and run.
func TestSum32Known(t *testing.T) {
	for _, c := range []struct {
		key  string
		seed uint32
		want uint32
	}{
		{"", 0, 0},
		{"", 1, 0x5bd15e36},
		{"hello", 0, 0xe56129cb},
		{"The quick brown fox jumps over the lazy dog", 0x9747b28c, 0x1d84d036},
		{"abc", 1919, 0xd88274d7},
		{"a", 1919, 0xf23cf517},
		{"hello", 1919, 0x234dad03},
	} {
		if got := Sum32String(c.key, c.seed); got != c.want {
			t.Errorf("Sum32(%q, %#x) = %#x, want %#x", c.key, c.seed, got, c.want)
		}
	}
}

func TestSumRows(t *testing.T) {
	var hs [9]uint32
	for _, key := range []string{"", "a", "ab", "abc", "abcd", "hello world!", "0123456789abcdefg"} {
		SumRows([]byte(key), hs[:])
		for i, h := range hs {
			if want := Sum32String(key, uint32(i)); h != want {
				t.Errorf("SumRows(%q)[%d] = %#x, Sum32 says %#x", key, i, h, want)
			}
		}
	}
}
