package server

import (
	"fmt"
	"strings"
)

// commandNames is rename-command in force: clients reach a renamed
// command by its new name only, and a command renamed to "" not at all,
// as in Redis. Everything the server writes (the log, the replication
// stream, the slow log) names the command by its own name, so a log or a
// replica reads it whatever the renames of the server that wrote it.
type commandNames struct {
	byNew map[string]*command
	gone  map[*command]bool
}

// newCommandNames checks a config file's renames against the command
// table.
func newCommandNames(renames map[string]string) (*commandNames, error) {
	if len(renames) == 0 {
		return nil, nil
	}
	n := &commandNames{byNew: map[string]*command{}, gone: map[*command]bool{}}
	for old, nw := range renames {
		cmd, ok := commandTable[old]
		if !ok {
			return nil, fmt.Errorf("rename-command %s: no such command", old)
		}
		n.gone[cmd] = true
		if nw == "" {
			continue
		}
		if _, taken := commandTable[nw]; taken && nw != old {
			// Only a name its own command gave up may be taken.
			if _, renamedToo := renames[nw]; !renamedToo {
				return nil, fmt.Errorf("rename-command %s %s: %s is the name of another command", old, nw, nw)
			}
		}
		if other, dup := n.byNew[nw]; dup {
			return nil, fmt.Errorf("rename-command: %s and %s both renamed to %s", other.name, old, nw)
		}
		n.byNew[nw] = cmd
	}
	return n, nil
}

// resolve is the command a client's name reaches, given what the table
// lookup found.
func (n *commandNames) resolve(name []byte, cmd *command, ok bool) (*command, bool) {
	if c, renamed := n.byNew[strings.ToLower(string(name))]; renamed {
		return c, true
	}
	if ok && n.gone[cmd] {
		return nil, false
	}
	return cmd, ok
}
