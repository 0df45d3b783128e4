package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// mix is how the source's keys are made (see seed).
type mix struct {
	strings, ttl, ints           int
	bfReserved, bfAuto, bfScaled int
	cfReserved, cfAuto           int
}

func mixOf(cfg config) mix {
	m := mix{strings: cfg.keys - cfg.bf - cfg.cf}
	m.ttl = (m.strings + 4) / 5 * 2 // i%5 < 2
	m.ints = m.strings / 10         // i%10 == 9
	m.bfReserved, m.bfAuto = cfg.bf*2/5, cfg.bf*2/5
	m.bfScaled = cfg.bf - m.bfReserved - m.bfAuto
	m.cfReserved = cfg.cf / 2
	m.cfAuto = cfg.cf - m.cfReserved
	return m
}

// Items added to each kind of filter.
const (
	bfReservedItems = 200 // of a capacity of 1000
	bfAutoItems     = 50  // created by BF.MADD: capacity 100
	bfScaledItems   = 400 // capacity 100, EXPANSION 2: sub-filters of 100, 200, 400
	cfReservedItems = 300 // of a capacity of 1000
	cfAutoItems     = 20  // created by CF.INSERT: capacity 1024
)

func (m mix) describe() string {
	return fmt.Sprintf("%d strings (%d with a TTL of 1 to 24 h, %d holding integers; values of 16 to 128 bytes, half JSON-like, half random letters), "+
		"%d Bloom filters (%d BF.RESERVE 0.01 1000 holding %d items, %d created by BF.MADD of %d items (capacity 100), %d BF.RESERVE 0.01 100 EXPANSION 2 scaled to three sub-filters by %d items), "+
		"%d cuckoo filters (%d CF.RESERVE 1000 holding %d items, %d created by CF.INSERT of %d items (capacity 1024))",
		m.strings, m.ttl, m.ints, m.bfReserved+m.bfAuto+m.bfScaled, m.bfReserved, bfReservedItems, m.bfAuto, bfAutoItems, m.bfScaled, bfScaledItems,
		m.cfReserved+m.cfAuto, m.cfReserved, cfReservedItems, m.cfAuto, cfAutoItems)
}

func strKey(i int) string { return "s:" + strconv.Itoa(i) }

func item(key string, n int) string { return key + ":" + strconv.Itoa(n) }

// filterKeys are the filter keys with the items each holds.
func (m mix) filterKeys() (names []string, items []int) {
	add := func(prefix string, count, n int) {
		for j := 0; j < count; j++ {
			names = append(names, prefix+strconv.Itoa(j))
			items = append(items, n)
		}
	}
	add("bf:r:", m.bfReserved, bfReservedItems)
	add("bf:a:", m.bfAuto, bfAutoItems)
	add("bf:s:", m.bfScaled, bfScaledItems)
	add("cf:r:", m.cfReserved, cfReservedItems)
	add("cf:a:", m.cfAuto, cfAutoItems)
	return names, items
}

const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func value(rng *rand.Rand, i int) string {
	if i%10 == 9 {
		return strconv.Itoa(i * 31)
	}
	n := 16 + (i*131)%113
	if i%2 == 0 {
		v := fmt.Sprintf(`{"id":%d,"name":"user%d","score":%d,"tags":["a","b"]}`, i, i, rng.IntN(100000))
		for len(v) < n {
			v += " "
		}
		return v
	}
	b := make([]byte, n)
	for k := range b {
		b[k] = letters[rng.IntN(len(letters))]
	}
	return string(b)
}

type seedInfo struct {
	rdb        string
	took       time.Duration
	dbsize     int64
	rdbBytes   int64
	usedMemory int64
	bfVersion  string
	mix        mix
}

