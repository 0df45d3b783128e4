package server

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// logScan is what reading a log file found.
type logScan struct {
	Version int    // 1 or 2; 0 when the header was incomplete
	Gen     uint64 // the generation in the header
	Records int    // good records
	// End is the offset after the last good record: where the log ends
	// cleanly, or where a torn tail or corruption starts.
	End  int64
	Size int64
	// Torn says why the bytes after End are an incomplete final record
	// (a crash while appending): they can be cut without losing anything
	// that was acknowledged. Empty when the log ends cleanly.
	Torn string
	// Corrupt says why the record at End is damaged although more follows
	// it: records after it cannot be trusted, and cutting there loses them.
	Corrupt string
}

// scanLog reads a log file of size bytes from r and calls fn with each good
// record's offset and commands. An error from fn stops the scan and is
// returned. Damage is reported in the result, not as an error: torn tails
// and corruption are told apart by the rules in the package documentation.
func scanLog(r io.Reader, size int64, fn func(off int64, cmds [][][]byte) error) (logScan, error) {
	sc := logScan{Size: size}
	br := bufio.NewReaderSize(r, 1<<20)
	head := make([]byte, aofHeaderLen)
	n, err := io.ReadFull(br, head[:aofHeaderLenV1])
	if err != nil {
		if n == 0 && size == 0 || err == io.ErrUnexpectedEOF || err == io.EOF {
			// Created but never completed: nothing was ever logged in it.
			sc.Torn = fmt.Sprintf("incomplete file header (%d bytes)", n)
			return sc, nil
		}
		return sc, err
	}
	switch string(head[:8]) {
	case aofMagicV1:
		sc.Version = 1
		sc.End = aofHeaderLenV1
	case aofMagic:
		if m, err := io.ReadFull(br, head[aofHeaderLenV1:]); err != nil {
			sc.Torn = fmt.Sprintf("incomplete file header (%d bytes)", aofHeaderLenV1+m)
			return sc, nil
		}
		if crc32.Checksum(head[:16], crcTable) != binary.LittleEndian.Uint32(head[16:]) {
			sc.Corrupt = "file header checksum mismatch"
			return sc, nil
		}
		sc.Version = 2
		sc.End = aofHeaderLen
	default:
		sc.Corrupt = "not a bloomkit append-only log (bad magic)"
		return sc, nil
	}
	sc.Gen = binary.LittleEndian.Uint64(head[8:16])
	hlen := recHeaderLen
	if sc.Version == 1 {
		hlen = recHeaderLenV1
	}
	var rec []byte
	h := make([]byte, hlen)
	for {
		off := sc.End
		n, err := io.ReadFull(br, h)
		if err == io.EOF {
			return sc, nil
		}
		if err != nil {
			sc.Torn = fmt.Sprintf("partial record header (%d of %d bytes)", n, hlen)
			return sc, nil
		}
		l := int64(binary.LittleEndian.Uint32(h[0:]))
		sum := binary.LittleEndian.Uint32(h[4:])
		if sc.Version == 2 && crc32.Checksum(h[:8], crcTable) != binary.LittleEndian.Uint32(h[8:]) {
			if zeroTail(h, br) {
				sc.Torn = "zero-filled tail"
			} else {
				sc.Corrupt = "record header checksum mismatch"
			}
			return sc, nil
		}
		if sc.Version == 1 && l == 0 && sum == 0 && zeroTail(h, br) {
			sc.Torn = "zero-filled tail"
			return sc, nil
		}
		next := off + int64(hlen) + l
		if next > size {
			if sc.Version == 2 && l > maxRecord {
				sc.Corrupt = fmt.Sprintf("impossible record length %d", l)
			} else {
				sc.Torn = "record extends past end of file"
			}
			return sc, nil
		}
		if int64(cap(rec)) < l {
			rec = make([]byte, l)
		}
		rec = rec[:l]
		if _, err := io.ReadFull(br, rec); err != nil {
			sc.Torn = "partial record"
			return sc, nil
		}
		if crc32.Checksum(rec, crcTable) != sum {
			if next == size {
				// The last record, complete in length but not in content:
				// the file grew before its data reached the disk.
				sc.Torn = "last record's checksum mismatch (partly written)"
			} else {
				sc.Corrupt = "record checksum mismatch"
			}
			return sc, nil
		}
		var cmds [][][]byte
		if sc.Version == 1 {
			args, rest, err := decodeCommand(rec)
			if err == nil && len(rest) == 0 {
				cmds = [][][]byte{args}
			}
		} else {
			cmds, _ = decodePayload(rec)
		}
		if cmds == nil {
			sc.Corrupt = "malformed record"
			return sc, nil
		}
		if fn != nil {
			if err := fn(off, cmds); err != nil {
				return sc, err
			}
		}
		sc.Records++
		sc.End = next
	}
}

// zeroTail reports whether h and everything left in r are zero bytes.
func zeroTail(h []byte, r *bufio.Reader) bool {
	for _, b := range h {
		if b != 0 {
			return false
		}
	}
	for {
		b, err := r.ReadByte()
		if err != nil {
			return true
		}
		if b != 0 {
			return false
		}
	}
}

// LogCheck is the result of CheckLog.
type LogCheck struct {
	Path    string
	Version int
	// Generation is the log's generation number (its snapshot's).
	Generation uint64
	// Records is the number of good records before End.
	Records int
	// End is the offset after the last good record; Size the file's size.
	End, Size int64
	// Problem describes what follows End ("" when the log ends cleanly).
	Problem string
	// Corrupt is true when the problem is damage before the end of the
	// file rather than a torn final record.
	Corrupt bool
	// Fixed is true when CheckLog truncated the file at End.
	Fixed bool
}

// CheckLog reads the append-only log at path and reports its good records
// and the first damage, as redis-check-aof does. With fix it truncates the
// file at the first bad record (losing everything from there on) and
// fsyncs it, holding the data directory's lock (LockDir): with a server
// running there it fails with ErrDirLocked and changes nothing.
func CheckLog(path string, fix bool) (LogCheck, error) {
	res := LogCheck{Path: path}
	if fix {
		// A running server appends to this log: cutting it under its feet
		// would lose acknowledged writes. --fix needs it stopped.
		lock, err := LockDir(filepath.Dir(path))
		if err != nil {
			return res, fmt.Errorf("not fixing %s: %w", path, err)
		}
		defer lock.Unlock()
	}
	f, err := os.Open(path)
	if err != nil {
		return res, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return res, err
	}
	sc, err := scanLog(f, st.Size(), nil)
	f.Close()
	if err != nil {
		return res, fmt.Errorf("read %s: %w", path, err)
	}
	res.Version, res.Generation, res.Records, res.End, res.Size = sc.Version, sc.Gen, sc.Records, sc.End, sc.Size
	switch {
	case sc.Corrupt != "":
		res.Problem, res.Corrupt = sc.Corrupt, true
	case sc.Torn != "":
		res.Problem = sc.Torn
	}
	if fix && res.Problem != "" {
		if res.Version == 0 || (res.Corrupt && res.End < aofHeaderLenV1) {
			return res, fmt.Errorf("%s: the file header itself is damaged (%s); nothing to keep — move the file away instead", path, res.Problem)
		}
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return res, err
		}
		if err := w.Truncate(res.End); err != nil {
			w.Close()
			return res, err
		}
		if err := w.Sync(); err != nil {
			w.Close()
			return res, err
		}
		if err := w.Close(); err != nil {
			return res, err
		}
		res.Fixed = true
	}
	return res, nil
}
