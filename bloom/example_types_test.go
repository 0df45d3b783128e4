package bloom_test

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/bloomkit/bloomkit/bloom"
)

func ExampleCounting() {
	// A blacklist that can forget: 10,000 entries at a 1% rate.
	banned, err := bloom.NewCounting(10_000, 0.01)
	if err != nil {
		panic(err)
	}
	banned.AddString("203.0.113.7")
	banned.AddString("198.51.100.23")
	fmt.Println(banned.TestString("203.0.113.7"), banned.Len())

	// Unbanned: removed, and no longer present.
	fmt.Println(banned.DeleteString("203.0.113.7"), banned.TestString("203.0.113.7"))
	// Removing what is not there changes nothing.
	fmt.Println(banned.DeleteString("192.0.2.1"), banned.Len())
	// Output:
	// true 2
	// true false
	// false 1
}

func ExampleCounting_Count() {
	c, _ := bloom.NewCounting(1000, 0.001)
	for range 3 {
		c.AddString("popular")
	}
	c.AddString("rare")
	fmt.Println(c.CountString("popular"), c.CountString("rare"), c.CountString("never"))
	// Output: 3 1 0
}

func ExampleScalable() {
	// Planned for 1,000 URLs, it grows as far as needed and keeps the
	// compound false-positive rate at or below 1%.
	seen, err := bloom.NewScalable(1000, 0.01)
	if err != nil {
		panic(err)
	}
	for i := range 20_000 {
		seen.AddString("https://example.com/page/" + strconv.Itoa(i))
	}
	st := seen.Stats()
	fmt.Println(len(st.Parts), "links, capacity", st.Capacity)
	fmt.Println(seen.TestString("https://example.com/page/19999"), st.EstimatedFPR <= 0.01)
	// Output:
	// 5 links, capacity 31000
	// true true
}

func ExampleScalableConfig() {
	// A non-scaling filter says when it is full instead of growing.
	f, err := bloom.NewScalableWith(bloom.ScalableConfig{Capacity: 2, Rate: 0.01, NonScaling: true})
	if err != nil {
		panic(err)
	}
	for _, k := range []string{"a", "b", "a", "c"} {
		added, err := f.TryAddString(k)
		fmt.Println(k, added, errors.Is(err, bloom.ErrFull))
	}
	fmt.Println(f.Len())
	// Output:
	// a true false
	// b true false
	// a false false
	// c false true
	// 2
}

func ExampleWindow() {
	// "Already shown to this user in the last 24 hours?" A fake clock stands
	// in for time.Now here.
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	shown, err := bloom.NewWindowWith(bloom.WindowConfig{
		Window: 24 * time.Hour,
		Items:  10_000, // recommendations per day
		Rate:   0.01,
		Clock:  func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}
	shown.AddString("article-42")

	now = now.Add(24 * time.Hour) // exactly a day later: still remembered
	fmt.Println(shown.TestString("article-42"))

	// Forgotten once the generation it was added in expires: at most one
	// generation, 24h/4 = 6h, after the day is over.
	now = now.Add(6 * time.Hour)
	fmt.Println(shown.TestString("article-42"))

	// TestAndAdd: show it again, and remember it for another day.
	fmt.Println(shown.TestAndAddString("article-42"), shown.TestString("article-42"))
	// Output:
	// true
	// false
	// false true
}
