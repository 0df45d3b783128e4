package rdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// DumpVersion is the RDB version DUMP payloads are written with: the
// oldest whose encoding of strings and module values is today's, so that
// every Redis from 6.2 on (which refuses payloads newer than its own
// RDB version) restores them.
const DumpVersion = 9

// ErrDumpFooter: a DUMP payload's version is newer than MaxVersion or
// its checksum is wrong (Redis: "DUMP payload version or checksum are
// wrong").
var ErrDumpFooter = errors.New("rdb: DUMP payload version or checksum are wrong")

func dumpFooter(b *bytes.Buffer, o *output, version int) []byte {
	var v [2]byte
	binary.LittleEndian.PutUint16(v[:], uint16(version))
	o.write(v[:])
	b.Write(binary.LittleEndian.AppendUint64(nil, o.crc))
	return b.Bytes()
}

// DumpString returns the DUMP payload of a string value: its type, the
// value, the RDB version and the CRC-64.
func DumpString(value []byte, version int) []byte {
	var b bytes.Buffer
	o := &output{w: &b, compress: true}
	o.byte(TypeString)
	o.str(value)
	return dumpFooter(&b, o, version)
}

// DumpModule returns the DUMP payload of a module value.
func DumpModule(enc ModuleEncoder, version int) ([]byte, error) {
	var b bytes.Buffer
	o := &output{w: &b, compress: true}
	o.byte(TypeModule2)
	if err := writeModule(o, enc); err != nil {
		return nil, err
	}
	return dumpFooter(&b, o, version), nil
}

// ParseDump checks a DUMP payload's footer (version at most MaxVersion,
// CRC-64) and decodes its value into an Entry of kind KindKey without a
// key (Type, String or Module/EncVer/Value; Err for a type that is not
// decoded). A bad footer returns ErrDumpFooter; a value that cannot be
// read, ErrCorrupt (Redis: "Bad data format").
func ParseDump(payload []byte, opts Options) (*Entry, error) {
	if len(payload) < 10 {
		return nil, ErrDumpFooter
	}
	footer := payload[len(payload)-10:]
	version := int(binary.LittleEndian.Uint16(footer))
	if version > MaxVersion {
		return nil, fmt.Errorf("payload of RDB version %d, newer than %d: %w", version, MaxVersion, ErrDumpFooter)
	}
	if Checksum(0, payload[:len(payload)-8]) != binary.LittleEndian.Uint64(footer[2:]) {
		return nil, ErrDumpFooter
	}
	body := payload[:len(payload)-10]
	in := &input{r: bytes.NewReader(body)}
	t, err := in.byte("value type")
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, ErrCorrupt)
	}
	e := &Entry{Kind: KindKey, Type: t, Idle: -1, Freq: -1}
	if err := readValue(in, &opts, e); err != nil {
		if !errors.Is(err, ErrCorrupt) {
			err = fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return nil, err
	}
	return e, nil
}

// WithDumpVersion returns payload (whose footer ParseDump accepted) with
// its RDB version set to version and its checksum recomputed, sharing
// nothing with it. The encodings of strings and module values are the same
// in every RDB version from 9 to 12, so a payload of those types restores
// as the same value under any of them: a server passing a payload on (a
// logged RESTORE) can give every Redis from 6.2 one it accepts.
func WithDumpVersion(payload []byte, version int) []byte {
	out := bytes.Clone(payload)
	if len(out) < 10 {
		return out
	}
	footer := out[len(out)-10:]
	binary.LittleEndian.PutUint16(footer, uint16(version))
	binary.LittleEndian.PutUint64(footer[2:], Checksum(0, out[:len(out)-8]))
	return out
}
