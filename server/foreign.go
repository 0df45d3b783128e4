package server

import (
	"os"
	"path/filepath"
	"strings"
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
		if isOwnFile(n) && !e.IsDir() {
			continue
		}
		out = append(out, classifyForeign(n, e.IsDir()))
	}
	return out
}

// isOwnFile reports whether name is one of bloomkit's data-directory files.
func isOwnFile(name string) bool {
	if _, ok := parseGen(name, snapPrefix, snapSuffix); ok {
		return true
	}
	if _, ok := parseGen(name, logPrefix, logSuffix); ok {
		return true
	}
	switch name {
	case LockFileName, legacySnapshot, legacyLog:
		return true
	}
	return strings.Contains(name, tmpMarker) // removed at start-up, with a warning
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
