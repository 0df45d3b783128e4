package acl

import (
	"sync"
	"time"
)

// Reason is why an entry is in the ACL log.
type Reason uint8

// The reasons of ACL LOG entries.
const (
	DeniedCommand Reason = iota
	DeniedKey
	DeniedChannel
	DeniedAuth
)

func (r Reason) String() string {
	switch r {
	case DeniedCommand:
		return "command"
	case DeniedKey:
		return "key"
	case DeniedChannel:
		return "channel"
	case DeniedAuth:
		return "auth"
	}
	return "unknown"
}

// Entry is one ACL LOG entry: similar denials within a minute are counted
// in one entry.
type Entry struct {
	Count    int64
	Reason   Reason
	Context  string // "toplevel" or "multi"
	Object   string // the command, key or channel refused; AUTH: the command name
	Username string
	// ClientInfo is the client's CLIENT LIST line at the last denial.
	ClientInfo string
	ID         int64
	// Created and Updated are Unix times in milliseconds.
	Created, Updated int64
}

// groupWindow is how close in time two denials must be to share an entry.
const groupWindow = 60 * time.Second

// Log is the ACL log, newest entry first, at most MaxLen entries.
type Log struct {
	mu      sync.Mutex
	entries []*Entry
	nextID  int64
}

// Add records a denial at now, counting it in a recent similar entry (same
// reason, context, object and user, updated within a minute, among the
// ten newest) or adding a new one; maxLen bounds the log (Redis's
// acllog-max-len).
func (l *Log) Add(e Entry, now time.Time, maxLen int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if maxLen <= 0 {
		l.entries = nil
		return
	}
	ms := now.UnixMilli()
	for i, old := range l.entries {
		if i == 10 {
			break
		}
		d := ms - old.Updated
		if d < 0 {
			d = -d
		}
		if old.Reason == e.Reason && old.Context == e.Context && old.Object == e.Object &&
			old.Username == e.Username && d <= groupWindow.Milliseconds() {
			old.Count++
			old.Updated = ms
			old.ClientInfo = e.ClientInfo
			copy(l.entries[1:i+1], l.entries[:i])
			l.entries[0] = old
			return
		}
	}
	n := e
	n.Count, n.ID, n.Created, n.Updated = 1, l.nextID, ms, ms
	l.nextID++
	l.entries = append([]*Entry{&n}, l.entries...)
	if len(l.entries) > maxLen {
		l.entries = l.entries[:maxLen]
	}
}

// Entries returns copies of the newest n entries (all for n < 0).
func (l *Log) Entries(n int) []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n < 0 || n > len(l.entries) {
		n = len(l.entries)
	}
	out := make([]Entry, n)
	for i := range out {
		out[i] = *l.entries[i]
	}
	return out
}

// Reset empties the log (ACL LOG RESET); entry ids keep counting.
func (l *Log) Reset() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}
