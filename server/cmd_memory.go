package server

import (
	"math/bits"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/bloomkit/bloomkit/server/internal/keyspace"
	"github.com/bloomkit/bloomkit/server/internal/resp"
)

// MEMORY USAGE reports what Redis 7 with RedisBloom reports for the same
// key, so that tools and tests comparing numbers across the two agree:
// the value's size (a filter: RedisBloom's mem_usage, the BF.INFO / CF.INFO
// "Size"; a string: Redis's object and its allocation) plus the key's
// allocation and its dict entry. Allocations are rounded up to jemalloc's
// size classes, as Redis's zmalloc_size does.

// jemallocSize is the size class jemalloc serves an n-byte request from:
// 8, 16, then four classes per doubling (32, 48, 64, 80, 96, 112, 128, 160 …).
func jemallocSize(n uint64) uint64 {
	if n <= 8 {
		return 8
	}
	lg := bits.Len64(n - 1) // 2^(lg-1) < n <= 2^lg
	step := uint64(16)
	if lg > 6 {
		step = 1 << (lg - 3)
	}
	return (n + step - 1) / step * step
}

// sdsAlloc is the allocation of a Redis sds string of n bytes: header
// (by length class), the bytes and a NUL.
func sdsAlloc(n uint64, minType8 bool) uint64 {
	hdr := uint64(17)
	switch {
	case n < 1<<5 && !minType8:
		hdr = 1
	case n < 1<<8:
		hdr = 3
	case n < 1<<16:
		hdr = 5
	case n < 1<<32:
		hdr = 9
	}
	return jemallocSize(hdr + n + 1)
}

// redisObjectSize is the size of a redisObject header (robj).
const redisObjectSize = 16

// dictEntrySize is the size of a key's entry in Redis's main dict.
const dictEntrySize = 24

// stringValueSize is what Redis's objectComputeSize gives a string value:
// an integer-encoded object, an embedded string (≤ 44 bytes) or a raw one.
func stringValueSize(v []byte) uint64 {
	n := uint64(len(v))
	if n <= 20 {
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil && strconv.FormatInt(i, 10) == string(v) {
			return redisObjectSize
		}
	}
	if n <= 44 {
		return jemallocSize(redisObjectSize + 3 + n + 1)
	}
	return redisObjectSize + sdsAlloc(n, true)
}

// memoryUsage is MEMORY USAGE's answer for a live entry.
func memoryUsage(key string, e *keyspace.Entry) uint64 {
	v := e.DataBytes()
	switch e.Kind {
	case keyspace.KindString:
		v = stringValueSize(e.StrBytes())
	case keyspace.KindCMS:
		// RedisBloom 8's CMSMemUsage: its struct and the counters.
		sk := e.CMS()
		v = 32 + 4*sk.Width()*sk.Depth()
	case keyspace.KindTopK:
		// RedisBloom's TopKMemUsage: its struct (with the decay table),
		// the buckets and the heap's slots, not the items.
		t := e.TopK()
		v = 2088 + 8*uint64(t.Width())*uint64(t.Depth()) + 24*uint64(t.K())
	}
	return v + sdsAlloc(uint64(len(key)), false) + dictEntrySize
}

var memoryHelp = []string{
	"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DOCTOR",
	"    Return memory problems reports.",
	"PURGE",
	"    Return the Go runtime's unused memory to the operating system.",
	"STATS",
	"    Return information about the memory usage of the server.",
	"USAGE <key> [SAMPLES <count>]",
	"    Return memory in bytes used by <key> and its value (SAMPLES is",
	"    accepted for compatibility; bloomkit's values are measured exactly).",
	"HELP",
	"    Prints this help.",
}

// MEMORY USAGE|STATS|DOCTOR|PURGE|HELP. It runs unlocked and takes the
// keyspace lock only for what reads the keyspace: PURGE runs a garbage
// collection, which must not hold up other clients.
func cmdMemory(s *Server, c *Session, args [][]byte, r *Reply) {
	sub := strings.ToLower(string(args[1]))
	arity := map[string]int{"usage": -3, "stats": 2, "doctor": 2, "purge": 2, "help": 2}
	want, ok := arity[sub]
	if !ok {
		r.Error("ERR unknown subcommand '" + trimArg(args[1]) + "'. Try MEMORY HELP.")
		return
	}
	if (want > 0 && len(args) != want) || (want < 0 && len(args) < -want) {
		r.Error("ERR wrong number of arguments for 'memory|" + sub + "' command")
		return
	}
	switch sub {
	case "usage":
		for j := 3; j < len(args); j++ {
			if !strings.EqualFold(string(args[j]), "samples") || j+1 >= len(args) {
				r.Error(errSyntax)
				return
			}
			n, ok := resp.ParseInt(args[j+1])
			if !ok {
				r.Error(errNotInt)
				return
			}
			if n < 0 {
				r.Error(errSyntax)
				return
			}
			j++
		}
		unlock := s.lockDB(c)
		e := s.db.Get(string(args[2]))
		var n uint64
		if e != nil {
			n = memoryUsage(string(args[2]), e)
		}
		unlock()
		if e == nil {
			r.Null()
			return
		}
		r.Uint(n)
	case "stats":
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		unlock := s.lockDB(c)
		s.memoryStats(r, &ms, processRSS(ms.Sys))
		unlock()
	case "doctor":
		unlock := s.lockDB(c)
		used := s.db.Used()
		unlock()
		if used < 5<<20 {
			r.Verbatim("Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n")
			return
		}
		r.Verbatim("Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n")
	case "purge":
		debug.FreeOSMemory()
		r.OK()
	case "help":
		r.Array(len(memoryHelp))
		for _, l := range memoryHelp {
			r.Simple(l)
		}
	}
}
