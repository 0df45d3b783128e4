package server

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/aof"
	"github.com/bloomkit/bloomkit/server/internal/keyspace"
	"github.com/bloomkit/bloomkit/server/internal/resp"
)

// A replica's side: the link to its master (one goroutine, follow), which
// connects, shakes hands as a Redis replica does (PING, AUTH, REPLCONF
// listening-port, REPLCONF capa, PSYNC), loads a full sync's snapshot into
// a fresh keyspace that replaces the old one only once it is complete and
// its checksum verified, then applies the stream and acknowledges it once
// a second. Any failure closes the link and it is tried again a second
// later; the keyspace is never left half-loaded.

// Link states, as ROLE names them.
const (
	linkConnect int32 = iota
	linkConnecting
	linkSync
	linkConnected
)

// masterLink is a replica's link to its master.
type masterLink struct {
	// fack is the offset last acknowledged as fsynced, fackNext the
	// offset that becomes it once the log is fsynced to pos (sendAck).
	fack     atomic.Int64
	fackNext atomic.Pointer[fackPoint]
	// failover: PSYNC asks the master to take over (FAILOVER, sent by a
	// master handing its role over; cleared once a sync succeeded).
	failover   atomic.Bool
	host, port string
	stopc      chan struct{}
	once       sync.Once
	mu         sync.Mutex // conn, err, cachedID
	conn       net.Conn
	err        string
	// cachedID is set once this server holds a history its PSYNC can
	// continue (a full sync's, or its own as a master; "" for none).
	cachedID string

	state     atomic.Int32
	lastIO    atomic.Int64 // unix seconds
	downSince atomic.Int64 // unix seconds
	syncing   atomic.Bool
	syncTotal atomic.Int64
	syncRead  atomic.Int64
	wmu       sync.Mutex // writes to conn once streaming (ACKs)

	// redis is set when the master is a Redis server, not bloom serve
	// (repl_redis.go); filter is its RedisBloom's parameters, which the
	// filters its stream creates are created with.
	redis  atomic.Bool
	filter atomic.Pointer[filterConfig]
	// ignored counts the keys the last full sync skipped, skippedCmds
	// the stream's commands on keys of such types passed over since
	// (replica-ignore-unsupported yes).
	ignored, skippedCmds atomic.Int64
	// retry ends the pause before the next try early (nudge).
	retry chan struct{}
}

// nudge makes a link waiting to try again try now.
func (l *masterLink) nudge() {
	select {
	case l.retry <- struct{}{}:
	default:
	}
}

func newMasterLink(host, port string) *masterLink {
	l := &masterLink{host: host, port: port, stopc: make(chan struct{}), retry: make(chan struct{}, 1)}
	l.downSince.Store(time.Now().Unix())
	return l
}

func (l *masterLink) up() bool { return l.state.Load() == linkConnected }

func (l *masterLink) roleState() string {
	switch l.state.Load() {
	case linkConnecting:
		return "connecting"
	case linkSync:
		return "sync"
	case linkConnected:
		return "connected"
	}
	return "connect"
}

func (l *masterLink) lastIOAgo() int64 {
	if t := l.lastIO.Load(); t > 0 {
		return time.Now().Unix() - t
	}
	return -1
}

func (l *masterLink) downSeconds() int64 {
	if t := l.downSince.Load(); t > 0 {
		return time.Now().Unix() - t
	}
	return -1
}

func (l *masterLink) lastError() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *masterLink) setErr(msg string) {
	l.mu.Lock()
	l.err = msg
	l.mu.Unlock()
}

func (l *masterLink) stopped() bool {
	select {
	case <-l.stopc:
		return true
	default:
		return false
	}
}

// killMasterLink closes the connection to this replica's master, if one
// is open (CLIENT KILL TYPE master): the link reconnects and asks to
// continue (PSYNC). It reports whether there was one.
func (s *Server) killMasterLink() bool {
	s.repl.mu.Lock()
	l := s.repl.link
	s.repl.mu.Unlock()
	if l == nil || l.stopped() {
		return false
	}
	l.mu.Lock()
	nc := l.conn
	l.conn = nil
	l.mu.Unlock()
	if nc == nil {
		return false
	}
	closeNow(nc)
	return true
}

