package rdb

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/bloomkit/bloomkit/cms"
	"github.com/bloomkit/bloomkit/topk"
)

func sketchOpts(allow func(uint64) error) Options {
	var o Options
	AddSketchDecoders(&o, allow)
	return o
}

func TestSketchDumpRoundTrip(t *testing.T) {
	s, _ := cms.New(30, 4)
	for i := range 100 {
		s.IncrByString(fmt.Sprint(i), uint64(i))
	}
	tk, _ := topk.New(5, 20, 3, 0.9)
	for i := range 300 {
		tk.AddString(fmt.Sprint(i % 17 * (i % 3)))
	}
	tk.AddString("") // an empty item: saved as RedisBloom saves it, an empty slot
	for _, v := range []ModuleEncoder{CMSValue{s}, TopKValue{tk}} {
		p, err := DumpModule(v, DumpVersion)
		if err != nil {
			t.Fatal(err)
		}
		var asked uint64
		e, err := ParseDump(p, sketchOpts(func(n uint64) error { asked += n; return nil }))
		if err != nil || e.Err != nil {
			t.Fatalf("%T: %v %v", v, err, e.Err)
		}
		switch got := e.Value.(type) {
		case *cms.Sketch:
			if !reflect.DeepEqual(got.Counters(), s.Counters()) || got.Count() != s.Count() || asked != 4*30*4 {
				t.Fatalf("CMS differs (asked %d)", asked)
			}
		case *topk.TopK:
			want := tk.State()
			for i := range want.Heap {
				if len(want.Heap[i].Item) == 0 {
					want.Heap[i].Item = nil
				}
			}
			st := got.State()
			st.RNG, want.RNG = 0, 0
			if !reflect.DeepEqual(st, want) || asked != 8*20*3+24*5 {
				t.Fatalf("Top-K differs (asked %d)", asked)
			}
		default:
			t.Fatalf("decoded %T", got)
		}
	}
}

// Forged values are refused; none is granted more than allow accepts,
// and a forged length beyond the reader's MaxString allocates nothing.
func TestSketchDumpHostile(t *testing.T) {
	forge := func(name string, f func(m *ModuleWriter)) []byte {
		p, err := DumpModule(rawModule{name, f}, DumpVersion)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for what, p := range map[string][]byte{
		"cms overflow": forge(CMSModuleType, func(m *ModuleWriter) { m.SaveUnsigned(1 << 40); m.SaveUnsigned(1 << 40); m.SaveUnsigned(0) }),
		"cms zero":     forge(CMSModuleType, func(m *ModuleWriter) { m.SaveUnsigned(0); m.SaveUnsigned(3); m.SaveUnsigned(0) }),
		"cms short": forge(CMSModuleType, func(m *ModuleWriter) {
			m.SaveUnsigned(2)
			m.SaveUnsigned(2)
			m.SaveUnsigned(0)
			m.SaveString(make([]byte, 15))
		}),
		"cms forged len": forge(CMSModuleType, func(m *ModuleWriter) {
			m.SaveUnsigned(1 << 30)
			m.SaveUnsigned(200)
			m.SaveUnsigned(0)
			m.SaveString(make([]byte, 8))
		}),
		"topk decay": forge(TopKModuleType, func(m *ModuleWriter) { m.SaveUnsigned(1); m.SaveUnsigned(1); m.SaveUnsigned(1); m.SaveDouble(0) }),
		"topk k": forge(TopKModuleType, func(m *ModuleWriter) {
			m.SaveUnsigned(1 << 33)
			m.SaveUnsigned(1)
			m.SaveUnsigned(1)
			m.SaveDouble(0.9)
		}),
		"topk no nul": forge(TopKModuleType, func(m *ModuleWriter) {
			m.SaveUnsigned(1)
			m.SaveUnsigned(1)
			m.SaveUnsigned(1)
			m.SaveDouble(0.9)
			m.SaveString(make([]byte, 8))
			m.SaveString(make([]byte, 24))
			m.SaveString([]byte("x"))
		}),
	} {
		var asked uint64
		e, err := ParseDump(p, sketchOpts(func(n uint64) error {
			if n > 1<<30 {
				return errors.New("refused")
			}
			asked += n
			return nil
		}))
		if err == nil && e.Err == nil {
			t.Errorf("%s: accepted", what)
		}
		if asked > 1<<30 {
			t.Errorf("%s: asked for %d bytes", what, asked)
		}
	}
}

// rawModule writes whatever fields a test gives it.
type rawModule struct {
	name string
	f    func(m *ModuleWriter)
}

func (r rawModule) ModuleType() (string, int) { return r.name, SketchEncVer }
func (r rawModule) EncodeModule(m *ModuleWriter) error {
	r.f(m)
	return m.Err()
}
