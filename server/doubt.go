package server

import (
	"sync"
	"sync/atomic"

	"github.com/bloomkit/bloomkit/server/internal/aof"
)

// doubtSet holds the keys written by commands whose log records were not
// durable when the log failed. Those writes are applied in memory but may
// be gone after a crash, so nothing may reveal them: while the log is
// failed, reads of these keys answer an error instead (other keys are
// served). The next successful snapshot makes the writes durable and
// clears the set.
type doubtSet struct {
	active atomic.Bool
	mu     sync.Mutex
	keys   map[string]struct{}
	all    bool // a command without key arguments (FLUSHALL) is in doubt
}

// add records the keys of the commands in a run of encoded log records.
func (d *doubtSet) add(records []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.keys == nil {
		d.keys = map[string]struct{}{}
	}
	aof.DecodeRecords(records, func(cmds [][][]byte, err error) {
		if err != nil {
			d.all = true
			return
		}
		for _, args := range cmds {
			cmd, ok := lookupCommand(args[0])
			if !ok || (cmd.first <= 0 && cmd.keys == nil) {
				d.all = true
				continue
			}
			forKeys(cmd, args, func(k []byte) { d.keys[string(k)] = struct{}{} })
		}
	})
	if len(d.keys) > 0 || d.all {
		d.active.Store(true)
	}
}

// has reports whether any key args names of cmd is in doubt.
func (d *doubtSet) has(cmd *command, args [][]byte) bool {
	if !d.active.Load() {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.all {
		return true
	}
	found := false
	forKeys(cmd, args, func(k []byte) {
		if _, ok := d.keys[string(k)]; ok {
			found = true
		}
	})
	return found
}

func (d *doubtSet) clear() {
	d.mu.Lock()
	d.keys, d.all = nil, false
	d.active.Store(false)
	d.mu.Unlock()
}