// close stops the link (REPLICAOF elsewhere, REPLICAOF NO ONE, shutdown).
func (l *masterLink) close() {
	l.once.Do(func() {
		close(l.stopc)
		l.mu.Lock()
		nc := l.conn
		l.mu.Unlock()
		// Closed without l.mu: closing a TLS connection writes an alert.
		if nc != nil {
			nc.Close()
		}
	})
}

func (l *masterLink) setConn(nc net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped() {
		return false
	}
	l.conn = nc
	return true
}

var errLinkStopped = errors.New("the link to the master was stopped")

// errFullSyncFailed is a full sync that failed on this side (its disk, a
// payload it could not load): each new try makes the master write a whole
// snapshot again, so tries are spaced, each pause twice the one before,
// up to a minute (as errUnsupported's are).
var errFullSyncFailed = errors.New("full sync failed")

// follow keeps the link up until it is stopped.
func (s *Server) follow(l *masterLink) {
	addr := net.JoinHostPort(l.host, l.port)
	s.log.Info("connecting to MASTER", "master", addr)
	pause := s.cfg.replRetryMin
	for {
		err := s.syncWith(l)
		wasUp := l.state.Swap(linkConnect) == linkConnected
		l.syncing.Store(false)
		if wasUp {
			l.downSince.Store(time.Now().Unix())
		}
		if l.stopped() {
			return
		}
		wait := time.Second
		switch {
		case errors.Is(err, errUnsupported), errors.Is(err, errFullSyncFailed):
			// Data or a command this server cannot hold, or a full sync
			// that failed here: trying again each second would make the
			// master write a snapshot each second for nothing.
			wait, pause = pause, min(2*pause, time.Minute)
			l.setErr(err.Error())
			s.log.Warn("replication failed; retrying later, each pause twice the one before", "master", addr, "retry_in", wait, "err", err)
		case err != nil:
			l.setErr(err.Error())
			s.log.Warn("replication link to the master failed; retrying in a second", "master", addr, "err", err)
		}
		if errors.Is(err, errUnsupported) {
			// The stream went where this server cannot follow: what it
			// holds may differ from the master's now, so the next sync
			// is a full one (PSYNC would resend the same command).
			l.mu.Lock()
			l.cachedID = ""
			l.mu.Unlock()
		} else if wasUp {
			pause = s.cfg.replRetryMin
		}
		select {
		case <-l.stopc:
			return
		case <-s.stop:
			return
		case <-l.retry:
		case <-time.After(wait):
		}
	}
}

// linkCurrent reports whether l is still the server's link (keyspace lock
// held: role changes take it).
func (s *Server) linkCurrent(l *masterLink) bool {
	s.repl.mu.Lock()
	defer s.repl.mu.Unlock()
	return s.repl.link == l
}

// deadlineReader renews the connection's read deadline before each read
// and counts what it reads as I/O from the master.
type deadlineReader struct {
	nc      net.Conn
	r       io.Reader
	timeout time.Duration
	l       *masterLink
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	d.nc.SetReadDeadline(time.Now().Add(d.timeout))
	n, err := d.r.Read(p)
	if n > 0 {
		d.l.lastIO.Store(time.Now().Unix())
	}
	return n, err
}

