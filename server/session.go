package server

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/acl"
)

// Session: one client connection's state, shared by the request loop
// (client.go), the handlers and the apply path.

// Session is one client connection's state.
type Session struct {
	ID        int64
	Name      string
	LibName   string
	LibVer    string
	Addr      string
	LocalAddr string

	hmu     sync.Mutex              // conn and kill: set after the session is listed
	conn    net.Conn                // the goroutine path's connection
	kill    func()                  // the event loop's way to notice closing
	closing atomic.Bool             // CLIENT KILL: close after the current command
	lastCmd atomic.Int64            // unix ms of the last command (CLIENT LIST idle)
	curCmd  atomic.Pointer[command] // the last command (CLIENT LIST cmd)
	// curSub is the last command's subcommand when it has them (CLIENT
	// LIST cmd=client|list, as Redis).
	curSub atomic.Pointer[acl.Command]
	// fd is the connection's descriptor (CLIENT LIST fd; -1: unknown).
	fd atomic.Int64
	// monitoring is set by MONITOR (monitor.go).
	monitoring atomic.Bool

	resp3  bool
	authed bool
	// user is the ACL user the connection runs as (nil: anything may run,
	// the log's replay); other sessions read it (CLIENT LIST, DELUSER).
	user    atomic.Pointer[acl.User]
	quit    bool
	created time.Time
	// noEvict is CLIENT NO-EVICT (reported; there is no client eviction).
	noEvict bool
	// replyOff is CLIENT REPLY OFF; skipReplies counts the replies still to
	// be dropped for CLIENT REPLY SKIP (its own and the next command's).
	replyOff    bool
	skipReplies int

	// set by handlers for the append-only log: skip it, log logArgs in
	// place of the command, log logBefore ahead of it in the same record
	skipLog   bool
	logArgs   [][]byte
	logBefore [][]byte
	// pendingSync is the log position this connection's replies wait for:
	// everything its commands could have observed. pendingWrite is set when
	// they include a write of its own.
	pendingSync  int64
	pendingWrite bool
	// batched counts the replies in out.
	batched int
	// clock is the monoNow reading the next command starts from (0: read
	// the clock): the end of the previous command of the same pipeline,
	// or the moment its bytes were read.
	clock int64
	// lastIdle is the monoNow of the last lastCmd update (second
	// resolution is enough). lastName and lastLookup are the previous
	// command's name as sent and what it resolved to: a pipeline usually
	// repeats one command.
	lastIdle   int64
	lastName   []byte
	lastLookup *command
	reply      Reply
	// multi holds the commands queued after MULTI (its first element is a
	// marker, so an empty transaction is non-nil); multiErr aborts EXEC.
	multi    []queued
	multiErr bool
	// watch is what WATCH watches (watch.go; keyspace lock held).
	watch sessionWatch
	// txnLen mirrors len(multi) (0: not in MULTI) for CLIENT LIST,
	// which other sessions run.
	txnLen atomic.Int64
	// multiBytes is the memory the queue holds (counted in the server's
	// queuedBytes); multiLog the size of the log record its writes make.
	multiBytes, multiLog int64
	// mem is what CLIENT LIST reports of the connection's buffers, as its
	// request loop last published them (client.publishMem).
	mem sessionMem
	// argvMem is the size of the CLIENT command running (its own
	// goroutine's: CLIENT LIST's argv-mem for the caller).
	argvMem int64
	// inExec is set while EXEC runs this session's queue with the
	// keyspace lock held: an unlocked command queued there must not take
	// the lock again (see lockDB).
	inExec bool
	// canWait is set for network clients: a long BF.MERGE may then hold
	// their replies (wait, closed when it is done) instead of the lock.
	canWait bool
	wait    <-chan struct{}
	// gone is closed when the network client is closed (endSession): a
	// WAIT it was blocked in stops waiting.
	gone chan struct{}

	// sub is the pub/sub state (nil until the first subscription; see
	// pubsub.go); notify wakes the connection's owner to send what
	// PUBLISH queued for it (nil: no network connection).
	sub    *subscriber
	notify atomic.Pointer[func()]
	// nsub and npsub count its channels and patterns for other sessions
	// (CLIENT LIST sub= and psub=, CLIENT KILL TYPE pubsub).
	nsub, npsub atomic.Int64
	// replRole is what the connection is to replication: a replica's
	// link on its master (roleReplica: CLIENT LIST flag S, type replica)
	// or the master's link on a replica (roleMaster: flag M, type master).
	replRole atomic.Int32
	// deferred is a reply computed while the connection held its
	// replies (wait): WAIT's answer, appended when wait is closed.
	deferred []byte

	// Replication: a replica's handshake (REPLCONF), the SYNC or PSYNC
	// that hands the connection over (handoff), the stream offset after
	// this client's last write (WAIT), and whether this is the session
	// applying a master's stream.
	replPort   int
	replIP     string
	rdbOnly    bool
	handoff    *replHandoff
	woff       int64
	fromMaster bool
	// logPos is the append-only log's position after this client's last
	// write (WAITAOF's local fsync).
	logPos int64
	// replListening is set by REPLCONF listening-port (a replica, not a
	// tool such as redis-cli --rdb); replBloomkit by REPLCONF
	// bloomkit-run-id (a replica that is bloom serve and loads its
	// payload).
	replListening, replBloomkit bool
}

// Replication roles of a connection (Session.replRole).
const (
	roleNone int32 = iota
	roleReplica
	roleMaster
)

// clientType is the connection's class for CLIENT KILL TYPE and CLIENT
// LIST TYPE, as Redis classifies it: master, slave (a replica), pubsub
// (subscribed to something), or normal.
func (c *Session) clientType() string {
	switch c.replRole.Load() {
	case roleMaster:
		return "master"
	case roleReplica:
		return "slave"
	}
	if c.nsub.Load()+c.npsub.Load() > 0 {
		return "pubsub"
	}
	return "normal"
}
