package server

import (
	"errors"
	"sync/atomic"

	"github.com/bloomkit/bloomkit/server/internal/resp"
)

// The request loop.
//
// A client's requests are read, run and answered by the code in this file,
// whichever connection model serves it: an event loop (plain TCP on Linux,
// loop_linux.go) or a goroutine of its own (TLS, other systems, conn.go).
// Those two only move bytes — fill the client's request buffer, write its
// output, wait until either can be done — and call a client's methods for
// everything else, so a rule about requests, replies or closing is written
// once:
//
//   - run parses the complete requests in the buffer and runs them in order
//     (Server.Do), encoding their replies one after another into one output
//     buffer. It stops and says why (a loopStep): the buffer holds no complete
//     request; the output passed flushAt (it is written before more runs,
//     so a client that pipelines large replies and does not read holds at
//     most flushAt plus one reply); a reply is held; SYNC or PSYNC hands
//     the connection to replication; or the connection is to close once
//     its output is written (QUIT, a protocol error, CLIENT KILL).
//   - output makes the log as durable as the replies need (endBatch; the
//     event loops do it once per round for all their clients) and returns
//     what is to be written; wrote records what was.
//   - A held reply: WAIT, and a BF.MERGE or CMS.MERGE finishing in the
//     background, hold the connection's output and its further requests
//     until their answer is known (Session.wait); released appends it.
//     Meanwhile the client is still read, as Redis reads a blocked client,
//     so that its going away is seen: it is then closed at once, and
//     closing (Server.endSession) cancels what it waited for.
//   - Closing frees the client: its session, its place under maxclients,
//     the goroutines and WAIT waiters that served it.
type client struct {
	s    *Server
	sess *Session
	rd   *resp.Reader
	// The output is sess.reply.w.Pending(): bytes before wpos are
	// written, bytes before checked passed endBatch.
	wpos, checked int
	closeAfter    bool // close once the output is written
}

// loopStep is why run stopped.
type loopStep uint8

const (
	// stepDrained: the buffer holds no complete request; write the
	// output, then read more.
	stepDrained loopStep = iota
	// stepFull: the output passed flushAt; write it, then run again.
	stepFull
	// stepHeld: a reply is held (Session.wait); nothing is written until
	// released, and reading goes on only to see the client go away.
	stepHeld
	// stepHandoff: SYNC or PSYNC; write the output, then serve the
	// connection as a replica (serveReplica) with the unread bytes.
	stepHandoff
	// stepClose: write the output, then close.
	stepClose
)

// flushAt is the output a client may accumulate before it is written, while
// requests remain in its buffer.
const flushAt = 64 << 10

// run runs the complete requests in the buffer, until a loopStep says the
// connection must do something else first.
func (c *client) run() loopStep {
	// Published before (what was read: CLIENT LIST's qbuf counts the
	// requests still to run, its own included, as Redis's) and after.
	c.publishMem()
	defer c.publishMem()
	s, sess := c.s, c.sess
	if sess.wait != nil {
		return stepHeld
	}
	if c.closeAfter {
		return stepClose
	}
	sess.clock = monoNow() // the first command's start; each later one starts at its predecessor's end
	for {
		if len(sess.reply.w.Pending())-c.wpos >= flushAt {
			return stepFull
		}
		args, err := c.rd.Next()
		if err != nil {
			var pe *resp.ProtocolError
			if errors.As(err, &pe) {
				s.protoErrors.Add(1)
				s.log.Debug("protocol error; closing the connection", "addr", sess.Addr, "err", err)
				c.fail("ERR " + pe.Error())
			}
			c.closeAfter = true
			return stepClose
		}
		if args == nil {
			return stepDrained
		}
		if len(args) == 0 {
			continue
		}
		wasAuthed := sess.authed
		if sess.sub != nil {
			// Messages published before this command go out before its reply.
			sess.reply.w.Next()
			sess.takePushes()
		}
		sess.reply.w.Next()
		s.Do(sess, args, &sess.reply)
		sess.batched++
		if sess.authed != wasAuthed {
			c.rd.SetLimits(s.readLimits(sess))
		}
		switch {
		case sess.handoff != nil:
			return stepHandoff
		case sess.wait != nil:
			return stepHeld
		case sess.quit || sess.closing.Load():
			c.closeAfter = true // QUIT: its reply goes out, nothing after it runs
			return stepClose
		}
	}
}