// seed loads a redis-server with RedisBloom with the mix, saves it to
// dir/dump.rdb and stops it: every source starts from that file.
func seed(ctx context.Context, cfg config, dir string) (seedInfo, error) {
	si := seedInfo{mix: mixOf(cfg), rdb: filepath.Join(dir, "dump.rdb")}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return si, err
	}
	port := freePort()
	p, err := startRedis(cfg.module, dir, port)
	if err != nil {
		return si, err
	}
	defer p.stop()
	c := client(port)
	defer c.Close()
	mods, err := c.Do(ctx, "MODULE", "LIST").Slice()
	if err != nil || len(mods) == 0 {
		return si, fmt.Errorf("MODULE LIST: %v %v (is %s RedisBloom?)", mods, err, cfg.module)
	}
	si.bfVersion = fmt.Sprint(mods)
	if m, ok := mods[0].(map[any]any); ok {
		si.bfVersion = fmt.Sprintf("module %v version %v", m["name"], m["ver"])
	} else if l, ok := mods[0].([]any); ok && len(l) >= 4 {
		si.bfVersion = fmt.Sprintf("module %v version %v", l[1], l[3])
	}
	t0 := time.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	m := si.mix
	pipe := c.Pipeline()
	flush := func() error {
		cmds, err := pipe.Exec(ctx)
		if err != nil {
			for _, cmd := range cmds {
				if cmd.Err() != nil {
					return fmt.Errorf("%v: %w", cmd.Args(), cmd.Err())
				}
			}
		}
		return err
	}
	for i := 0; i < m.strings; i++ {
		if i%5 < 2 {
			pipe.Set(ctx, strKey(i), value(rng, i), time.Duration(3600+(i*7919)%82800)*time.Second)
		} else {
			pipe.Set(ctx, strKey(i), value(rng, i), 0)
		}
		if pipe.Len() == 1000 {
			if err := flush(); err != nil {
				return si, err
			}
		}
	}
	names, counts := m.filterKeys()
	for k, key := range names {
		args := make([]any, 0, counts[k]+3)
		switch key[:5] {
		case "bf:r:":
			pipe.Do(ctx, "BF.RESERVE", key, "0.01", 1000)
			args = append(args, "BF.MADD", key)
		case "bf:a:":
			args = append(args, "BF.MADD", key)
		case "bf:s:":
			pipe.Do(ctx, "BF.RESERVE", key, "0.01", 100, "EXPANSION", 2)
			args = append(args, "BF.MADD", key)
		case "cf:r:":
			pipe.Do(ctx, "CF.RESERVE", key, 1000)
			args = append(args, "CF.INSERT", key, "ITEMS")
		case "cf:a:":
			args = append(args, "CF.INSERT", key, "ITEMS")
		}
		for n := 0; n < counts[k]; n++ {
			args = append(args, item(key, n))
		}
		pipe.Do(ctx, args...)
		if pipe.Len() >= 100 {
			if err := flush(); err != nil {
				return si, err
			}
		}
	}
	if err := flush(); err != nil {
		return si, err
	}
	si.took = time.Since(t0)
	if si.dbsize, err = c.DBSize(ctx).Result(); err != nil {
		return si, err
	}
	if si.dbsize != int64(cfg.keys) {
		return si, fmt.Errorf("the source holds %d keys, want %d", si.dbsize, cfg.keys)
	}
	if si.usedMemory, err = infoInt(ctx, c, "memory", "used_memory"); err != nil {
		return si, err
	}
	if err := c.Save(ctx).Err(); err != nil {
		return si, err
	}
	st, err := os.Stat(si.rdb)
	if err != nil {
		return si, err
	}
	si.rdbBytes = st.Size()
	return si, nil
}

// startSource starts a redis-server with RedisBloom on a copy of the seed
// RDB and waits until it has loaded every key.
func startSource(ctx context.Context, cfg config, sd seedInfo, dir string, port int) (*proc, error) {
	if err := copyFile(sd.rdb, filepath.Join(dir, "dump.rdb")); err != nil {
		return nil, err
	}
	p, err := startRedis(cfg.module, dir, port)
	if err != nil {
		return nil, err
	}
	c := client(port)
	defer c.Close()
	err = waitFor("the source loading its RDB", 2*time.Minute, 20*time.Millisecond, func() (bool, error) {
		n, err := c.DBSize(ctx).Result()
		if err != nil && strings.HasPrefix(err.Error(), "LOADING") {
			return false, nil
		}
		return n == sd.dbsize, err
	})
	if err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// compare checks, with no writer running and the target caught up, that
// both servers hold as many keys and that a sample of them reads the same:
// strings' values and TTLs (within 5 s), filters' answers for items added
// and items not. It returns a description of the first difference.
func compare(ctx context.Context, m mix, src, dst *redis.Client) (string, error) {
	ns, err := src.DBSize(ctx).Result()
	if err != nil {
		return "", err
	}
	nd, err := dst.DBSize(ctx).Result()
	if err != nil {
		return "", err
	}
	if ns != nd {
		return fmt.Sprintf("DBSIZE %d on the source, %d on the target", ns, nd), nil
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for k := 0; k < 2000; k++ {
		key := strKey(rng.IntN(m.strings))
		a, err1 := src.Get(ctx, key).Result()
		b, err2 := dst.Get(ctx, key).Result()
		if a != b || (err1 == nil) != (err2 == nil) {
			return fmt.Sprintf("GET %s: %q (%v) on the source, %q (%v) on the target", key, a, err1, b, err2), nil
		}
		ta, _ := src.PTTL(ctx, key).Result()
		tb, _ := dst.PTTL(ctx, key).Result()
		if (ta < 0) != (tb < 0) || (ta-tb).Abs() > 5*time.Second {
			return fmt.Sprintf("PTTL %s: %v on the source, %v on the target", key, ta, tb), nil
		}
	}
	names, counts := m.filterKeys()
	for k := 0; k < 500; k++ {
		j := rng.IntN(len(names))
		key := names[j]
		cmd := "BF.MEXISTS"
		if key[0] == 'c' {
			cmd = "CF.MEXISTS"
		}
		args := []any{cmd, key}
		for n := 0; n < 10; n++ {
			args = append(args, item(key, rng.IntN(2*counts[j]))) // half added, half not
		}
		a, err1 := src.Do(ctx, args...).Slice()
		b, err2 := dst.Do(ctx, args...).Slice()
		if err1 != nil || err2 != nil || fmt.Sprint(a) != fmt.Sprint(b) {
			return fmt.Sprintf("%s %s: %v (%v) on the source, %v (%v) on the target", cmd, key, a, err1, b, err2), nil
		}
	}
	return "", nil
}
