package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/bloomkit/bloomkit/redisbloom"
	"github.com/bloomkit/bloomkit/server/internal/keyspace"
	"github.com/bloomkit/bloomkit/server/internal/rdb"
	"github.com/bloomkit/bloomkit/server/internal/resp"
)

var fuzzServer struct {
	once sync.Once
	s    *Server
}

// FuzzCommand feeds RESP (or inline) command streams through the command
// layer (Server.Do) and checks that every reply is well-formed RESP and
// nothing panics. The seed corpus is in testdata/fuzz/FuzzCommand.
func FuzzCommand(f *testing.F) {
	f.Add([]byte("*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$1\r\nv\r\n"))
	f.Add([]byte("BF.RESERVE k 0.01 100 EXPANSION 3\r\nBF.MADD k a b c\r\nBF.SCANDUMP k 0\r\n"))
	f.Add([]byte("CF.RESERVE c 8 BUCKETSIZE 1 EXPANSION 0\r\nCF.INSERT c ITEMS a b c d e f g h i\r\nCF.SCANDUMP c 1\r\n"))
	f.Add([]byte("HELLO 3\r\nBF.INFO k\r\nCF.INFO c\r\nBF.INSERT k CAPACITY 5 NONSCALING ITEMS x y z\r\n"))
	f.Add([]byte("TDIGEST.CREATE t COMPRESSION 5\r\nTDIGEST.ADD t 1 2 3 1e300 -4.5\r\nTDIGEST.QUANTILE t 0 0.5 1\r\nTDIGEST.MERGE m 2 t t OVERRIDE\r\nTDIGEST.BYREVRANK m 0 3 9\r\nDUMP t\r\n"))
	f.Add([]byte("CMS.INITBYDIM m 5 2\r\nCMS.INCRBY m a 4294967295 b 1\r\nCMS.INITBYDIM n 5 2\r\nCMS.MERGE n 2 m m WEIGHTS 1 -1\r\nCMS.QUERY n a b\r\nCMS.INFO n\r\n"))
	f.Add([]byte("TOPK.RESERVE t 2 3 2 0.5\r\nTOPK.ADD t a b c a\r\nTOPK.INCRBY t d 100000 e 1\r\nTOPK.LIST t W\r\nTOPK.COUNT t a\r\nHELLO 3\r\nTOPK.INFO t\r\nTOPK.QUERY t a\r\n"))
	// DUMP and RESTORE with payloads of each kind (the fuzzer mutates them).
	bf, _ := redisbloom.NewBloom(20, 0.01, 2, false, nil)
	bp, _ := rdb.DumpModule(rdb.BloomValue{Bloom: bf}, rdb.DumpVersion)
	cf, _ := redisbloom.NewCuckoo(8, 2, 20, 2, nil)
	cp, _ := rdb.DumpModule(rdb.CuckooValue{Cuckoo: cf}, rdb.DumpVersion)
	var seed bytes.Buffer
	for _, cmd := range [][]string{
		{"RESTORE", "r", "0", string(bp)}, {"DUMP", "r"}, {"RESTORE", "c", "100000", string(cp), "REPLACE"},
		{"RESTORE", "s", "0", string(rdb.DumpString([]byte("value"), 10)), "ABSTTL", "IDLETIME", "3"}, {"DUMP", "c"},
	} {
		fmt.Fprintf(&seed, "*%d\r\n", len(cmd))
		for _, a := range cmd {
			fmt.Fprintf(&seed, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	f.Add(seed.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzServer.once.Do(func() {
			s, err := New(Config{NoPersistence: true, MaxMemory: 32 << 20, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			fuzzServer.s = s
		})
		s := fuzzServer.s
		p := resp.NewReader(bytes.NewReader(data), resp.Limits{MaxArgs: 1 << 10, MaxBulk: 1 << 20, MaxInline: 64 << 10, MaxQuery: 4 << 20})
		c := &Session{authed: true, ID: 1}
		var r Reply
		for {
			args, err := p.Next()
			if err != nil {
				break
			}
			if args == nil {
				if p.Fill() != nil {
					break
				}
				continue
			}
			if len(args) == 0 {
				continue
			}
			s.Do(c, args, &r)
			out := r.Bytes()
			br := bufio.NewReader(bytes.NewReader(out))
			if _, err := readReply(br); err != nil {
				t.Fatalf("%q: malformed reply %q: %v", args, out, err)
			}
			if br.Buffered() != 0 {
				t.Fatalf("%q: trailing bytes after the reply %q", args, out)
			}
		}
		s.db.Lock()
		if s.db.Len() > 50 {
			s.db.Flush()
		}
		s.db.Unlock()
	})
}

// payloadBytes is a snapshot held in memory, as a replica reads a master's
// full-sync payload.
type payloadBytes struct{ *bytes.Reader }

func (payloadBytes) Close() error { return nil }

func (p payloadBytes) Size() int64 { return p.Reader.Size() }

// FuzzSnapshot feeds forged snapshots to the decoder a replica runs on its
// master's full-sync payload and start-up runs on the data directory: a
// lying master or a damaged file is refused with an error, never a panic
// or an allocation larger than the input; what loads can be written again.
// The seed is a real snapshot of every kind of key.
func FuzzSnapshot(f *testing.F) {
	s, err := New(Config{NoPersistence: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	c := &Session{authed: true}
	var r Reply
	for _, cmd := range [][]string{
		{"BF.RESERVE", "bf", "0.01", "20", "EXPANSION", "2"}, {"BF.MADD", "bf", "a", "b", "c"},
		{"BF.INSERT", "bf", "ITEMS", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "x", "y"},
		{"CF.RESERVE", "cf", "8", "BUCKETSIZE", "2", "EXPANSION", "1"}, {"CF.INSERT", "cf", "ITEMS", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"},
		{"SET", "str", "value", "PX", "100000"},
		{"BF.RESERVE", "nat", "0.01", "100", "LAYOUT", "blocked", "SEED", "7"}, {"BF.ADD", "nat", "a"},
		{"BF.RESERVE", "win", "0.01", "100", "WINDOW", "4s", "GENERATIONS", "4", "SEED", "7"}, {"BF.ADD", "win", "a"},
		{"CMS.INITBYDIM", "cms", "8", "2"}, {"CMS.INCRBY", "cms", "a", "3"},
		{"TOPK.RESERVE", "topk", "2", "4", "2", "0.9"}, {"TOPK.ADD", "topk", "a", "b", "a"},
	} {
		args := make([][]byte, len(cmd))
		for i, a := range cmd {
			args[i] = []byte(a)
		}
		s.Do(c, args, &r)
		if bytes.HasPrefix(r.Bytes(), []byte("-")) {
			f.Fatalf("%v: %s", cmd, r.Bytes())
		}
	}
	f.Add(keyspaceImage(f, s))
	f.Fuzz(func(t *testing.T, data []byte) {
		// As a replica loads a payload: into a fresh keyspace, with the
		// lock held (a snapshot's walk takes the lock itself).
		db := keyspace.New(0, nil)
		db.Lock()
		_, n, err := db.ReadSnapshot(payloadBytes{bytes.NewReader(data)}, "payload")
		if err != nil {
			db.Unlock()
			return
		}
		if n != db.Len() {
			db.Unlock()
			t.Fatalf("loaded %d keys, the keyspace holds %d", n, db.Len())
		}
		db.Reindex()
		snap := db.BeginSnapshot(1)
		db.Unlock()
		var out bytes.Buffer
		if err := db.WriteSnapshot(&out, snap); err != nil {
			t.Fatalf("what loaded cannot be written again: %v", err)
		}
		db.Lock()
		db.EndSnapshot(snap)
		db.Unlock()
	})
}
