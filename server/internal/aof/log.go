package aof

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The append-only log.
//
// A log file starts with a 20-byte header: the magic "BKAOF002", the file's
// generation (u64) and the CRC-32C of those 16 bytes. Records follow, each
//
//	u32 payload length | u32 CRC-32C of the payload | u32 CRC-32C of the previous 8 bytes | payload
//
// so every byte that decides where a record ends is checksummed: a flipped
// bit in a length is caught by the header checksum instead of silently
// swallowing the records behind it. The payload is one byte of kind, then
//
//	recCommand:     u32 argc, then u32 length + bytes for each argument
//	recTransaction: u32 count, then that many commands encoded as above
//
// A MULTI/EXEC block is one recTransaction record, so a crash replays all of
// it or none of it. Version 1 logs (magic "BKAOF001", 16-byte header and
// 8-byte record headers whose length was not checksummed) are still read.
const (
	aofMagicV1      = "BKAOF001"
	aofMagic        = "BKAOF002"
	aofHeaderLenV1  = 16
	HeaderLen       = 20
	recHeaderLenV1  = 8
	RecordHeaderLen = 12

	recCommand     = 1
	recTransaction = 2

	// MaxRecord bounds one record's payload: a longer one would not fit
	// the record header's 32-bit length.
	MaxRecord = 1 << 31
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt marks a snapshot or log that failed its checksum or structure checks.
var ErrCorrupt = errors.New("corrupt file")

func aofHeader(gen uint64) []byte {
	h := make([]byte, HeaderLen)
	copy(h, aofMagic)
	binary.LittleEndian.PutUint64(h[8:], gen)
	binary.LittleEndian.PutUint32(h[16:], crc32.Checksum(h[:16], crcTable))
	return h
}

// AppendCommand encodes one command's arguments (argc, then each argument).
func AppendCommand(dst []byte, args [][]byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(args)))
	for _, a := range args {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(a)))
		dst = append(dst, a...)
	}
	return dst
}

// beginRecord reserves a record header; finishRecord fills it in once the
// payload after it is complete.
func beginRecord(dst []byte, kind byte) ([]byte, int) {
	start := len(dst)
	dst = append(dst, make([]byte, RecordHeaderLen)...)
	return append(dst, kind), start
}

func finishRecord(dst []byte, start int) []byte {
	payload := dst[start+RecordHeaderLen:]
	h := dst[start : start+RecordHeaderLen]
	binary.LittleEndian.PutUint32(h[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(payload, crcTable))
	binary.LittleEndian.PutUint32(h[8:], crc32.Checksum(h[:8], crcTable))
	return dst
}

// EncodeRecord appends a one-command record.
func EncodeRecord(dst []byte, args [][]byte) []byte {
	dst, start := beginRecord(dst, recCommand)
	return finishRecord(AppendCommand(dst, args), start)
}

// EncodeTransaction appends a record holding the write commands of one
// MULTI/EXEC block.
func EncodeTransaction(dst []byte, cmds [][][]byte) []byte {
	dst, start := beginRecord(dst, recTransaction)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(cmds)))
	for _, c := range cmds {
		dst = AppendCommand(dst, c)
	}
	return finishRecord(dst, start)
}

// decodeCommand reads one command from p and returns the rest of p.
func decodeCommand(p []byte) ([][]byte, []byte, error) {
	if len(p) < 4 {
		return nil, nil, ErrCorrupt
	}
	n := binary.LittleEndian.Uint32(p)
	p = p[4:]
	if n == 0 || uint64(n) > uint64(len(p))/4 {
		return nil, nil, ErrCorrupt
	}
	args := make([][]byte, 0, n)
	for i := uint32(0); i < n; i++ {
		if len(p) < 4 {
			return nil, nil, ErrCorrupt
		}
		l := binary.LittleEndian.Uint32(p)
		p = p[4:]
		if uint64(l) > uint64(len(p)) {
			return nil, nil, ErrCorrupt
		}
		args = append(args, p[:l:l])
		p = p[l:]
	}
	return args, p, nil
}

