package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/bloomkit/bloomkit/internal/keyslot"
	"github.com/bloomkit/bloomkit/redisbloom"
)

// This file is what push, pull and migrate share: connecting to anything
// that speaks RedisBloom's commands (bloom serve, Redis with the module,
// Redis 8, Redis Cluster), and moving one BF or CF key as its SCANDUMP
// stream.

// remote is a connection to one server or cluster.
type remote struct {
	addr    string
	c       redis.UniversalClient
	cluster bool
}

// dial connects to addr: host:port, or a redis:// / rediss:// URL (with a
// password in it). A server whose INFO says cluster_enabled:1 is reached
// through go-redis's cluster client, which routes each key to the master
// of its hash slot; addr is then one seed node.
func dial(ctx context.Context, addr string) (*remote, error) {
	// go-redis logs failed dials on its own; the error returned says it.
	quietOnce.Do(func() { redis.SetLogger(quietLogger{}) })
	opt := &redis.Options{Addr: addr}
	if strings.Contains(addr, "://") {
		var err error
		if opt, err = redis.ParseURL(addr); err != nil {
			return nil, fmt.Errorf("%s: %w", addr, err)
		}
	}
	opt.MaxRetries = 2
	// RESP2: INFO and SCANDUMP replies are flat arrays on every server.
	opt.Protocol = 2
	c := redis.NewClient(opt)
	info, err := c.Info(ctx, "cluster").Result()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	if !strings.Contains(info, "cluster_enabled:1") {
		return &remote{addr: addr, c: c}, nil
	}
	c.Close()
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{opt.Addr}, Username: opt.Username, Password: opt.Password, TLSConfig: opt.TLSConfig, MaxRetries: 4, Protocol: 2,
	})
	if err := cc.Ping(ctx).Err(); err != nil {
		cc.Close()
		return nil, fmt.Errorf("%s (cluster): %w", addr, err)
	}
	return &remote{addr: addr, c: cc, cluster: true}, nil
}

func (s *remote) close() { s.c.Close() }

// family is the kind of a key: the command prefix and TYPE name of a
// filter (BF or CF), or of a sketch (CMS, TOPK or TDIGEST).
type family struct {
	prefix   string // "BF", "CF", "CMS", "TOPK" or "TDIGEST"
	typeName string // what TYPE answers
	dumpKind byte   // redisbloom.DumpBloom or DumpCuckoo
	// sketch marks the families RedisBloom has no SCANDUMP for: migrate
	// copies them with DUMP and RESTORE.
	sketch bool
}

var (
	familyBF = family{prefix: "BF", typeName: "MBbloom--", dumpKind: redisbloom.DumpBloom}
	familyCF = family{prefix: "CF", typeName: "MBbloomCF", dumpKind: redisbloom.DumpCuckoo}
	// familyNative is a bloomkit filter kept by bloom serve (BF.RESERVE …
	// LAYOUT or WINDOW): BF commands, and its SCANDUMP stream is a bloomkit
	// file without the trailer.
	familyNative = family{prefix: "BF", typeName: "BKbloom--"}

	// RedisBloom's sketches, under their module type names.
	familyCMS     = family{prefix: "CMS", typeName: "CMSk-TYPE", sketch: true}
	familyTopK    = family{prefix: "TOPK", typeName: "TopK-TYPE", sketch: true}
	familyTDigest = family{prefix: "TDIGEST", typeName: "TDIS-TYPE", sketch: true}
)

// sketchOfType returns the sketch family of a TYPE name.
func sketchOfType(t string) (family, bool) {
	for _, f := range []family{familyCMS, familyTopK, familyTDigest} {
		if t == f.typeName {
			return f, true
		}
	}
	return family{}, false
}

func familyOfType(t string) (family, bool) {
	switch t {
	case familyBF.typeName:
		return familyBF, true
	case familyCF.typeName:
		return familyCF, true
	case familyNative.typeName:
		return familyNative, true
	}
	return family{}, false
}

func familyOfDump(kind byte) family {
	if kind == redisbloom.DumpCuckoo {
		return familyCF
	}
	return familyBF
}

// keyFamily returns the family of key, ok = false when it does not exist;
// another type is an error.
func (s *remote) keyFamily(ctx context.Context, key string) (family, bool, error) {
	t, err := s.c.Type(ctx, key).Result()
	if err != nil {
		return family{}, false, err
	}
	if t == "none" {
		return family{}, false, nil
	}
	f, ok := familyOfType(t)
	if !ok {
		return family{}, false, fmt.Errorf("key %q holds a %s, not a Bloom or cuckoo filter", key, t)
	}
	return f, true, nil
}

// errEmptyCuckoo: RedisBloom's CF.SCANDUMP returns nothing for a cuckoo
// filter that holds no items, so there is no stream to save.
var errEmptyCuckoo = errors.New("an empty cuckoo filter: CF.SCANDUMP gives no header for it (RedisBloom's behaviour)")

