package server

// Pub/sub: channels and patterns, and the delivery of messages to other
// clients' connections.
//
// A connection's output belongs to whoever serves it (its event loop, or
// its goroutine): only that owner encodes into it and writes it. PUBLISH
// therefore never touches a subscriber's reply buffer. It appends the
// encoded message to the subscriber's own queue (subscriber.queue, under a
// mutex held for the copy only) and asks the owner to look (notify): the
// event loop is woken through its pipe and moves the queue into the
// output at the start of its next round; a goroutine is woken out of its
// read by a read deadline in the past. The owner also moves the queue
// before each command it runs, so a message published before a command
// reaches the client before that command's reply, as in Redis.
//
// PUBLISH never blocks on a subscriber. A subscriber that does not read
// is bounded as Redis bounds it (client-output-buffer-limit pubsub, by
// default 32 MiB hard, 8 MiB for 60 s soft): what waits in its queue plus
// what its owner could not write yet is checked on every message, and
// past a limit the subscriber is disconnected and its queue freed.

import (
	"github.com/bloomkit/bloomkit/server/internal/glob"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// pubsubHub is the server's registry of subscriptions.
type pubsubHub struct {
	mu       sync.RWMutex
	channels map[string]map[*Session]struct{}
	patterns map[string]map[*Session]struct{}
	// clients counts the sessions with at least one subscription (INFO
	// pubsub_clients).
	clients atomic.Int64
}

// subscriber is a session's pub/sub state, made at its first SUBSCRIBE
// or PSUBSCRIBE.
type subscriber struct {
	// channels and patterns are the session's subscriptions; only its
	// owner reads or changes them (under hub.mu for the changes, which
	// publishers read through the hub's maps).
	channels map[string]struct{}
	patterns []string // in subscription order, as Redis lists them
	// resp3 is the protocol messages are encoded in (the session's, read
	// by publishers).
	resp3 atomic.Bool

	mu sync.Mutex
	// queue holds encoded messages its owner has not yet moved to the
	// connection's output.
	queue []byte
	// unsent is what the owner holds and has not written yet (set by the
	// owner after each write): with len(queue), the client's output.
	unsent int64
	// softSince is when the output went past the soft limit (0: below).
	softSince int64
	// dead is set once the subscriber was disconnected for its output.
	dead bool
	// notified is set while a wake-up is pending.
	notified bool
}

// subscribed reports whether c is in subscribed mode: at least one
// channel or pattern.
func (c *Session) subscribed() bool {
	return c.sub != nil && (len(c.sub.channels) > 0 || len(c.sub.patterns) > 0)
}

// subCount is the number of c's channels and patterns (what subscription
// replies carry).
func (c *Session) subCount() int64 {
	if c.sub == nil {
		return 0
	}
	return int64(len(c.sub.channels) + len(c.sub.patterns))
}

func (c *Session) subscriberState() *subscriber {
	if c.sub == nil {
		c.sub = &subscriber{channels: map[string]struct{}{}}
	}
	c.sub.resp3.Store(c.resp3)
	return c.sub
}

// outputLimit is one client class's client-output-buffer-limit: hard and
// soft bytes (0: none) and how long the soft one may be exceeded.
type outputLimit struct {
	hard, soft int64
	softFor    time.Duration
}

// pubsubLimit is the limit in force for subscribers.
func (s *Server) pubsubLimit() outputLimit {
	if l := s.set.outLimits.Load(); l != nil {
		return l[classPubsub]
	}
	return defaultOutputLimits[classPubsub]
}

// Client classes of client-output-buffer-limit.
const (
	classNormal = iota
	classReplica
	classPubsub
)

var outputClassNames = [3]string{"normal", "slave", "pubsub"}

// defaultOutputLimits are Redis's: none for normal clients, 256 MiB /
// 64 MiB for 60 s for replicas, 32 MiB / 8 MiB for 60 s for subscribers.
var defaultOutputLimits = [3]outputLimit{
	{},
	{hard: 256 << 20, soft: 64 << 20, softFor: 60 * time.Second},
	{hard: 32 << 20, soft: 8 << 20, softFor: 60 * time.Second},
}

// subscribe adds c to channel (pattern when pat); false when it already was.
func (s *Server) subscribe(c *Session, name string, pat bool) bool {
	sub := c.subscriberState()
	h := &s.pubsub
	h.mu.Lock()
	defer h.mu.Unlock()
	was := c.subCount()
	if pat {
		for _, p := range sub.patterns {
			if p == name {
				return false
			}
		}
		sub.patterns = append(sub.patterns, name)
		c.npsub.Store(int64(len(sub.patterns)))
		addSub(&h.patterns, name, c)
	} else {
		if _, ok := sub.channels[name]; ok {
			return false
		}
		sub.channels[name] = struct{}{}
		c.nsub.Store(int64(len(sub.channels)))
		addSub(&h.channels, name, c)
	}
	if was == 0 {
		h.clients.Add(1)
	}
	return true
}

// unsubscribe removes c from channel (pattern when pat); false when it
// was not subscribed.
func (s *Server) unsubscribe(c *Session, name string, pat bool) bool {
	sub := c.sub
	if sub == nil {
		return false
	}
	h := &s.pubsub
	h.mu.Lock()
	defer h.mu.Unlock()
	if pat {
		i := -1
		for j, p := range sub.patterns {
			if p == name {
				i = j
				break
			}
		}
		if i < 0 {
			return false
		}
		sub.patterns = append(sub.patterns[:i], sub.patterns[i+1:]...)
		c.npsub.Store(int64(len(sub.patterns)))
		delSub(h.patterns, name, c)
	} else {
		if _, ok := sub.channels[name]; !ok {
			return false
		}
		delete(sub.channels, name)
		c.nsub.Store(int64(len(sub.channels)))
		delSub(h.channels, name, c)
	}
	if c.subCount() == 0 {
		h.clients.Add(-1)
	}
	return true
}

// unsubscribeAll forgets every subscription of c (a connection that is
// gone, RESET), without replies.
func (s *Server) unsubscribeAll(c *Session) {
	if c.sub == nil {
		return
	}
	for _, ch := range sortedChannels(c.sub) {
		s.unsubscribe(c, ch, false)
	}
	for len(c.sub.patterns) > 0 {
		s.unsubscribe(c, c.sub.patterns[0], true)
	}
}

// endSubscriber forgets the subscriptions and queued messages of a
// session that is gone.
func (s *Server) endSubscriber(c *Session) {
	if c.sub == nil {
		return
	}
	s.unsubscribeAll(c)
	c.sub.mu.Lock()
	c.sub.dead, c.sub.queue = true, nil
	c.sub.mu.Unlock()
}

func sortedChannels(sub *subscriber) []string {
	out := make([]string, 0, len(sub.channels))
	for ch := range sub.channels {
		out = append(out, ch)
	}
	sort.Strings(out)
	return out
}

func addSub(m *map[string]map[*Session]struct{}, name string, c *Session) {
	if *m == nil {
		*m = map[string]map[*Session]struct{}{}
	}
	set := (*m)[name]
	if set == nil {
		set = map[*Session]struct{}{}
		(*m)[name] = set
	}
	set[c] = struct{}{}
}

func delSub(m map[string]map[*Session]struct{}, name string, c *Session) {
	set := m[name]
	delete(set, c)
	if len(set) == 0 {
		delete(m, name) // no empty entries: channel names cannot pile up
	}
}

// publish delivers message to the subscribers of channel and of the
// patterns matching it, and returns how many received it.
func (s *Server) publish(channel, message []byte) int64 {
	h := &s.pubsub
	var msg, pmsg [2][]byte // encoded bodies, without header; by protocol
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := int64(0)
	if set := h.channels[string(channel)]; len(set) > 0 {
		body := appendBulk(appendBulk(appendBulk(nil, []byte("message")), channel), message)
		msg[0] = append([]byte("*3\r\n"), body...)
		msg[1] = append([]byte(">3\r\n"), body...)
		for c := range set {
			s.deliver(c, msg)
			n++
		}
	}
	for pat, set := range h.patterns {
		if !glob.Match(pat, string(channel)) {
			continue
		}
		body := appendBulk(appendBulk(appendBulk(appendBulk(nil, []byte("pmessage")), []byte(pat)), channel), message)
		pmsg[0] = append([]byte("*4\r\n"), body...)
		pmsg[1] = append([]byte(">4\r\n"), body...)
		for c := range set {
			s.deliver(c, pmsg)
			n++
		}
	}
	return n
}

func appendBulk(b, v []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(v)), 10)
	b = append(b, '\r', '\n')
	b = append(b, v...)
	return append(b, '\r', '\n')
}

