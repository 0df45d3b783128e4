package rdb

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
)

// RDB versions this package reads and writes. Redis 6.2 writes 9, 7.0
// writes 10, 7.2 writes 11, 7.4 writes 12; versions from 1 are read.
const (
	MinVersion = 1
	MaxVersion = 12
)

// Opcodes of the RDB stream.
const (
	opSlotInfo     = 244
	opFunction2    = 245
	opFunctionPre  = 246
	opModuleAux    = 247
	opIdle         = 248
	opFreq         = 249
	opAux          = 250
	opResizeDB     = 251
	opExpireTimeMs = 252
	opExpireTime   = 253
	opSelectDB     = 254
	opEOF          = 255
)

// Value types (the byte before a key).
const (
	TypeString  = 0
	TypeModule2 = 7
)

var typeNames = map[byte]string{
	0: "string", 1: "list", 2: "set", 3: "zset", 4: "hash", 5: "zset",
	6: "module", 7: "module", 9: "hash", 10: "list", 11: "set", 12: "zset",
	13: "hash", 14: "list", 15: "stream", 16: "hash", 17: "zset", 18: "list",
	19: "stream", 20: "set", 21: "stream", 22: "hash", 23: "hash", 24: "hash", 25: "hash",
}

// TypeName is the Redis type (TYPE's answer) of an RDB value type byte,
// or "unknown".
func TypeName(t byte) string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return "unknown"
}

// Options bound and extend a Reader.
type Options struct {
	// MaxString is the longest string (key, string value, aux field,
	// module string read with LoadString) accepted; 0 means 512 MiB, the
	// largest string Redis accepts by default (proto-max-bulk-len).
	MaxString uint64
	// Modules maps module type names (e.g. "MBbloom--") to their decoders.
	// Values of other module types are skipped and reported.
	Modules map[string]ModuleDecoder
	// ResizeDB, if set, is given each RESIZEDB hint as it is read: the
	// number of keys and of keys with an expiry in database db that
	// follow, as the writer counted them (Redis sizes its dictionaries
	// from it before loading). A hint, unchecked: the stream may hold
	// other numbers.
	ResizeDB func(db int, keys, expires uint64)
	// Reuse makes Next return the same *Entry for every key, overwritten
	// by the next call, instead of a new one (an allocation per key
	// saved, for a caller that keeps no Entry).
	Reuse bool
}

func (o *Options) maxString() uint64 {
	if o.MaxString == 0 {
		return 512 << 20
	}
	return o.MaxString
}

// Kind says what a record is.
type Kind int

// Record kinds.
const (
	// KindKey is a key with its value (Entry.String, Entry.Value) or, when
	// Entry.Err is set, a key whose value was skipped.
	KindKey Kind = iota
	// KindAux is an aux field: Entry.Key is its name, Entry.String its value.
	KindAux
	// KindFunction is a function library (FUNCTION2), skipped.
	KindFunction
	// KindModuleAux is a module's aux data, skipped; Entry.Module names it.
	KindModuleAux
)

// Entry is one record of an RDB stream.
type Entry struct {
	Kind Kind
	// DB is the database the key belongs to (the last SELECTDB).
	DB int
	// Key is the key's name (or the aux field's name). Key and String
	// are made anew for each record and the reader keeps no reference to
	// them: the caller owns them.
	Key []byte
	// Type is the RDB value type byte (TypeString, TypeModule2, ...).
	Type byte
	// String is a string value (or an aux field's value).
	String []byte
	// Module and EncVer name a module value's type and encoding version;
	// Value is what its ModuleDecoder returned.
	Module string
	EncVer int
	Value  any
	// ExpireAt is the key's absolute expiry in Unix milliseconds when
	// HasExpire is set.
	ExpireAt  int64
	HasExpire bool
	// Idle (seconds, LRU) and Freq (LFU counter) are -1 when absent.
	Idle int64
	Freq int
	// Err, for a key, says why its value was not decoded: *TypeError (a
	// type this package does not decode, or a module without a decoder)
	// or *ModuleError (the decoder refused it). The value's bytes were
	// passed over; the stream goes on.
	Err error
}

// TypeError reports a key whose value type is not decoded.
type TypeError struct {
	Key    []byte
	Type   byte   // RDB value type
	Name   string // Redis type name ("list", "hash", ...)
	Module string // for module values: the module type name
}