// decodePayload returns the commands of one record payload (version 2).
func decodePayload(p []byte) ([][][]byte, error) {
	if len(p) < 1 {
		return nil, ErrCorrupt
	}
	kind, p := p[0], p[1:]
	switch kind {
	case recCommand:
		args, rest, err := decodeCommand(p)
		if err != nil || len(rest) != 0 {
			return nil, ErrCorrupt
		}
		return [][][]byte{args}, nil
	case recTransaction:
		if len(p) < 4 {
			return nil, ErrCorrupt
		}
		n := binary.LittleEndian.Uint32(p)
		p = p[4:]
		if uint64(n) > uint64(len(p))/8 {
			return nil, ErrCorrupt
		}
		cmds := make([][][]byte, 0, n)
		for i := uint32(0); i < n; i++ {
			args, rest, err := decodeCommand(p)
			if err != nil {
				return nil, err
			}
			cmds = append(cmds, args)
			p = rest
		}
		if len(p) != 0 {
			return nil, ErrCorrupt
		}
		return cmds, nil
	}
	return nil, ErrCorrupt
}

// Log is the append-only log the server writes. Commands append
// records to an in-memory buffer while the keyspace is locked (append);
// flushTo writes the buffer to the file and, for appendfsync always, fsyncs
// it, before any reply that depends on those records leaves the server.
// Positions (append's result, written, synced) count bytes ever appended,
// across files: a rotation starts a new file without resetting them.
//
// The first failed write or fsync is sticky: Linux may drop the dirty pages
// of a failed fsync and report success next time, so nothing written to
// this log is trusted again. The server answers writes with MISCONF until a
// snapshot (which holds everything in memory) and a new log replace it.
type Log struct {
	dir Dir

	mu       sync.Mutex // buf, spare, rot; appended is written under it
	buf      []byte
	spare    []byte
	appended atomic.Int64
	rot      *LogFile // the file records after rotAt go to
	rotAt    int64

	ioMu    sync.Mutex // cur, retired, unsynced, err
	cur     *LogFile
	retired []*LogFile // files rotated away from, not yet fsynced and closed
	err     error      // sticky failure
	errGen  uint64     // generation of the file that failed
	// policy is appendfsync (a Policy; CONFIG SET changes it). With
	// Always the buffers written but not yet fsynced are kept until they
	// are: if the fsync fails, the records in them are in doubt, and
	// onDoubt is told which.
	policy   atomic.Int32
	unsynced []pendingBuf
	// onDoubt is given the records that were appended but are not durable
	// when the log fails: the writes whose outcome is now unknown.
	onDoubt func(records []byte)
	written atomic.Int64
	failed  atomic.Bool // err != nil, readable without a lock

	// curGen and curSize are cur's generation and size, readable without
	// ioMu (which a write(2) holds): INFO reads them with the keyspace
	// lock held, which must not wait for the disk.
	curGen  atomic.Uint64
	curSize atomic.Int64

	syncMu sync.Mutex // serialises fsyncs
	synced atomic.Int64
	// onLatency is told how long each write(2) ("aof-write") and each
	// fsync under appendfsync always ("aof-fsync-always") took: Redis's
	// latency-monitor events. Set before the log is used.
	onLatency func(event string, d time.Duration)
}

// SetLatencyHook makes the log report the time its writes and its fsyncs
// under appendfsync always take (events "aof-write", "aof-fsync-always").
// Call it before the log is used.
func (a *Log) SetLatencyHook(f func(event string, d time.Duration)) { a.onLatency = f }

// pendingBuf is a written buffer ending at log position end.
type pendingBuf struct {
	end int64
	b   []byte
}

// LogFile is one log file.
type LogFile struct {
	name string
	gen  uint64
	f    File
	size int64 // bytes written to it
	end  int64 // for a retired file: the position its last byte has
}

func newLog(dir Dir, cur *LogFile, pos int64) *Log {
	a := &Log{dir: dir, cur: cur}
	a.curGen.Store(cur.gen)
	a.curSize.Store(cur.size)
	a.appended.Store(pos)
	a.written.Store(pos)
	a.synced.Store(pos)
	return a
}

// Policy is appendfsync: how durable the records a reply depends on are
// before it leaves.
type Policy int32

const (
	// Always: written and fsynced (one fsync for every connection
	// waiting at once: group commit).
	Always Policy = iota
	// Everysec: written; fsynced once a second (Tick).
	Everysec
	// No: written; fsynced when the kernel chooses.
	No
)

var policyNames = [...]string{Always: "always", Everysec: "everysec", No: "no"}

