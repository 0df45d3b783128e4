package server

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/bloomkit/bloomkit/server/internal/aof"
)

// foreignFile is an entry of the data directory that bloomkit did not
// write: start-up names each in a warning with what to do about it, so
// that a restored Redis snapshot or a misplaced file is never silently
// ignored (the server would start empty without a word).
type foreignFile struct {
	name, what, todo string
}

// foreignFiles lists the entries of dir that are not bloomkit's own files.
func foreignFiles(dir string) []foreignFile {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []foreignFile
	for _, e := range ents {
		n := e.Name()
		if aof.IsOwnFile(n) && !e.IsDir() {
			continue
		}
		out = append(out, classifyForeign(n, e.IsDir()))
	}
	return out
}

func classifyForeign(n string, dir bool) foreignFile {
	const redisTodo = "bloomkit does not read Redis's files; to bring RedisBloom keys over, start Redis on them and copy the keys with `bloom migrate`, then move this out of the data directory"
	switch {
	case dir && n == "appendonlydir":
		return foreignFile{n, "a Redis append-only directory (ignored)", redisTodo}
	case !dir && strings.HasSuffix(n, ".rdb") && strings.HasPrefix(n, "temp-"):
		return foreignFile{n, "a temporary file of a Redis snapshot that never finished (ignored)", "remove it"}
	case !dir && strings.HasSuffix(n, ".rdb"):
		return foreignFile{n, "a Redis snapshot (ignored: this server does not load it)", redisTodo}
	case !dir && (strings.HasPrefix(n, "temp-") || strings.HasSuffix(n, ".tmp") || strings.HasSuffix(n, "~") || strings.HasPrefix(n, ".")):
		return foreignFile{n, "a stray temporary or hidden file (ignored)", "remove it if nothing needs it"}
	case dir:
		return foreignFile{n, "a directory bloomkit does not use (ignored)", "move it out of the data directory"}
	}
	return foreignFile{n, "a file bloomkit does not use (ignored)", "move it out of the data directory; bloomkit never reads or removes it"}
}

// warnForeign logs one warning per foreign entry of the data directory.
func (s *Server) warnForeign(dir string, keys int) {
	for _, f := range foreignFiles(dir) {
		attrs := []any{"file", filepath.Join(dir, f.name), "what", f.what, "todo", f.todo}
		if keys == 0 {
			attrs = append(attrs, "keys_loaded", 0)
		}
		s.log.Warn("the data directory holds something that is not bloomkit's", attrs...)
	}
}

// misnamedSnapshot refuses to start an empty server beside a bloomkit
// snapshot it would not load: a backup restored under another name (its
// backup file's name, dump.rdb, …). Starting empty would look like lost
// data; the error says the name to give it.
func misnamedSnapshot(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || aof.IsOwnFile(e.Name()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		var head [24]byte
		n, _ := io.ReadFull(f, head[:])
		f.Close()
		if n == len(head) && string(head[:8]) == snapshotMagic {
			gen := binary.LittleEndian.Uint64(head[8:16])
			return fmt.Errorf("server: %s is a bloomkit snapshot (generation %d, %d keys), but the server loads a snapshot only under the name %s; to restore it, rename it so (with nothing else of bloomkit's in %s); to start empty, move it out of the directory",
				p, gen, binary.LittleEndian.Uint64(head[16:24]), SnapshotName(gen), dir)
		}
	}
	return nil
}

// snapshotMagic starts every snapshot (server/internal/keyspace writes it).
const snapshotMagic = "BKSNAP02"