func (e *TypeError) Error() string {
	if e.Module != "" {
		return fmt.Sprintf("rdb: key %q holds a value of module type %s, which is not decoded here", e.Key, e.Module)
	}
	return fmt.Sprintf("rdb: key %q holds a %s (RDB type %d), which is not decoded here", e.Key, e.Name, e.Type)
}

// Reader reads an RDB stream record by record.
type Reader struct {
	in      input
	opts    Options
	version int
	db      int
	done    bool
	err     error
	entry   Entry // the one Next returns with Options.Reuse
}

// NewReader reads and checks the RDB header ("REDIS" and a version
// between MinVersion and MaxVersion). Given a *bufio.Reader it reads from
// it directly and consumes exactly the RDB's bytes, so that what follows
// (a replication stream) stays there; any other reader is buffered.
func NewReader(r io.Reader, opts Options) (*Reader, error) {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	rd := &Reader{in: input{r: br}, opts: opts}
	var hdr [9]byte
	if err := rd.in.full(hdr[:], "header"); err != nil {
		return nil, err
	}
	if !bytes.Equal(hdr[:5], []byte("REDIS")) {
		return nil, fmt.Errorf("rdb: header %q does not start with REDIS: %w", hdr[:], ErrCorrupt)
	}
	v, err := strconv.Atoi(string(hdr[5:]))
	if err != nil || hdr[5] < '0' || hdr[5] > '9' {
		return nil, fmt.Errorf("rdb: header %q: %w", hdr[:], ErrCorrupt)
	}
	if v < MinVersion || v > MaxVersion {
		return nil, fmt.Errorf("rdb: version %d (this reader handles %d to %d): %w", v, MinVersion, MaxVersion, ErrVersion)
	}
	rd.version = v
	return rd, nil
}

// Version is the RDB version the header names.
func (r *Reader) Version() int { return r.version }

// Offset is the number of bytes read so far.
func (r *Reader) Offset() int64 { return r.in.off }

// Next returns the next record. At the end of the stream it checks the
// checksum and returns io.EOF; any other error is final (the stream is
// unusable from there).
func (r *Reader) Next() (*Entry, error) {
	if r.err != nil {
		return nil, r.err
	}
	e, err := r.next()
	if err != nil {
		r.err = err
	}
	return e, err
}

func (r *Reader) next() (*Entry, error) {
	if r.done {
		return nil, io.EOF
	}
	in := &r.in
	var e *Entry
	if r.opts.Reuse {
		e = &r.entry
		*e = Entry{Idle: -1, Freq: -1}
	} else {
		e = &Entry{Idle: -1, Freq: -1}
	}
	for {
		t, err := in.byte("opcode")
		if err != nil {
			return nil, err
		}
		switch t {
		case opExpireTime:
			p, err := in.fixed(4, "expire time")
			if err != nil {
				return nil, err
			}
			e.ExpireAt = int64(int32(uint32(p[0])|uint32(p[1])<<8|uint32(p[2])<<16|uint32(p[3])<<24)) * 1000
			e.HasExpire = true
		case opExpireTimeMs:
			if e.ExpireAt, err = in.int64LE("expire time"); err != nil {
				return nil, err
			}
			e.HasExpire = true
		case opFreq:
			b, err := in.byte("LFU frequency")
			if err != nil {
				return nil, err
			}
			e.Freq = int(b)
		case opIdle:
			v, err := in.plainLength("LRU idle time")
			if err != nil {
				return nil, err
			}
			e.Idle = int64(min(v, math.MaxInt64))
		case opEOF:
			if err := r.checksum(); err != nil {
				return nil, err
			}
			r.done = true
			return nil, io.EOF
		case opSelectDB:
			v, err := in.plainLength("database number")
			if err != nil {
				return nil, err
			}
			if v > math.MaxInt32 {
				return nil, in.corrupt(fmt.Sprintf("database number %d", v))
			}
			r.db = int(v)
		case opResizeDB:
			keys, err := in.plainLength("resize hint")
			if err != nil {
				return nil, err
			}
			expires, err := in.plainLength("resize hint")
			if err != nil {
				return nil, err
			}
			if r.opts.ResizeDB != nil {
				r.opts.ResizeDB(r.db, keys, expires)
			}
		case opSlotInfo:
			for range 3 {
				if _, err := in.plainLength("slot info"); err != nil {
					return nil, err
				}
			}
		case opAux:
			k, err := in.str(r.opts.maxString(), "aux field name")
			if err != nil {
				return nil, err
			}
			v, err := in.str(r.opts.maxString(), "aux field value")
			if err != nil {
				return nil, err
			}
			return &Entry{Kind: KindAux, DB: r.db, Key: k, String: v, Idle: -1, Freq: -1}, nil
		case opModuleAux:
			id, err := in.plainLength("module aux type")
			if err != nil {
				return nil, err
			}
			when, err := in.plainLength("module aux opcode")
			if err != nil {
				return nil, err
			}
			if when != modUint {
				return nil, in.corrupt("module aux data without its 'when' field")
			}
			if _, err := in.plainLength("module aux when"); err != nil {
				return nil, err
			}
			if err := skipModuleValue(in); err != nil {
				return nil, err
			}
			name, ver := ModuleTypeName(id)
			return &Entry{Kind: KindModuleAux, DB: r.db, Module: name, EncVer: ver, Idle: -1, Freq: -1}, nil
		case opFunction2:
			if err := in.skipStr("function library"); err != nil {
				return nil, err
			}
			return &Entry{Kind: KindFunction, DB: r.db, Idle: -1, Freq: -1}, nil
		case opFunctionPre:
			return nil, in.corrupt("function library in the format of Redis 7.0's release candidates")
		default:
			e.Kind, e.DB, e.Type = KindKey, r.db, t
			if e.Key, err = in.str(r.opts.maxString(), "key"); err != nil {
				return nil, err
			}
			if err := readValue(in, &r.opts, e); err != nil {
				return nil, err
			}
			return e, nil
		}
	}
}