// String is the policy's appendfsync name.
func (p Policy) String() string { return policyNames[p] }

// ParsePolicy reads an appendfsync name, in any case.
func ParsePolicy(name string) (Policy, bool) {
	for i, n := range policyNames {
		if strings.EqualFold(n, name) {
			return Policy(i), true
		}
	}
	return 0, false
}

// Policy is the appendfsync policy in force.
func (a *Log) Policy() Policy { return Policy(a.policy.Load()) }

// SetPolicy changes the policy for the replies from now on.
func (a *Log) SetPolicy(p Policy) {
	was := Policy(a.policy.Swap(int32(p)))
	if was == Always && p != Always {
		// Release the buffers kept for appendfsync always: fsync them
		// (with "no" nothing else would), on a goroutine of its own: the
		// caller (CONFIG SET) holds the keyspace lock, which must not
		// wait for the disk. A failure is the log's, as any fsync's.
		go a.flushTo(0, true)
	}
}

// Commit makes position pos as durable as the policy promises; a reply
// that depends on the records before pos may leave once it returns nil.
// Concurrent callers share the work (group commit). It fails when the log
// failed first: then nothing that depends on pos may be told.
func (a *Log) Commit(pos int64) error {
	always := a.Policy() == Always
	if a.durable(pos, always) {
		return nil
	}
	return a.flushTo(pos, always)
}

// Tick is the policy's work once a second: with Everysec the buffer is
// written and fsynced, with No written (and the files rotated away from
// closed, which no fsync will do). A failed log is left alone: only a
// rewrite replaces it.
func (a *Log) Tick() error {
	p := a.Policy()
	if p == Always || a.Failure() != nil {
		return nil
	}
	if err := a.flushTo(0, p == Everysec); err != nil {
		return err
	}
	if p == No {
		a.closeRetired(nil)
	}
	return nil
}

// Sync writes and fsyncs everything appended so far, whatever the policy
// (SHUTDOWN).
func (a *Log) Sync() error { return a.flushTo(0, true) }

// Failed reports whether the log failed (and writes must be refused);
// it takes no lock.
func (a *Log) Failed() bool { return a.failed.Load() }

// Appended is the position after the last record appended: what a reply
// that saw everything so far must wait for.
func (a *Log) Appended() int64 { return a.appended.Load() }

// Synced is the position up to which the log is fsynced.
func (a *Log) Synced() int64 { return a.synced.Load() }

// Unsynced is the number of written buffers kept until they are fsynced
// (appendfsync always).
func (a *Log) Unsynced() int {
	a.ioMu.Lock()
	defer a.ioMu.Unlock()
	return len(a.unsynced)
}

// Append adds a record (built by enc) and returns the position after it.
func (a *Log) Append(enc func([]byte) []byte) int64 {
	a.mu.Lock()
	before := len(a.buf)
	a.buf = enc(a.buf)
	pos := a.appended.Add(int64(len(a.buf) - before))
	a.mu.Unlock()
	return pos
}

// Rotate makes records appended from now on go to f. The records before
// it still go to the current file, which is fsynced and closed by the next
// fsync. Called with the keyspace locked, so the switch is a point in time.
func (a *Log) Rotate(f *LogFile) {
	a.mu.Lock()
	a.rot, a.rotAt = f, a.appended.Load()
	a.mu.Unlock()
}

// durable reports whether position pos is already as durable as sync asks.
func (a *Log) durable(pos int64, sync bool) bool {
	if sync {
		return a.synced.Load() >= pos
	}
	return a.written.Load() >= pos
}

// flushTo writes buffered records and, with sync, fsyncs, until position
// pos is written (and durable). Concurrent callers share the work: one
// write and one fsync cover every connection waiting (group commit).
func (a *Log) flushTo(pos int64, sync bool) error {
	if err := a.write(pos); err != nil {
		return err
	}
	if sync {
		return a.syncTo(pos)
	}
	return nil
}

