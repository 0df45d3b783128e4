package sdnotify_test

import (
	"fmt"

	"github.com/bloomkit/bloomkit/internal/sdnotify"
)

func Example() {
	n, _ := sdnotify.FromEnv() // ok only under systemd's Type=notify
	if err := n.Send("READY=1"); err == nil {
		fmt.Println("told systemd (or nobody) we are ready")
	}
	// Output: told systemd (or nobody) we are ready
}