// syncWith runs one connection to the master: handshake, sync, stream.
func (s *Server) syncWith(l *masterLink) error {
	timeout := s.replTimeout()
	nc, err := net.DialTimeout("tcp", net.JoinHostPort(l.host, l.port), min(timeout, 10*time.Second))
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer nc.Close()
	if !l.setConn(nc) {
		return errLinkStopped
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	if tc := s.tlsConf.Load(); tc != nil && tc.params["tls-replication"] == "yes" {
		// tls-replication: the link is TLS, the master's certificate
		// checked against the CA (as a client of its tls-port). Stopping
		// the link closes nc, which ends a handshake in progress.
		tconn := tls.Client(nc, tc.client)
		tconn.SetDeadline(time.Now().Add(min(timeout, 10*time.Second)))
		if err := tconn.Handshake(); err != nil {
			return fmt.Errorf("TLS handshake with the master: %w", err)
		}
		tconn.SetDeadline(time.Time{})
		nc = tconn
		defer nc.Close()
		if !l.setConn(nc) {
			return errLinkStopped
		}
	}
	l.state.Store(linkConnecting)
	l.lastIO.Store(time.Now().Unix())
	dr := &deadlineReader{nc: nc, r: nc, timeout: timeout, l: l}
	br := bufio.NewReaderSize(dr, 64<<10)
	send := func(args ...string) (string, error) {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		nc.SetWriteDeadline(time.Now().Add(timeout))
		if _, err := nc.Write(appendRESP(nil, b)); err != nil {
			return "", err
		}
		line, err := readLine(br)
		if err != nil {
			return "", fmt.Errorf("reading the master's reply to %s: %w", args[0], err)
		}
		return line, nil
	}
	line, err := send("PING")
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+") && !strings.HasPrefix(line, "-NOAUTH") && !strings.HasPrefix(line, "-NOPERM") &&
		!strings.HasPrefix(line, "-ERR operation not permitted") {
		return fmt.Errorf("error reply to PING from master: %q", line)
	}
	if pass := *s.repl.masterAuth.Load(); pass != "" {
		args := []string{"AUTH", pass}
		if user := *s.repl.masterUser.Load(); user != "" {
			args = []string{"AUTH", user, pass}
		}
		if line, err = send(args...); err != nil {
			return err
		}
		if !strings.HasPrefix(line, "+") {
			return fmt.Errorf("unable to AUTH to MASTER: %s", line)
		}
	}
	// The port the master and Sentinel reach this replica on: as Redis,
	// the TLS port when the link is TLS and there is one.
	port := s.repl.announcePort.Load()
	if port == 0 {
		ps := s.plainPort()
		if tp := s.tlsPort(); tp != "0" && (ps == "0" || s.tlsSetting("tls-replication") == "yes") {
			ps = tp
		}
		port, _ = strconv.ParseInt(ps, 10, 64)
	}
	if line, err = send("REPLCONF", "listening-port", strconv.FormatInt(port, 10)); err != nil {
		return err
	}
	if strings.HasPrefix(line, "-NOAUTH") {
		return fmt.Errorf("master requires authentication (masterauth): %s", line)
	}
	if ip := *s.repl.announceIP.Load(); ip != "" {
		if _, err = send("REPLCONF", "ip-address", ip); err != nil {
			return err
		}
	}
	if _, err = send("REPLCONF", "capa", "eof", "capa", "psync2"); err != nil {
		return err
	}
	// Not Redis's: a bloomkit master refuses its own run ID (REPLICAOF
	// to itself); Redis answers an error that is ignored.
	if line, err = send("REPLCONF", "bloomkit-run-id", s.runID); err != nil {
		return err
	}
	if strings.Contains(line, "replica of itself") {
		return errors.New("REPLICAOF points at this server itself")
	}
	// A master that does not know the option is a Redis server
	// (repl_redis.go).
	redis := strings.HasPrefix(line, "-ERR Unrecognized REPLCONF option")
	l.redis.Store(redis)
	if redis {
		call := func(args ...string) (respValue, error) {
			b := make([][]byte, len(args))
			for i, a := range args {
				b[i] = []byte(a)
			}
			nc.SetWriteDeadline(time.Now().Add(timeout))
			if _, err := nc.Write(appendRESP(nil, b)); err != nil {
				return nil, err
			}
			v, err := readMasterReply(br, 0)
			if err != nil {
				return nil, fmt.Errorf("reading the master's reply to %s: %w", args[0], err)
			}
			return v, nil
		}
		fc, from, err := s.redisMasterFilters(call)
		if err != nil {
			return err
		}
		l.filter.Store(fc)
		s.log.Info("the master is a Redis server; filters its stream creates take its RedisBloom parameters",
			"master", net.JoinHostPort(l.host, l.port), "from", from,
			"bf-error-rate", fc.str[fpBFErrorRate], "bf-initial-size", fc.str[fpBFInitialSize], "bf-expansion-factor", fc.str[fpBFExpansion],
			"cf-initial-size", fc.str[fpCFInitialSize], "cf-bucket-size", fc.str[fpCFBucketSize])
	} else {
		// A bloom serve master that follows a Redis master passes the
		// stream on as it came: the filters it creates take that Redis
		// master's parameters here too (an older master does not know
		// the option: RedisBloom's defaults, as before).
		if line, err = send("REPLCONF", "bloomkit-filter-params", "?"); err != nil {
			return err
		}
		fc, err := decodeMasterFilters(line)
		if err != nil {
			return err
		}
		l.filter.Store(fc)
	}
	// The history this server holds: its replication ID and offset,
	// once it has one (a full sync, or this server's own as a master).
	l.mu.Lock()
	id := l.cachedID
	l.mu.Unlock()
	var off int64
	if id != "" {
		s.db.Lock()
		s.repl.mu.Lock()
		id, off = s.repl.replid, s.repl.offset()
		s.repl.mu.Unlock()
		s.db.Unlock()
	}
	psync := []string{"PSYNC", "?", "-1"}
	if id != "" {
		psync = []string{"PSYNC", id, strconv.FormatInt(off+1, 10)}
	}
	if l.failover.Load() {
		psync = append(psync, "FAILOVER")
	}
	if line, err = send(psync...); err != nil {
		return err
	}
	// A master preparing the payload may send newlines first.
	for line == "" {
		if line, err = readLine(br); err != nil {
			return err
		}
	}
	switch {
	case strings.HasPrefix(line, "+FULLRESYNC"):
		f := strings.Fields(line)
		if len(f) != 3 {
			return fmt.Errorf("bad +FULLRESYNC reply from master: %q", line)
		}
		moff, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || len(f[1]) != replidLen {
			return fmt.Errorf("bad +FULLRESYNC reply from master: %q", line)
		}
		load := s.loadFullSync
		if redis {
			load = s.loadRedisSync
		}
		if err := load(l, br, f[1], moff); err != nil {
			if l.stopped() {
				return err
			}
			return fmt.Errorf("%w: %w", errFullSyncFailed, err)
		}
		go s.returnLoadGarbage()
	case strings.HasPrefix(line, "+CONTINUE"):
		f := strings.Fields(line)
		if err := s.continueFrom(l, f); err != nil {
			return err
		}
		s.log.Info("MASTER <-> REPLICA sync: master accepted a partial resynchronization", "master", net.JoinHostPort(l.host, l.port))
	default:
		return fmt.Errorf("unexpected reply to PSYNC from master: %q", line)
	}
	l.failover.Store(false)
	l.setErr("")
	l.state.Store(linkConnected)
	return s.applyStream(l, nc, br)
}

// returnLoadGarbage collects the garbage a full sync or the start-up load
// left (the replaced keyspace, the reader's buffers, the snapshot
// writer's staging) and returns the free memory to the system at once,
// as MEMORY PURGE does. Without it the resident memory after a load stays
// about twice the data until the collector's goal and the runtime's
// background return of memory catch up, where Redis's is its data's once
// it has loaded. It takes no lock and runs off the goroutines that serve
// clients: it costs one collection's CPU, once per load.
//
// A full sync that replaced a keyspace releases the old one off the lock
// (FLUSHALL's lazy free), walking it: collected while that walk runs, the
// old keyspace would still be reachable and its memory kept (measured: a
// replica of 1,000,000 keys kept twice their memory after its second full
// sync). It waits for that walk first, for at most lazyFreeWait.
func (s *Server) returnLoadGarbage() {
	for deadline := time.Now().Add(lazyFreeWait); s.db.LazyFreePending() > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	debug.FreeOSMemory()
}

// lazyFreeWait bounds how long returnLoadGarbage waits for the values
// being freed off the lock.
const lazyFreeWait = 10 * time.Second

// readLine reads one CRLF- (or LF-) terminated line, at most 64 KiB.
func readLine(br *bufio.Reader) (string, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return "", errors.New("line from master too long")
		}
		return "", err
	}
	return strings.TrimRight(string(line), "\r\n"), nil
}