// write writes the buffer to the file(s) unless position pos is already
// written. A pending rotation is carried out first: the records before its
// point go to the old file, which is retired (syncTo fsyncs and closes it).
// After a failure nothing is written; records appended after a rotation
// stay buffered for the log that recover revives.
func (a *Log) write(pos int64) error {
	a.ioMu.Lock()
	defer a.ioMu.Unlock()
	if a.err == nil && pos > 0 && a.written.Load() >= pos {
		return nil
	}
	a.mu.Lock()
	if a.rot != nil {
		rot, rotAt := a.rot, a.rotAt
		n := rotAt - (a.appended.Load() - int64(len(a.buf)))
		old := a.buf[:n]
		a.buf, a.spare, a.rot = append(a.spare[:0], a.buf[n:]...), nil, nil
		a.mu.Unlock()
		kept := false
		if a.err == nil {
			if err := a.writeFile(a.cur, old); err != nil {
				// The records are in doubt, and in memory: the snapshot
				// that comes with this rotation holds them.
				a.fail(err, a.cur, old)
			} else {
				a.written.Store(rotAt)
				kept = a.keep(rotAt, old)
			}
		}
		a.cur.end = rotAt
		a.retired = append(a.retired, a.cur)
		a.cur = rot
		a.curGen.Store(rot.gen)
		a.curSize.Store(rot.size)
		a.mu.Lock()
		if !kept && cap(old) <= 1<<20 && a.spare == nil {
			a.spare = old[:0]
		}
	}
	if a.err != nil {
		a.mu.Unlock()
		return a.err
	}
	buf := a.buf
	a.buf, a.spare = a.spare[:0], nil
	end := a.appended.Load()
	a.mu.Unlock()
	err := a.writeFile(a.cur, buf)
	if err != nil {
		a.fail(err, a.cur, buf)
		return a.err
	}
	a.written.Store(end)
	if !a.keep(end, buf) && cap(buf) <= 1<<20 {
		a.mu.Lock()
		a.spare = buf[:0]
		a.mu.Unlock()
	}
	return nil
}

// keep holds a written buffer until it is fsynced (keepUnsynced; ioMu held).
func (a *Log) keep(end int64, b []byte) bool {
	if a.Policy() != Always || len(b) == 0 {
		return false
	}
	a.unsynced = append(a.unsynced, pendingBuf{end, b})
	return true
}

// writeFile writes p to lf; on failure it cuts any partial record off.
func (a *Log) writeFile(lf *LogFile, p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if a.onLatency != nil {
		defer func(t time.Time) { a.onLatency("aof-write", time.Since(t)) }(time.Now())
	}
	if _, err := lf.f.Write(p); err != nil {
		lf.f.Truncate(lf.size)
		return fmt.Errorf("write %s: %w", a.dir.Path(lf.name), err)
	}
	lf.size += int64(len(p))
	if lf == a.cur {
		a.curSize.Store(lf.size)
	}
	return nil
}

// fail records the log's first failure, in lf (ioMu held). extra holds
// records that were being written when it failed. Everything not durable
// is handed to onDoubt before the failure becomes visible, so whoever sees
// the failure also sees which writes are in doubt.
func (a *Log) fail(err error, lf *LogFile, extra ...[]byte) {
	if a.err != nil {
		return
	}
	if a.onDoubt != nil {
		for _, u := range a.unsynced {
			a.onDoubt(u.b)
		}
		for _, b := range extra {
			a.onDoubt(b)
		}
	}
	a.unsynced = nil
	a.err, a.errGen = err, lf.gen
	// Under mu: a record appended after this sees the failure (and puts
	// itself in doubt), one appended before is handed over here.
	a.mu.Lock()
	if a.onDoubt != nil {
		a.onDoubt(a.buf)
	}
	a.failed.Store(true)
	a.mu.Unlock()
}

// FailedGen is the generation of the file whose write or fsync failed.
func (a *Log) FailedGen() uint64 {
	a.ioMu.Lock()
	defer a.ioMu.Unlock()
	return a.errGen
}

// Failure is the log's sticky error, or nil.
func (a *Log) Failure() error {
	if !a.failed.Load() {
		return nil
	}
	a.ioMu.Lock()
	defer a.ioMu.Unlock()
	return a.err
}