// checksum reads the 8-byte CRC-64 after EOF (RDB 5 and later) and
// compares it; a stored 0 means the writer did not compute one.
func (r *Reader) checksum() error {
	if r.version < 5 {
		return nil
	}
	want := r.in.crc
	var p [8]byte
	n, err := io.ReadFull(r.in.r, p[:])
	r.in.off += int64(n)
	if err != nil {
		return r.in.fail("checksum", err)
	}
	got := uint64(p[0]) | uint64(p[1])<<8 | uint64(p[2])<<16 | uint64(p[3])<<24 |
		uint64(p[4])<<32 | uint64(p[5])<<40 | uint64(p[6])<<48 | uint64(p[7])<<56
	if got != 0 && got != want {
		return fmt.Errorf("rdb: stored checksum %016x, data sums to %016x: %w", got, want, ErrChecksum)
	}
	return nil
}

// readValue reads the value of type e.Type for key e.Key into e. A
// returned error is fatal; a value that is passed over sets e.Err.
func readValue(in *input, opts *Options, e *Entry) error {
	switch e.Type {
	case TypeString:
		v, err := in.str(opts.maxString(), "string value")
		if err != nil {
			return err
		}
		e.String = v
		return nil
	case TypeModule2:
		id, err := in.plainLength("module type")
		if err != nil {
			return err
		}
		e.Module, e.EncVer = ModuleTypeName(id)
		dec := opts.Modules[e.Module]
		if dec == nil {
			e.Err = &TypeError{Key: e.Key, Type: e.Type, Name: "module", Module: e.Module}
			return skipModuleValue(in)
		}
		m := &ModuleReader{in: in, pending: -1, typeName: e.Module, stringCap: opts.maxString()}
		v, derr := dec.DecodeModule(m, e.EncVer)
		if m.fatal != nil {
			return m.fatal
		}
		if derr != nil {
			e.Err = &ModuleError{Module: e.Module, EncVer: e.EncVer, Key: e.Key, Err: derr}
			return m.skipRest()
		}
		extra, err := m.finish()
		if err != nil {
			return err
		}
		if extra {
			if f, ok := v.(interface{ Free() }); ok {
				f.Free() // refused: its memory goes back now
			}
			e.Err = &ModuleError{Module: e.Module, EncVer: e.EncVer, Key: e.Key,
				Err: fmt.Errorf("fields beyond what the decoder read")}
			return nil
		}
		e.Value = v
		return nil
	case 6:
		return in.corrupt("module value in the format of Redis 4.0's release candidates")
	}
	if _, ok := typeNames[e.Type]; !ok {
		return in.corrupt(fmt.Sprintf("unknown value type %d", e.Type))
	}
	e.Err = &TypeError{Key: e.Key, Type: e.Type, Name: TypeName(e.Type)}
	return skipValue(in, e.Type)
}

