// Package sdnotify tells systemd about a service's state through the
// datagram socket in $NOTIFY_SOCKET (sd_notify(3)): READY=1 once it
// serves, STOPPING=1 when it shuts down, WATCHDOG=1 to keep the watchdog
// ($WATCHDOG_USEC) from restarting it. It needs no library: one unixgram
// write per message.
package sdnotify

import (
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Notifier writes to one notify socket. The zero value (no socket) drops
// every message.
type Notifier struct {
	addr *net.UnixAddr
}

// FromEnv returns a Notifier for $NOTIFY_SOCKET; ok is false when the
// variable is unset (not started by systemd with Type=notify).
func FromEnv() (n Notifier, ok bool) {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return Notifier{}, false
	}
	if strings.HasPrefix(path, "@") {
		path = "\x00" + path[1:] // the abstract namespace
	}
	return Notifier{addr: &net.UnixAddr{Name: path, Net: "unixgram"}}, true
}

// Send writes one message, e.g. "READY=1" or "STATUS=loading\nREADY=1".
func (n Notifier) Send(msg string) error {
	if n.addr == nil {
		return nil
	}
	c, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(msg))
	return err
}

// WatchdogInterval is how often to send WATCHDOG=1: half of
// $WATCHDOG_USEC, as sd_watchdog_enabled(3) advises. ok is false when the
// watchdog is off (unset, or meant for another process by $WATCHDOG_PID).
func WatchdogInterval() (d time.Duration, ok bool, err error) {
	v := os.Getenv("WATCHDOG_USEC")
	if v == "" {
		return 0, false, nil
	}
	if p := os.Getenv("WATCHDOG_PID"); p != "" && p != strconv.Itoa(os.Getpid()) {
		return 0, false, nil
	}
	us, err := strconv.ParseUint(v, 10, 63)
	if err != nil || us == 0 {
		return 0, false, errors.New("sdnotify: bad WATCHDOG_USEC " + strconv.Quote(v))
	}
	return time.Duration(us) * time.Microsecond / 2, true, nil
}