// continueFrom takes the master's +CONTINUE [replid]: the stream goes on
// from this server's offset; a new replication ID means the master was
// promoted, and the one this server had becomes replid2.
func (s *Server) continueFrom(l *masterLink, f []string) error {
	s.db.Lock()
	defer s.db.Unlock()
	if !s.linkCurrent(l) {
		return errLinkStopped
	}
	rs := &s.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(f) == 2 && f[1] != rs.replid {
		rs.replid2 = rs.replid
		rs.second = rs.offset() + 1
		rs.replid = f[1]
	}
	// Replicas of this server continue with the new ID too.
	for _, rp := range rs.detachReplicas() {
		rp.close()
	}
	l.mu.Lock()
	l.cachedID = rs.replid
	l.mu.Unlock()
	return nil
}

// loadFullSync reads the master's payload ($<len>, the snapshot) into a
// fresh keyspace and swaps it in when it is complete and verified. With a
// data directory, the payload becomes the next generation's snapshot
// first, so the directory holds either the old chain or the new one at
// every instant.
func (s *Server) loadFullSync(l *masterLink, br *bufio.Reader, replid string, moff int64) error {
	l.state.Store(linkSync)
	line := ""
	var err error
	for line == "" {
		if line, err = readLine(br); err != nil {
			return fmt.Errorf("reading the sync payload's length: %w", err)
		}
	}
	if strings.HasPrefix(line, "$EOF:") {
		return errors.New("the master sent a diskless Redis RDB stream, though it said it is bloom serve")
	}
	if !strings.HasPrefix(line, "$") {
		return fmt.Errorf("bad sync payload header from master: %q", line)
	}
	size, err := strconv.ParseInt(line[1:], 10, 64)
	if err != nil || size < 28 {
		return fmt.Errorf("bad sync payload length from master: %q", line)
	}
	if head, err := br.Peek(5); err == nil && string(head) == "REDIS" {
		return errors.New("the master sent a Redis RDB file, though it said it is bloom serve")
	}
	if head, err := br.Peek(8); err != nil || string(head) != "BKSNAP02" {
		return fmt.Errorf("the sync payload is not a bloomkit snapshot (it starts %q)", head)
	}
	s.log.Info("MASTER <-> REPLICA sync: receiving the snapshot", "bytes", size, "master_replid", replid, "offset", moff)
	l.syncing.Store(true)
	l.syncTotal.Store(size)
	l.syncRead.Store(0)
	defer l.syncing.Store(false)
	start := time.Now()
	src := &countReader{r: io.LimitReader(br, size), n: &l.syncRead}
	fresh := keyspace.New(0, s.cfg.Now)
	if s.aof == nil {
		// Loaded while the old data serves (async_loading, loading.go).
		s.beginLoading(loadingAsync, size)
		defer s.loading.phase.Store(notLoading)
		if _, _, err := fresh.ReadSnapshot(&payloadFile{src, size}, "(sync payload from the master)"); err != nil {
			if got := l.syncRead.Load(); got < size {
				return fmt.Errorf("full sync: sync payload truncated (%d of %d bytes): %w", got, size, err)
			}
			return fmt.Errorf("full sync: %w", err)
		}
		fresh.PrepareFor(s.db)
		return s.swapIn(l, fresh, replid, moff, nil, 0)
	}
	// The payload is received into a file first, with no lock held: a
	// master that stalls in the middle of it must not hold SAVE, BGSAVE
	// and shutdown (saveMu) up until the link times out. The snapshot is
	// then made from that file under saveMu (file I/O only).
	tmp := "replsync" + aof.TmpMarker + strconv.FormatInt(time.Now().UnixNano(), 36)
	tf, err := s.dir.Create(tmp)
	if err != nil {
		return fmt.Errorf("full sync: temporary file: %w", err)
	}
	defer s.dir.Remove(tmp)
	if h := testHookSyncPayload.Load(); h != nil {
		(*h)()
	}
	got, err := io.Copy(tf, src)
	if cerr := tf.Close(); err == nil {
		err = cerr
	}
	if err == nil && got < size {
		err = fmt.Errorf("sync payload truncated (%d of %d bytes): %w", got, size, io.ErrUnexpectedEOF)
	}
	if err != nil {
		return fmt.Errorf("full sync: %w", err)
	}
	payload, err := s.dir.Open(tmp)
	if err != nil {
		return fmt.Errorf("full sync: %w", err)
	}
	defer payload.Close()
	s.persist.saveMu.Lock()
	defer s.persist.saveMu.Unlock()
	gen, lf, undo, err := s.syncGeneration()
	if err != nil {
		return err
	}
	if _, err := aof.WriteSnapshot(s.dir, gen, func(w io.Writer) error { return copyPayload(w, payload, size, gen) }); err != nil {
		undo()
		return fmt.Errorf("full sync: %w", err)
	}
	f, err := s.dir.Open(SnapshotName(gen))
	if err != nil {
		undo()
		return fmt.Errorf("full sync: %w", err)
	}
	// Loaded while the old data serves (async_loading, loading.go).
	s.beginLoading(loadingAsync, size)
	defer s.loading.phase.Store(notLoading)
	if h := testHookAsyncLoad.Load(); h != nil {
		(*h)()
	}
	_, _, err = fresh.ReadSnapshot(f, s.dir.Path(SnapshotName(gen)))
	f.Close()
	if err != nil {
		undo()
		return fmt.Errorf("full sync: %w", err)
	}
	if err := s.adoptSync(l, fresh, replid, moff, lf, gen, undo); err != nil {
		return err
	}
	s.log.Info("MASTER <-> REPLICA sync: snapshot loaded", "bytes", size, "keys", s.db.Len(), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// syncGeneration opens the next generation for a full sync's data
// (saveMu held): its log, and undo, which removes what the generation has
// on disk when the sync fails before the keyspace is swapped in.
func (s *Server) syncGeneration() (gen uint64, lf *aof.LogFile, undo func(), err error) {
	p := &s.persist
	gen = p.nextGen
	p.nextGen++
	lf, err = aof.CreateLog(s.dir, gen)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("full sync: new log: %w", err)
	}
	undo = func() {
		lf.Close()
		s.dir.Remove(SnapshotName(gen))
		s.dir.Remove(LogName(gen))
		s.dir.Sync()
	}
	return gen, lf, undo, nil
}

// adoptSync makes fresh, saved as generation gen's snapshot, the keyspace
// and the master's history this server's (saveMu held; swapIn), then
// removes the generations before it. On failure it undoes the generation.
func (s *Server) adoptSync(l *masterLink, fresh *keyspace.DB, replid string, moff int64, lf *aof.LogFile, gen uint64, undo func()) error {
	// The snapshot just written marked the entries as its own; as
	// entries of the server's keyspace they are needed by its next one.
	fresh.PrepareFor(s.db)
	if err := s.swapIn(l, fresh, replid, moff, lf, gen); err != nil {
		undo()
		return err
	}
	s.persist.gen.Store(gen)
	s.persist.lastSave.Store(time.Now().Unix())
	if names, err := s.dir.List(); err == nil {
		aof.RemoveOlder(s.dir, s.log, names, gen)
	}
	return nil
}

// swapIn makes fresh the keyspace, and the master's history this
// server's (keyspace lock taken): the log moves to generation gen (lf)
// at the same instant.
func (s *Server) swapIn(l *masterLink, fresh *keyspace.DB, replid string, moff int64, lf *aof.LogFile, gen uint64) error {
	s.db.WaitMerges()
	s.db.Lock()
	defer s.db.Unlock()
	if !s.linkCurrent(l) {
		return errLinkStopped
	}
	s.db.FinishMerges(nil)
	s.touchAllWatched()
	s.db.TakeOver(fresh)
	// Under the keyspace lock, as the data changes: a client that reads
	// the master's data then never sees INFO's async_loading:1.
	s.loading.phase.Store(notLoading)
	if lf != nil {
		s.aof.Rotate(lf)
	}
	rs := &s.repl
	rs.mu.Lock()
	rs.replid = replid
	rs.replid2 = strings.Repeat("0", replidLen)
	rs.second = -1
	b := rs.ensureBacklog()
	b.Reset(moff)
	reps := rs.detachReplicas()
	rs.mu.Unlock()
	for _, rp := range reps {
		rp.close()
	}
	l.mu.Lock()
	l.cachedID = replid
	l.mu.Unlock()
	return nil
}

// testHookSyncPayload, if set, runs before a replica receives a full
// sync's payload into its data directory (tests stand it in for a master
// that stalls).
var testHookSyncPayload atomic.Pointer[func()]

// fackPoint is a replication offset and the log position that holds it.
type fackPoint struct{ off, pos int64 }

// testHookAsyncLoad, if set, runs when a replica starts loading a full
// sync's snapshot (tests hold the load there).
var testHookAsyncLoad atomic.Pointer[func()]

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// payloadFile is the sync payload as the snapshot reader's file.
type payloadFile struct {
	io.Reader
	size int64
}

func (p *payloadFile) Close() error { return nil }
func (p *payloadFile) Size() int64  { return p.size }

var castagnoliTable = crc32.MakeTable(crc32.Castagnoli)

// copyPayload copies a snapshot of size bytes from r to w as generation
// gen's: the header's generation is rewritten and the checksum with it;
// the master's checksum is verified on the way.
func copyPayload(w io.Writer, r io.Reader, size int64, gen uint64) error {
	head := make([]byte, 24)
	if _, err := io.ReadFull(r, head); err != nil {
		return fmt.Errorf("sync payload truncated: %w", err)
	}
	if string(head[:8]) != "BKSNAP02" {
		return fmt.Errorf("the sync payload is not a bloomkit snapshot (it starts %q)", head[:8])
	}
	orig := crc32.New(castagnoliTable)
	orig.Write(head)
	binary.LittleEndian.PutUint64(head[8:], gen)
	ours := crc32.New(castagnoliTable)
	ours.Write(head)
	if _, err := w.Write(head); err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for left := size - 28; left > 0; {
		n, err := r.Read(buf[:min(int64(len(buf)), left)])
		if n > 0 {
			orig.Write(buf[:n])
			ours.Write(buf[:n])
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
			left -= int64(n)
		}
		if err != nil && left > 0 {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("sync payload truncated: %w", err)
		}
	}
	var sum [4]byte
	if _, err := io.ReadFull(r, sum[:]); err != nil {
		return fmt.Errorf("sync payload truncated: %w", err)
	}
	if binary.LittleEndian.Uint32(sum[:]) != orig.Sum32() {
		return errors.New("sync payload checksum mismatch: damaged in transit or not a bloomkit snapshot")
	}
	_, err := w.Write(binary.LittleEndian.AppendUint32(nil, ours.Sum32()))
	return err
}

// applyStream applies the master's stream until the link fails or stops.
func (s *Server) applyStream(l *masterLink, nc net.Conn, br *bufio.Reader) error {
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				s.sendAck(l, nc)
			}
		}
	}()
	if l.redis.Load() {
		// A Redis master puts a replica that loaded a diskless payload
		// online at its first acknowledgement.
		s.sendAck(l, nc)
	}
	sess := &Session{authed: true, fromMaster: true, Addr: nc.RemoteAddr().String()}
	p := resp.NewReader(br, resp.Limits{MaxArgs: s.cfg.MaxArgs, MaxBulk: s.cfg.MaxBulk, MaxInline: 64 << 10, MaxQuery: s.cfg.MaxQuery})
	var txn [][][]byte
	for {
		args, err := p.Next()
		if err != nil {
			return fmt.Errorf("bad stream from master: %w", err)
		}
		if args == nil {
			if err := p.Fill(); err != nil {
				if l.stopped() {
					return errLinkStopped
				}
				return fmt.Errorf("reading the stream: %w", err)
			}
			continue
		}
		if len(args) == 0 {
			continue
		}
		switch name := strings.ToLower(string(args[0])); {
		case name == "multi":
			txn = [][][]byte{}
		case name == "exec":
			if err := s.applyFromMaster(l, sess, txn, true); err != nil {
				return err
			}
			txn = nil
		case txn != nil:
			txn = append(txn, copyArgs(args))
		case name == "replconf":
			if len(args) > 1 && strings.EqualFold(string(args[1]), "getack") {
				// As Redis: the acknowledged offset is the one before
				// the GETACK itself (its bytes count from the next ACK).
				s.sendAck(l, nc)
			}
			if err := s.applyFromMaster(l, sess, [][][]byte{args}, false); err != nil {
				return err
			}
		default:
			if err := s.applyFromMaster(l, sess, [][][]byte{args}, false); err != nil {
				return err
			}
		}
	}
}

func copyArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = append([]byte(nil), a...)
	}
	return out
}

// sendAck tells the master how far this server has applied the stream,
// once its log holds it (written to the system: a kill -9 of this
// process loses none of it).
func (s *Server) sendAck(l *masterLink, nc net.Conn) {
	// The offset and the log's position that holds it, at one point in
	// time (the keyspace lock orders the log and the stream).
	s.db.Lock()
	off, pos := s.repl.offset(), int64(0)
	if s.aof != nil {
		pos = s.aof.Appended()
	}
	s.db.Unlock()
	if s.aof != nil && s.aof.Commit(pos) != nil {
		// Its log failed: an acknowledgement would tell the master (and
		// WAIT) this server holds what its disk does not. It goes on
		// applying the stream and acknowledges again once a snapshot
		// has replaced the failed log.
		return
	}
	// FACK (Redis 7.2, WAITAOF): the offset this server's log holds
	// fsynced; a pair not fsynced yet becomes it once the log is.
	// Without a log (appendonly no) it stays 0, as Redis's.
	if s.aof != nil && !s.cfg.NoAppendLog {
		if synced := s.aof.Synced(); synced >= pos {
			l.fack.Store(off)
		} else {
			if p := l.fackNext.Load(); p != nil && synced >= p.pos {
				l.fack.Store(p.off)
			}
			l.fackNext.Store(&fackPoint{off, pos})
		}
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	nc.SetWriteDeadline(time.Now().Add(s.replTimeout()))
	nc.Write(appendRESP(nil, [][]byte{[]byte("REPLCONF"), []byte("ACK"), []byte(strconv.FormatInt(off, 10)), []byte("FACK"), []byte(strconv.FormatInt(l.fack.Load(), 10))}))
}

// applyFromMaster applies commands of the stream (a transaction's
// together) through the apply path, logs what they did in this server's
// log, and feeds the stream's own commands, byte for byte, to this
// server's backlog, so that its replicas' offsets agree with the master's.
// A command that fails here (wrong arity, a wrong type) is logged and
// skipped: the master applied it, and the replica goes on, as Redis's does.
// From a Redis master (srcRedisMaster), whose commands are not all this
// server's, a command it cannot apply, or one that fails, stops the link
// instead (repl_redis.go), before any command of its transaction runs
// when that can be known beforehand.
func (s *Server) applyFromMaster(l *masterLink, sess *Session, cmds [][][]byte, txn bool) error {
	src := srcMaster
	var skip []bool // commands of a type this server does not hold, passed over
	if l.redis.Load() {
		src = srcRedisMaster
		for i, args := range cmds {
			err := redisStreamCheck(args)
			if err == nil {
				continue
			}
			if !s.repl.ignoreUnsupported.Load() || unsupportedTypeCommand(args[0]) == "" {
				return err
			}
			if skip == nil {
				skip = make([]bool, len(cmds))
			}
			skip[i] = true
		}
	}
	s.db.Lock()
	defer s.db.Unlock()
	if !s.linkCurrent(l) {
		return errLinkStopped
	}
	for i, args := range cmds {
		if i < len(skip) && skip[i] {
			if err := s.passOverUnsupported(args); err != nil {
				return err
			}
		}
	}
	var failed error
	var reply Reply
	// As loading: no memory limit refuses what the master accepted, and
	// keys expire only when the master says so (its DEL).
	s.db.BeginLoad()
	if txn {
		s.beginTxn()
	}
	for i, args := range cmds {
		if i < len(skip) && skip[i] {
			l.skippedCmds.Add(1)
			continue
		}
		cmd, ok := lookupCommand(args[0])
		if ok && cmd.name == "publish" && len(args) == 3 {
			s.publish(args[1], args[2]) // to this server's subscribers
			continue
		}
		if !ok && l.redis.Load() && redisPassedOver(args[0]) {
			continue
		}
		if !ok {
			// Applying the rest while this one is lost would leave the
			// replica different from its master without a word.
			s.log.Warn("the master sent a command this server does not know; skipped, and the data may differ from the master's", "cmd", trimArg(args[0]))
			continue
		}
		if !cmd.write && !cmd.layout {
			// PING, SELECT, REPLCONF: part of the stream, no effect.
			continue
		}
		reply.Reset(false)
		s.apply(src, sess, cmd, args, &reply)
		if reply.w.Failed() {
			msg := strings.TrimSpace(strings.TrimPrefix(string(reply.Bytes()), "-"))
			// RedisBloom replicates some commands that fail on the
			// master too (a BF.ADD into a full non-scaling filter): a
			// module command that fails here as there changed nothing
			// on either side.
			if src == srcRedisMaster && !slices.Contains(cmd.flags, "module") {
				failed = fmt.Errorf("%w: %s from the master failed here (%s); the link stops so as not to go on different from the master", errUnsupported, strings.ToUpper(cmd.name), msg)
				break
			}
			s.log.Warn("a command from the master failed on this replica", "cmd", trimArg(args[0]), "err", msg)
		}
	}
	if txn {
		s.endTxn()
	}
	s.db.EndLoad()
	if failed != nil {
		return failed
	}
	buf := s.repl.enc[:0]
	if txn {
		buf = appendRESP(buf, argMulti)
	}
	for _, c := range cmds {
		buf = appendRESP(buf, c)
	}
	if txn {
		buf = appendRESP(buf, argExec)
	}
	s.repl.ensureBacklog().Append(buf)
	s.repl.enc = buf[:0]
	return nil
}
