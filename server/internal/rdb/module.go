package rdb

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Field opcodes inside a module value (RDB_TYPE_MODULE_2).
const (
	modEOF    = 0
	modSigned = 1
	modUint   = 2
	modFloat  = 3
	modDouble = 4
	modString = 5
)

const moduleCharset = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// ModuleTypeID encodes a module type's 9-character name and its encoding
// version (0–1023) as the 64-bit id Redis writes before a module value.
func ModuleTypeID(name string, encver int) (uint64, error) {
	if len(name) != 9 || encver < 0 || encver > 1023 {
		return 0, fmt.Errorf("rdb: module type %q encoding version %d: need 9 characters and 0-1023", name, encver)
	}
	var id uint64
	for i := range 9 {
		p := strings.IndexByte(moduleCharset, name[i])
		if p < 0 {
			return 0, fmt.Errorf("rdb: module type %q: character %q is not in Redis's type name alphabet", name, name[i])
		}
		id = id<<6 | uint64(p)
	}
	return id<<10 | uint64(encver), nil
}

// ModuleTypeName decodes a module type id into its name and encoding version.
func ModuleTypeName(id uint64) (name string, encver int) {
	var b [9]byte
	v := id >> 10
	for i := 8; i >= 0; i-- {
		b[i] = moduleCharset[v&63]
		v >>= 6
	}
	return string(b[:]), int(id & 1023)
}

// A ModuleDecoder turns a module value into the caller's object, reading
// its fields in the order the module wrote them, as a Redis module's
// rdb_load does. encver is the encoding version the writer recorded.
// Returning an error refuses the value: the reader skips what is left of
// it and reports the error in Entry.Err; the stream goes on. A value whose
// fields go on beyond what the decoder read is refused too, and released
// with its Free method if it has one.
type ModuleDecoder interface {
	DecodeModule(m *ModuleReader, encver int) (any, error)
}

// A ModuleEncoder writes one module value's fields, as a Redis module's
// rdb_save does.
type ModuleEncoder interface {
	// ModuleType is the 9-character type name and the encoding version the
	// fields are written in.
	ModuleType() (name string, encver int)
	EncodeModule(m *ModuleWriter) error
}

// errModuleField: a decoder asked for a field the value does not hold next.
var errModuleField = errors.New("rdb: module value field of another kind")

// ModuleReader reads one module value's fields for a ModuleDecoder.
// Errors from the stream itself are remembered: the whole read then fails.
type ModuleReader struct {
	in        *input
	fatal     error
	pending   int    // an opcode read whose field has not been consumed, or -1
	ended     bool   // the value's EOF opcode was read
	typeName  string // for messages
	stringCap uint64
}

func (m *ModuleReader) op(want int, what string) error {
	if m.fatal != nil {
		return m.fatal
	}
	if m.ended {
		return fmt.Errorf("rdb: module %s value has no more fields (reading %s): %w", m.typeName, what, errModuleField)
	}
	o, err := m.in.plainLength("module field opcode")
	if err != nil {
		m.fatal = err
		return err
	}
	if o > modString {
		m.fatal = m.in.corrupt(fmt.Sprintf("module field opcode %d", o))
		return m.fatal
	}
	if o == modEOF {
		m.ended = true
		return fmt.Errorf("rdb: module %s value ended before %s: %w", m.typeName, what, errModuleField)
	}
	if int(o) != want {
		m.pending = int(o)
		return fmt.Errorf("rdb: module %s value holds field kind %d where %s was read: %w", m.typeName, o, what, errModuleField)
	}
	return nil
}

func (m *ModuleReader) keep(err error) error {
	if err != nil && m.fatal == nil {
		m.fatal = err
	}
	return err
}

// LoadUnsigned reads an unsigned field (RedisModule_LoadUnsigned).
func (m *ModuleReader) LoadUnsigned() (uint64, error) {
	if err := m.op(modUint, "an unsigned"); err != nil {
		return 0, err
	}
	v, err := m.in.plainLength("module unsigned")
	return v, m.keep(err)
}

// LoadSigned reads a signed field (RedisModule_LoadSigned). Redis writes
// signed fields as unsigned ones of the same bits, and reads them so.
func (m *ModuleReader) LoadSigned() (int64, error) {
	if err := m.op(modUint, "a signed"); err != nil {
		return 0, err
	}
	v, err := m.in.plainLength("module signed")
	return int64(v), m.keep(err)
}

// LoadDouble reads a double field (RedisModule_LoadDouble).
func (m *ModuleReader) LoadDouble() (float64, error) {
	if err := m.op(modDouble, "a double"); err != nil {
		return 0, err
	}
	v, err := m.in.float64LE("module double")
	return v, m.keep(err)
}

