package keyslot_test

import (
	"fmt"
	"testing"

	"github.com/bloomkit/bloomkit/internal/keyslot"
)

// Slots Redis gives (CLUSTER KEYSLOT, and the examples of the cluster
// specification: CRC16("123456789") is 0x31C3).
func TestOf(t *testing.T) {
	for key, want := range map[string]int{
		"123456789":       0x31C3,
		"":                0,
		"foo":             12182,
		"{user1000}.a":    keyslot.Of("user1000"),
		"foo{}{bar}":      keyslot.Of("foo{}{bar}"),
		"foo{{bar}}zap":   keyslot.Of("{bar"),
		"foo{bar}{zap}":   keyslot.Of("bar"),
		"somekey":         11058,
		"{seen:1:0}:bits": keyslot.Of("seen:1:0"),
	} {
		if got := keyslot.Of(key); got != want {
			t.Errorf("Of(%q) = %d, want %d", key, got, want)
		}
	}
	if keyslot.HashTag("foo{}{bar}") != "foo{}{bar}" {
		t.Error("an empty {} must not be a hash tag")
	}
}

func Example() {
	fmt.Println(keyslot.Of("somekey"), keyslot.Of("{user:7}:seen") == keyslot.Of("{user:7}:sent"))
	// Output: 11058 true
}