// syncTo fsyncs retired files and the current file until pos is durable
// (pos 0: everything written so far).
func (a *Log) syncTo(pos int64) error {
	a.syncMu.Lock()
	defer a.syncMu.Unlock()
	if pos > 0 && a.synced.Load() >= pos {
		return a.Failure()
	}
	a.ioMu.Lock()
	retired := a.retired
	a.retired = nil
	cur, target, err := a.cur, a.written.Load(), a.err
	a.ioMu.Unlock()
	failed := cur
	for _, lf := range retired {
		if err == nil {
			if e := lf.f.Sync(); e != nil {
				err = fmt.Errorf("fsync %s: %w", a.dir.Path(lf.name), e)
				failed = lf
			}
		}
		lf.f.Close()
		if err == nil && lf.end > a.synced.Load() {
			a.synced.Store(lf.end)
		}
	}
	if err == nil && (len(retired) > 0 || target > a.synced.Load()) {
		t := time.Now()
		e := cur.f.Sync()
		if a.onLatency != nil && a.Policy() == Always {
			a.onLatency("aof-fsync-always", time.Since(t))
		}
		if e != nil {
			err = fmt.Errorf("fsync %s: %w", a.dir.Path(cur.name), e)
		}
	}
	if err != nil {
		a.ioMu.Lock()
		a.fail(err, failed)
		err = a.err
		a.ioMu.Unlock()
		return err
	}
	if target > a.synced.Load() {
		a.synced.Store(target)
	}
	// Buffers kept while appendfsync was always (CONFIG SET can change
	// it) are released once synced.
	a.ioMu.Lock()
	i := 0
	for i < len(a.unsynced) && a.unsynced[i].end <= target {
		i++
	}
	a.unsynced = append(a.unsynced[:0], a.unsynced[i:]...)
	a.ioMu.Unlock()
	return nil
}

// Recover clears the sticky failure once a snapshot holds everything the
// failed log was to hold: the current file, created with that snapshot,
// takes the records appended since its point in time. The files rotated
// away from are superseded by the snapshot and closed without another
// fsync (it might fail again, or lie).
func (a *Log) Recover() {
	a.write(0) // carry out the rotation if it is still pending
	a.closeRetired(func() {
		a.err, a.errGen = nil, 0
		a.failed.Store(false)
		a.mu.Lock()
		w := a.appended.Load() - int64(len(a.buf))
		a.mu.Unlock()
		a.written.Store(w)
		a.synced.Store(w)
	})
}

// closeRetired closes the files rotated away from without fsyncing them
// (appendfsync no, where nothing else would close them; and recover) and
// then runs also, if given, with syncMu and ioMu still held.
func (a *Log) closeRetired(also func()) {
	a.syncMu.Lock()
	defer a.syncMu.Unlock()
	a.ioMu.Lock()
	defer a.ioMu.Unlock()
	for _, lf := range a.retired {
		lf.f.Close()
	}
	a.retired = nil
	if also != nil {
		also()
	}
}

// Generation is the current file's generation.
func (a *Log) Generation() uint64 { return a.curGen.Load() }

// Size is the current file's size.
func (a *Log) Size() int64 { return a.curSize.Load() }

// Buffered is the number of bytes appended but not yet written.
func (a *Log) Buffered() int64 { return a.appended.Load() - a.written.Load() }

// Close writes and fsyncs what is buffered and closes the files.
func (a *Log) Close() error {
	err := a.flushTo(0, true)
	a.syncMu.Lock()
	a.ioMu.Lock()
	for _, lf := range a.retired {
		lf.f.Close()
	}
	a.retired = nil
	if a.cur.f != nil {
		a.cur.f.Close()
	}
	a.fail(errLogClosed, a.cur)
	a.ioMu.Unlock()
	a.syncMu.Unlock()
	return err
}

var errLogClosed = errors.New("append-only log closed")

// DecodeRecords calls fn with the commands of each record in a run of
// records as Append encoded them, or with an error for a record that does
// not decode. An incomplete last record ends the run.
func DecodeRecords(records []byte, fn func(cmds [][][]byte, err error)) {
	for len(records) >= RecordHeaderLen {
		l := int(binary.LittleEndian.Uint32(records))
		if l > len(records)-RecordHeaderLen {
			break
		}
		cmds, err := decodePayload(records[RecordHeaderLen : RecordHeaderLen+l])
		records = records[RecordHeaderLen+l:]
		fn(cmds, err)
	}
}

// SwapFile replaces the handle of the file being appended to and returns
// the one it had (tests make writes fail with a read-only handle).
func (a *Log) SwapFile(f File) File {
	a.ioMu.Lock()
	defer a.ioMu.Unlock()
	old := a.cur.f
	a.cur.f = f
	return old
}