// LoadFloat reads a float field (RedisModule_LoadFloat).
func (m *ModuleReader) LoadFloat() (float32, error) {
	if err := m.op(modFloat, "a float"); err != nil {
		return 0, err
	}
	p, err := m.in.fixed(4, "module float")
	if err != nil {
		return 0, m.keep(err)
	}
	return math.Float32frombits(uint32(p[0]) | uint32(p[1])<<8 | uint32(p[2])<<16 | uint32(p[3])<<24), nil
}

// LoadString reads a string field of at most max bytes (and at most the
// reader's Options.MaxString) into a new slice. A longer field refuses the
// value (its bytes are passed over; the stream stays readable).
func (m *ModuleReader) LoadString(max uint64) ([]byte, error) {
	limit := min(max, m.stringCap)
	var out []byte
	err := m.LoadStringInto(func(n uint64) ([]byte, error) {
		if n > limit {
			return nil, fmt.Errorf("rdb: module %s string of %d bytes (limit %d): %w", m.typeName, n, limit, ErrLimit)
		}
		out = make([]byte, n)
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// LoadStringInto reads a string field into memory the decoder provides:
// alloc is called with the field's length (its uncompressed length when
// it is LZF-compressed) once that is known, and returns a slice of
// exactly that length to fill, or an error that refuses the value (it
// should check the length against the decoder's own limits: the reader's
// MaxString does not apply). Large arrays (a filter's bits) so go to
// their final place with no copy in between.
func (m *ModuleReader) LoadStringInto(alloc func(n uint64) ([]byte, error)) error {
	if err := m.op(modString, "a string"); err != nil {
		return err
	}
	n, txt, comp, err := m.in.strHead(math.MaxUint64, "module string")
	if err != nil {
		return m.keep(err)
	}
	if txt != nil {
		n = uint64(len(txt))
	}
	dst, aerr := alloc(n)
	if aerr == nil && uint64(len(dst)) != n {
		aerr = fmt.Errorf("rdb: module string destination of %d bytes for %d", len(dst), n)
	}
	if aerr != nil {
		// Refused: the field's bytes must still be passed over.
		if txt == nil && comp == nil {
			if err := m.in.discard(n, "module string"); err != nil {
				return m.keep(err)
			}
		}
		return aerr
	}
	switch {
	case txt != nil:
		copy(dst, txt)
	case comp != nil:
		if err := lzfDecompress(comp, dst); err != nil {
			return m.keep(m.in.corrupt(fmt.Sprintf("%v in module string", err)))
		}
	default:
		if err := m.in.full(dst, "module string"); err != nil {
			return m.keep(err)
		}
	}
	return nil
}

// skipRest passes over the value's remaining fields up to its EOF opcode.
func (m *ModuleReader) skipRest() error {
	if m.fatal != nil {
		return m.fatal
	}
	if m.ended {
		return nil
	}
	if m.pending >= 0 {
		if err := skipModuleField(m.in, uint64(m.pending)); err != nil {
			return err
		}
		m.pending = -1
	}
	return skipModuleValue(m.in)
}

// finish checks that the decoder consumed the whole value.
func (m *ModuleReader) finish() (extra bool, err error) {
	if m.fatal != nil {
		return false, m.fatal
	}
	if m.ended {
		return false, nil
	}
	if m.pending >= 0 {
		return true, m.skipRest()
	}
	o, err := m.in.plainLength("module value end")
	if err != nil {
		return false, err
	}
	if o == modEOF {
		m.ended = true
		return false, nil
	}
	if o > modString {
		return false, m.in.corrupt(fmt.Sprintf("module field opcode %d", o))
	}
	m.pending = int(o)
	return true, m.skipRest()
}

func skipModuleField(in *input, op uint64) error {
	switch op {
	case modSigned, modUint:
		_, err := in.plainLength("module integer")
		return err
	case modFloat:
		return in.discard(4, "module float")
	case modDouble:
		return in.discard(8, "module double")
	case modString:
		return in.skipStr("module string")
	}
	return in.corrupt(fmt.Sprintf("module field opcode %d", op))
}

// skipModuleValue passes over module fields up to and including EOF.
func skipModuleValue(in *input) error {
	for {
		o, err := in.plainLength("module field opcode")
		if err != nil {
			return err
		}
		if o == modEOF {
			return nil
		}
		if err := skipModuleField(in, o); err != nil {
			return err
		}
	}
}

// ModuleError reports a module value its decoder refused; the value was
// skipped and the stream goes on.
type ModuleError struct {
	Module string // type name
	EncVer int
	Key    []byte
	Err    error
}

func (e *ModuleError) Error() string {
	return fmt.Sprintf("rdb: key %q: module %s value (encoding version %d) not loaded: %v", e.Key, e.Module, e.EncVer, e.Err)
}

func (e *ModuleError) Unwrap() error { return e.Err }