// deliver queues one encoded message for c and wakes its owner; a
// subscriber past its output limit is disconnected instead.
func (s *Server) deliver(c *Session, enc [2][]byte) {
	sub := c.sub
	m := enc[0]
	if sub.resp3.Load() {
		m = enc[1]
	}
	lim := s.pubsubLimit()
	sub.mu.Lock()
	if sub.dead {
		sub.mu.Unlock()
		return
	}
	sub.queue = append(sub.queue, m...)
	total := int64(len(sub.queue)) + sub.unsent
	over := ""
	switch {
	case lim.hard > 0 && total > lim.hard:
		over = "hard"
	case lim.soft > 0 && total > lim.soft:
		now := monoNow()
		if sub.softSince == 0 {
			sub.softSince = now
		} else if time.Duration(now-sub.softSince) > lim.softFor {
			over = "soft"
		}
	default:
		sub.softSince = 0
	}
	wake := false
	if over != "" {
		sub.dead = true
		sub.queue = nil
	} else if !sub.notified {
		sub.notified, wake = true, true
	}
	sub.mu.Unlock()
	if over != "" {
		s.slowSubscribers.Add(1)
		s.log.Warn("disconnecting a subscriber past its output buffer limit (client-output-buffer-limit pubsub)",
			"addr", c.Addr, "id", c.ID, "limit", over, "output_bytes", total)
		c.disconnect()
		return
	}
	if wake {
		if n := c.notify.Load(); n != nil {
			(*n)()
		}
	}
}

// takePushes moves c's queued messages to the end of its output (its
// owner calls it). It reports whether there were any.
func (c *Session) takePushes() bool {
	sub := c.sub
	if sub == nil {
		return false
	}
	sub.mu.Lock()
	q := sub.queue
	sub.queue = nil
	sub.notified = false
	if len(q) > 0 {
		c.reply.w.Raw(q)
		sub.unsent = int64(len(c.reply.w.Pending()))
	}
	sub.mu.Unlock()
	return len(q) > 0
}

// setUnsent records what c's owner holds unwritten (for the output limit).
func (c *Session) setUnsent(n int) {
	if sub := c.sub; sub != nil {
		sub.mu.Lock()
		sub.unsent = int64(n)
		sub.mu.Unlock()
	}
}

// pubsubCounts are INFO's pubsub_channels and pubsub_patterns.
func (s *Server) pubsubCounts() (channels, patterns int) {
	s.pubsub.mu.RLock()
	defer s.pubsub.mu.RUnlock()
	return len(s.pubsub.channels), len(s.pubsub.patterns)
}