// skipValue passes over a value of a type this package does not decode,
// following its structure exactly (each count is bounded by the bytes
// the stream actually holds: every element takes at least one).
func skipValue(in *input, t byte) error {
	strs := func(n uint64) error {
		for ; n > 0; n-- {
			if err := in.skipStr("element"); err != nil {
				return err
			}
		}
		return nil
	}
	count := func() (uint64, error) { return in.plainLength("element count") }
	switch t {
	case 1, 2, 14: // list, set, quicklist of ziplists
		n, err := count()
		if err != nil {
			return err
		}
		return strs(n)
	case 4: // hash
		n, err := count()
		if err != nil {
			return err
		}
		for ; n > 0; n-- {
			if err := strs(2); err != nil {
				return err
			}
		}
		return nil
	case 3, 5: // zset: member and score (text or binary double)
		n, err := count()
		if err != nil {
			return err
		}
		for ; n > 0; n-- {
			if err := in.skipStr("zset member"); err != nil {
				return err
			}
			if t == 5 {
				if err := in.discard(8, "zset score"); err != nil {
					return err
				}
				continue
			}
			b, err := in.byte("zset score")
			if err != nil {
				return err
			}
			if b < 253 {
				if err := in.discard(uint64(b), "zset score"); err != nil {
					return err
				}
			}
		}
		return nil
	case 7:
		if _, err := in.plainLength("module type"); err != nil {
			return err
		}
		return skipModuleValue(in)
	case 9, 10, 11, 12, 13, 16, 17, 20, 23: // one serialized blob
		return in.skipStr("encoded value")
	case 25: // hash listpack with field expiries: min expiry, blob
		if err := in.discard(8, "hash min expiry"); err != nil {
			return err
		}
		return in.skipStr("encoded value")
	case 18: // quicklist 2: container kind and node
		n, err := count()
		if err != nil {
			return err
		}
		for ; n > 0; n-- {
			if _, err := in.plainLength("list node kind"); err != nil {
				return err
			}
			if err := in.skipStr("list node"); err != nil {
				return err
			}
		}
		return nil
	case 22, 24: // hash with field expiries: (ttl, field, value)...
		if t == 24 {
			if err := in.discard(8, "hash min expiry"); err != nil {
				return err
			}
		}
		n, err := count()
		if err != nil {
			return err
		}
		for ; n > 0; n-- {
			if _, err := in.plainLength("hash field ttl"); err != nil {
				return err
			}
			if err := strs(2); err != nil {
				return err
			}
		}
		return nil
	case 15, 19, 21:
		return skipStream(in, t)
	}
	return in.corrupt(fmt.Sprintf("unknown value type %d", t))
}

func skipStream(in *input, t byte) error {
	lens := func(n int, what string) error {
		for range n {
			if _, err := in.plainLength(what); err != nil {
				return err
			}
		}
		return nil
	}
	n, err := in.plainLength("stream listpacks")
	if err != nil {
		return err
	}
	for ; n > 0; n-- {
		if err := in.skipStr("stream node key"); err != nil {
			return err
		}
		if err := in.skipStr("stream listpack"); err != nil {
			return err
		}
	}
	meta := 3 // length, last id
	if t >= 19 {
		meta += 5 // first id, max deleted id, entries added
	}
	if err := lens(meta, "stream metadata"); err != nil {
		return err
	}
	groups, err := in.plainLength("stream groups")
	if err != nil {
		return err
	}
	for ; groups > 0; groups-- {
		if err := in.skipStr("stream group name"); err != nil {
			return err
		}
		gm := 2
		if t >= 19 {
			gm++ // entries read
		}
		if err := lens(gm, "stream group"); err != nil {
			return err
		}
		pel, err := in.plainLength("stream PEL size")
		if err != nil {
			return err
		}
		for ; pel > 0; pel-- {
			if err := in.discard(16+8, "stream PEL entry"); err != nil { // id, delivery time
				return err
			}
			if _, err := in.plainLength("stream delivery count"); err != nil {
				return err
			}
		}
		consumers, err := in.plainLength("stream consumers")
		if err != nil {
			return err
		}
		for ; consumers > 0; consumers-- {
			if err := in.skipStr("stream consumer name"); err != nil {
				return err
			}
			times := uint64(8) // seen time
			if t >= 21 {
				times += 8 // active time
			}
			if err := in.discard(times, "stream consumer times"); err != nil {
				return err
			}
			cpel, err := in.plainLength("stream consumer PEL size")
			if err != nil {
				return err
			}
			if cpel > math.MaxUint64/16 {
				return in.corrupt("stream consumer PEL size")
			}
			if err := in.discard(16*cpel, "stream consumer PEL"); err != nil {
				return err
			}
		}
	}
	return nil
}
