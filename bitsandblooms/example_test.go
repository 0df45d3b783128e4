package bitsandblooms_test

import (
	"bytes"
	"fmt"

	"github.com/bloomkit/bloomkit/bitsandblooms"
)

func Example() {
	// Sized as bloom.NewWithEstimates(1000, 0.01); its ReadFrom reads the
	// bytes WriteTo writes.
	f, err := bitsandblooms.NewWithEstimates(1000, 0.01)
	if err != nil {
		panic(err)
	}
	f.AddString("alice@example.com")
	var file bytes.Buffer
	if _, err := f.WriteTo(&file); err != nil {
		panic(err)
	}
	g, err := bitsandblooms.Read(&file)
	if err != nil {
		panic(err)
	}
	fmt.Println(g.M(), g.K(), g.TestString("alice@example.com"), g.TestString("eve@example.com"))
	// Output: 9586 7 true false
}