// sessionMem is a connection's buffers as CLIENT LIST reports them:
// published by its request loop after each run of requests and each
// write, read by any session (atomics).
type sessionMem struct {
	qbuf, qbufFree, rbs atomic.Int64 // the request buffer: unread, room after it, its size
	omem, outCap        atomic.Int64 // replies not yet written; the reply buffer's size
	multi               atomic.Int64 // the MULTI queue's bytes
}

// publishMem publishes the connection's buffer sizes (sessionMem). A
// value that did not change is not stored again (a load is a plain read;
// a store, a locked instruction).
func (c *client) publishMem() {
	m := &c.sess.mem
	unread, free, size := c.rd.Sizes()
	publish(&m.qbuf, int64(unread))
	publish(&m.qbufFree, int64(free))
	publish(&m.rbs, int64(size))
	publish(&m.omem, int64(len(c.sess.reply.w.Pending())-c.wpos))
	publish(&m.outCap, int64(c.sess.reply.w.Cap()))
}

func publish(a *atomic.Int64, v int64) {
	if a.Load() != v {
		a.Store(v)
	}
}

// fail queues an error reply after which the connection closes.
func (c *client) fail(msg string) {
	c.sess.reply.w.Next()
	c.sess.reply.Error(msg)
	c.sess.batched++
	c.closeAfter = true
}

// readFailed handles an error filling the request buffer. True: an error
// reply is queued (a request past the query buffer limit) and the
// connection closes once it is written; false: close it now (the client
// went away, or its reply is held and it sent more than the buffer takes).
func (c *client) readFailed(err error) bool {
	if c.sess.wait == nil && errors.Is(err, resp.ErrQueryLimit) {
		c.fail("ERR Protocol error: request larger than the query buffer limit")
		return true
	}
	return false
}

// held reports whether the client's output and requests are held.
func (c *client) held() bool { return c.sess.wait != nil }

// released reports whether the held reply, if any, is done; it then
// appends it after the replies held with it (nothing after it ran).
func (c *client) released() bool {
	sess := c.sess
	if sess.wait == nil {
		return true
	}
	select {
	case <-sess.wait:
	default:
		return false
	}
	sess.wait = nil
	if d := sess.deferred; d != nil {
		// WAIT's answer, in the place its command left empty.
		sess.reply.w.Raw(d)
		sess.deferred = nil
	}
	return true
}

// pushes moves the messages PUBLISH queued for the client to its output;
// false when there were none.
func (c *client) pushes() bool {
	if c.sess.sub == nil || c.closeAfter {
		return false
	}
	c.sess.reply.w.Next()
	return c.sess.takePushes()
}

// pending reports whether there is output to write or a log to wait for.
func (c *client) pending() bool {
	return c.sess.batched > 0 || len(c.sess.reply.w.Pending()) > c.wpos || c.closeAfter
}

// output makes the log as durable as the replies need and returns the
// bytes to write: nil while a reply is held.
func (c *client) output() []byte {
	sess := c.sess
	if sess.wait != nil {
		return nil
	}
	if sess.batched > 0 {
		if err := c.s.endBatch(sess); err != nil {
			// The log failed before the writes these replies acknowledge
			// were durable: their outcome is unknown, and nothing may say
			// they happened.
			sess.reply.w.Replace(appendInDoubt(sess.reply.w.Pending()[:c.checked], sess.batched, err))
		}
		sess.batched = 0
	}
	c.checked = len(sess.reply.w.Pending())
	return sess.reply.w.Pending()[c.wpos:c.checked]
}

// wrote records that n more bytes of the output were written; true when
// all of it is.
func (c *client) wrote(n int) bool {
	defer c.publishMem()
	c.wpos += n
	if c.wpos < c.checked {
		return false
	}
	c.sess.reply.w.Consume(c.checked)
	c.wpos, c.checked = 0, 0
	if c.sess.sub != nil {
		c.sess.setUnsent(len(c.sess.reply.w.Pending()))
	}
	return true
}

// blocked records, for the pub/sub output limit, that the output not yet
// written waits for the client to read.
func (c *client) blocked() {
	if c.sess.sub != nil {
		c.sess.setUnsent(len(c.sess.reply.w.Pending()) - c.wpos)
	}
}
