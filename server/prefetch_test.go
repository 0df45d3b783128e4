package server

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// A pipeline the event loop looks ahead in (prefetch) gets exactly the
// replies the same commands get one at a time: filter reads and writes
// on Bloom, cuckoo and native (blocked, classic, window) filters, missing keys, keys of another type, a key
// deleted and re-created within the pipeline, inline commands (not looked
// ahead in), and requests split across reads.
func TestPrefetchedPipelineAnswersAsUnpipelined(t *testing.T) {
	var cmds [][]string
	for i := 0; i < 40; i++ {
		it := fmt.Sprint("item", i%7)
		cmds = append(cmds,
			[]string{"BF.ADD", "bf", it}, []string{"BF.EXISTS", "bf", it + "x"}, []string{"BF.MEXISTS", "bf", it, "nope"},
			[]string{"CF.ADD", "cf", it}, []string{"CF.EXISTS", "cf", it}, []string{"CF.ADDNX", "cf", it},
			[]string{"CF.MEXISTS", "cf", it, "nope"}, []string{"BF.EXISTS", "cf", it}, []string{"CF.EXISTS", "bf", it},
			[]string{"BF.EXISTS", "str", it}, []string{"CF.EXISTS", "missing", it}, []string{"BF.EXISTS"},
			[]string{"BF.ADD", "nb", it}, []string{"BF.MEXISTS", "nb", it, "nope"}, []string{"BF.EXISTS", "nw", it + "x"},
			[]string{"BF.ADD", "nw", it}, []string{"BF.MEXISTS", "nw", it, "nope"}, []string{"BF.EXISTS", "nc", it})
		if i%10 == 9 {
			cmds = append(cmds, []string{"DEL", "bf"}, []string{"BF.RESERVE", "bf", "0.01", "1000"}, []string{"SET", "str", it})
		}
	}
	encode := func(i int, c []string) string {
		if i%50 == 25 { // inline
			return strings.Join(c, " ") + "\r\n"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(c))
		for _, a := range c {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		return b.String()
	}
	run := func(pipelined bool) []string {
		s := startServer(t, Config{NoPersistence: true})
		rc := dialRaw(t, s.Addr())
		for _, c := range [][]string{{"BF.RESERVE", "bf", "0.01", "1000"}, {"CF.RESERVE", "cf", "1000"}, {"SET", "str", "v"},
			{"BF.RESERVE", "nb", "0.01", "1000", "LAYOUT", "blocked", "SEED", "1"},
			{"BF.RESERVE", "nc", "0.01", "1000", "LAYOUT", "classic", "SEED", "1"},
			{"BF.RESERVE", "nw", "0.01", "1000", "WINDOW", "1h", "SEED", "1"}} {
			rc.do(c...)
		}
		var out []string
		if !pipelined {
			for i, c := range cmds {
				io.WriteString(rc.c, encode(i, c))
				out = append(out, rc.read())
			}
			return out
		}
		var b strings.Builder
		for i, c := range cmds {
			b.WriteString(encode(i, c))
		}
		data := b.String()
		go func() {
			// In uneven pieces, so some reads end inside a request.
			for i := 0; i < len(data); i += 777 {
				io.WriteString(rc.c, data[i:min(i+777, len(data))])
			}
		}()
		for range cmds {
			out = append(out, rc.read())
		}
		return out
	}
	one, piped := run(false), run(true)
	for i := range cmds {
		if one[i] != piped[i] {
			t.Fatalf("%q: %s pipelined, %s alone", cmds[i], piped[i], one[i])
		}
	}
}