// scanDump calls fn with each SCANDUMP reply of key, the header first.
// The first two requests (iterators 0 and 1) go in one round trip.
func (s *remote) scanDump(ctx context.Context, f family, key string, fn func(iter int64, data []byte) error) error {
	cmd := f.prefix + ".SCANDUMP"
	var first, second *redis.Cmd
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		first = p.Do(ctx, cmd, key, 0)
		second = p.Do(ctx, cmd, key, 1)
		return nil
	}); err != nil && first.Err() != nil {
		return fmt.Errorf("%s %s 0: %w", cmd, key, first.Err())
	}
	reply := func(c *redis.Cmd, it int64) (int64, []byte, error) {
		v, err := c.Slice()
		if err != nil {
			return 0, nil, fmt.Errorf("%s %s %d: %w", cmd, key, it, err)
		}
		if len(v) != 2 {
			return 0, nil, fmt.Errorf("%s %s %d: a reply of %d elements", cmd, key, it, len(v))
		}
		next, ok := v[0].(int64)
		if !ok {
			return 0, nil, fmt.Errorf("%s %s %d: iterator %v", cmd, key, it, v[0])
		}
		data, _ := v[1].(string)
		return next, []byte(data), nil
	}
	next, data, err := reply(first, 0)
	if err != nil {
		return err
	}
	if next == 0 {
		return errEmptyCuckoo
	}
	header := data
	if err := fn(next, data); err != nil {
		return err
	}
	for it, c := next, second; ; c = nil {
		if c == nil {
			c = redis.NewCmd(ctx, cmd, key, it)
			_ = s.c.Process(ctx, c)
		}
		next, data, err := reply(c, it)
		if err != nil {
			return err
		}
		if next == 0 && f == familyNative {
			return s.sameHeader(ctx, key, header)
		}
		if next == 0 {
			return nil
		}
		if err := fn(next, data); err != nil {
			return err
		}
		it = next
	}
}

// sameHeader checks, after a bloomkit key's stream was read, that its
// header is still the one read first. A window that moved to a new
// generation meanwhile rotated its arrays under the start times the
// header gave: the stream would hold items in the wrong generations —
// forgotten early or kept too long — in a pulled file or a migrated key.
// A window moves at most once a generation, so reading again works.
func (s *remote) sameHeader(ctx context.Context, key string, header []byte) error {
	v, err := s.c.Do(ctx, "BF.SCANDUMP", key, 0).Slice()
	if err != nil {
		return fmt.Errorf("BF.SCANDUMP %s 0: %w", key, err)
	}
	if len(v) != 2 {
		return fmt.Errorf("BF.SCANDUMP %s 0: a reply of %d elements", key, len(v))
	}
	if h, _ := v[1].(string); h != string(header) {
		return fmt.Errorf("BF.SCANDUMP %s: the key changed while it was read (a window moved to a new generation, or the key was replaced); try again", key)
	}
	return nil
}

// putKey loads a SCANDUMP stream into key: feed calls load with each
// record in order (the header first). The stream goes into a scratch key
// in the same hash slot, which a RENAME then puts in place in one step,
// replacing what key held: nobody sees a half-loaded filter.
func (s *remote) putKey(ctx context.Context, f family, key string, feed func(load func(iter int64, data []byte) error) error) (int64, error) {
	tmp := key + ".bloom-load"
	if s.cluster {
		tmp = tempKey(key)
	}
	if err := s.c.Del(ctx, tmp).Err(); err != nil {
		return 0, err
	}
	var n int64
	err := feed(func(iter int64, data []byte) error {
		if err := s.c.Do(ctx, f.prefix+".LOADCHUNK", tmp, iter, data).Err(); err != nil {
			return fmt.Errorf("%s.LOADCHUNK %s %d: %w", f.prefix, tmp, iter, err)
		}
		n += int64(len(data))
		return nil
	})
	if err == nil {
		err = s.c.Rename(ctx, tmp, key).Err()
	}
	if err != nil {
		s.c.Del(context.WithoutCancel(ctx), tmp)
		return n, err
	}
	return n, nil
}

// streamSum is a CRC-32C of key's SCANDUMP stream (iterators and chunks),
// and its size: equal sums mean equal filters.
func (s *remote) streamSum(ctx context.Context, f family, key string) (uint32, int64, error) {
	var sum uint32
	var n int64
	err := s.scanDump(ctx, f, key, func(iter int64, data []byte) error {
		sum = recordSum(sum, iter, data)
		n += int64(len(data))
		return nil
	})
	return sum, n, err
}

func recordSum(sum uint32, iter int64, data []byte) uint32 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(iter))
	sum = crc32.Update(sum, format.Castagnoli, b[:])
	return crc32.Update(sum, format.Castagnoli, data)
}

// tempKey is a scratch key in the same cluster hash slot as key, into which
// a filter is loaded before a RENAME puts it in place in one step, so that
// nobody sees a half-loaded filter under key. A key without a {hash tag}
// gets one that hashes to its slot.
func tempKey(key string) string {
	base := key + ".bloom-load"
	if keyslot.HashTag(key) != key { // a {tag}: any suffix keeps the slot
		return base
	}
	slotTagsOnce.Do(fillSlotTags)
	// In front, so that it is the first {...} of the name.
	return "{" + slotTags[keyslot.Of(key)] + "}" + base
}

var quietOnce sync.Once

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// slotTags[s] is a short string whose slot is s.
var (
	slotTags     [keyslot.Slots]string
	slotTagsOnce sync.Once
)

func fillSlotTags() {
	for left, i := 16384, 0; left > 0; i++ {
		t := strconv.FormatInt(int64(i), 36)
		if s := keyslot.Of(t); slotTags[s] == "" {
			slotTags[s] = t
			left--
		}
	}
}
