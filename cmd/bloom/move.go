package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

func init() {
	register(command{name: "move", summary: "move a Redis (+ RedisBloom) server's data and writes to bloom serve by replication, no acknowledged write lost", run: runMove})
}

var moveHelp = help{
	name:     "move",
	synopsis: `move --from HOST:PORT --to HOST:PORT [--pause D] [--timeout D]`,
	about: `Moves a Redis server (with or without RedisBloom) onto bloom serve while
clients keep writing, by replication, and stops at the instant clients must
switch:

  1. REPLICAOF on --to (bloom serve): it loads FROM's data and follows its
     writes; the master's user and password in a redis:// URL given to
     --from become --to's masteruser and masterauth;
  2. once it has caught up, CLIENT PAUSE WRITE on FROM (for at most
     --pause), so FROM's offset stops;
  3. once --to's offset is FROM's: REPLICAOF NO ONE on --to, which now
     holds every write FROM acknowledged;
  4. REPLICAOF --to on FROM and CLIENT UNPAUSE: FROM refuses writes from
     now on (READONLY; bloom serve refuses it as a replica before any
     payload, so it keeps its data), and a write that waited in the pause
     fails instead of being acknowledged where nobody reads it.

Clients then switch to --to. If a step fails before 3, FROM is unpaused and
--to keeps following it; the exit status is 2. --to must reach FROM at the
address given to --from, and FROM --to at the one given to --to.`,
	examples: `bloom move --from 10.0.0.5:6379 --to 10.0.0.6:6479
bloom move --from redis://repl:secret@old:6379 --to 127.0.0.1:6479 --pause 5s`,
}

// moveStep reports progress on stderr.
type moveStep struct {
	w     io.Writer
	start time.Time
}

func (m moveStep) say(format string, args ...any) {
	fmt.Fprintf(m.w, "bloom move: %6.2fs %s\n", time.Since(m.start).Seconds(), fmt.Sprintf(format, args...))
}

func runMove(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("move")
	from := fs.String("from", "", "the Redis server to move from: host:port or a redis:// URL")
	to := fs.String("to", "", "the bloom serve to move to: host:port or a redis:// URL")
	pause := fs.Duration("pause", 10*time.Second, "the longest FROM's writes are paused while --to takes the last of them")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up if --to has not caught up with FROM after this long")
	pos, code, ok := parseFlags(fs, moveHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	const name = "move"
	if len(pos) > 0 {
		return usageErr(stderr, name, "unexpected argument %q", pos[0])
	}
	if *from == "" || *to == "" {
		return usageErr(stderr, name, "want --from and --to")
	}
	if *pause < 100*time.Millisecond {
		return usageErr(stderr, name, "--pause %v: want at least 100ms", *pause)
	}
	ctx, cancel := signalContext()
	defer cancel()
	fopt, err := moveOptions(*from)
	if err != nil {
		return usageErr(stderr, name, "--from: %v", err)
	}
	topt, err := moveOptions(*to)
	if err != nil {
		return usageErr(stderr, name, "--to: %v", err)
	}
	src, dst := redis.NewClient(fopt), redis.NewClient(topt)
	defer src.Close()
	defer dst.Close()
	step := moveStep{w: stderr, start: time.Now()}
	rep, err := move(ctx, src, dst, fopt, topt, *pause, *timeout, step)
	if err != nil {
		return failf(stderr, name, "%v", err)
	}
	fmt.Fprintf(stdout, "moved: %s holds everything %s acknowledged (offset %d, %d keys); writes were paused %v. Switch clients to %s; %s now refuses writes.\n",
		*to, *from, rep.offset, rep.keys, rep.paused.Round(time.Millisecond), *to, *from)
	return 0
}

func moveOptions(addr string) (*redis.Options, error) {
	opt := &redis.Options{Addr: addr}
	if strings.Contains(addr, "://") {
		var err error
		if opt, err = redis.ParseURL(addr); err != nil {
			return nil, err
		}
	}
	if _, _, err := net.SplitHostPort(opt.Addr); err != nil {
		return nil, err
	}
	opt.Protocol = 2
	opt.MaxRetries = 2
	return opt, nil
}

type moveReport struct {
	offset int64
	keys   int64
	paused time.Duration
}

// replField reads one field of INFO replication.
func replField(ctx context.Context, c *redis.Client, field string) (string, error) {
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			return v, nil
		}
	}
	return "", nil
}

func replOffset(ctx context.Context, c *redis.Client, field string) (int64, error) {
	v, err := replField(ctx, c, field)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("INFO replication %s = %q", field, v)
	}
	return n, nil
}

// move runs the cut-over (see moveHelp).
func move(ctx context.Context, src, dst *redis.Client, fopt, topt *redis.Options, pause, timeout time.Duration, step moveStep) (moveReport, error) {
	var rep moveReport
	if role, err := replField(ctx, src, "role"); err != nil {
		return rep, fmt.Errorf("FROM %s: %w", fopt.Addr, err)
	} else if role != "master" {
		return rep, fmt.Errorf("FROM %s is a %s, not a master", fopt.Addr, role)
	}
	if err := dst.Ping(ctx).Err(); err != nil {
		return rep, fmt.Errorf("--to %s: %w", topt.Addr, err)
	}
	if fopt.Password != "" {
		if err := dst.ConfigSet(ctx, "masteruser", fopt.Username).Err(); err != nil {
			return rep, fmt.Errorf("--to: CONFIG SET masteruser: %w", err)
		}
		if err := dst.ConfigSet(ctx, "masterauth", fopt.Password).Err(); err != nil {
			return rep, fmt.Errorf("--to: CONFIG SET masterauth: %w", err)
		}
	}
	host, port, _ := net.SplitHostPort(fopt.Addr)
	if err := dst.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		return rep, fmt.Errorf("--to: REPLICAOF %s %s: %w", host, port, err)
	}
	step.say("%s follows %s", topt.Addr, fopt.Addr)
	// Caught up: the link is up and the lag small, so the pause is short.
	deadline := time.Now().Add(timeout)
	for {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		status, err := replField(ctx, dst, "master_link_status")
		if err != nil {
			return rep, fmt.Errorf("--to: %w", err)
		}
		if status == "up" {
			ro, err2 := replOffset(ctx, dst, "slave_repl_offset")
			mo, err1 := replOffset(ctx, src, "master_repl_offset")
			if err := errors.Join(err1, err2); err != nil {
				return rep, err
			}
			if mo-ro < 1<<20 {
				step.say("caught up: %s at offset %d, %s at %d", topt.Addr, ro, fopt.Addr, mo)
				break
			}
		}
		if time.Now().After(deadline) {
			last, _ := replField(ctx, dst, "master_sync_last_error")
			return rep, fmt.Errorf("--to did not catch up with FROM in %v (link %s; last error: %q); it still follows FROM", timeout, status, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The pause: FROM's offset stops; --to takes the rest.
	pauseStart := time.Now()
	if err := src.Do(ctx, "CLIENT", "PAUSE", pause.Milliseconds(), "WRITE").Err(); err != nil {
		return rep, fmt.Errorf("FROM: CLIENT PAUSE WRITE: %w", err)
	}
	unpause := func() { src.Do(context.Background(), "CLIENT", "UNPAUSE") }
	off, err := replOffset(ctx, src, "master_repl_offset")
	if err != nil {
		unpause()
		return rep, fmt.Errorf("FROM: %w", err)
	}
	step.say("writes on %s paused at offset %d", fopt.Addr, off)
	for {
		ro, err := replOffset(ctx, dst, "slave_repl_offset")
		if err != nil {
			unpause()
			return rep, fmt.Errorf("--to: %w", err)
		}
		if ro == off {
			break
		}
		if ro > off || time.Since(pauseStart) > pause*3/4 {
			unpause()
			return rep, fmt.Errorf("--to's offset is %d, FROM's %d, %v into a pause of %v: nothing changed, FROM unpaused and --to still follows it", ro, off, time.Since(pauseStart).Round(time.Millisecond), pause)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := dst.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		unpause()
		return rep, fmt.Errorf("--to: REPLICAOF NO ONE: %w", err)
	}
	step.say("%s is a master, with everything up to offset %d", topt.Addr, off)
	// FROM refuses writes from now on, the ones waiting in the pause too.
	thost, tport, _ := net.SplitHostPort(topt.Addr)
	if err := src.Do(ctx, "REPLICAOF", thost, tport).Err(); err != nil {
		// FROM stays paused until the pause ends: a write it took
		// after that would be lost.
		return rep, fmt.Errorf("%s holds everything FROM acknowledged, but FROM could not be made read-only (REPLICAOF %s %s: %v): its writes are paused for the rest of %v; switch clients or stop their writes before then", topt.Addr, thost, tport, err, pause)
	}
	unpause()
	rep.paused = time.Since(pauseStart)
	step.say("%s refuses writes (a replica of %s)", fopt.Addr, topt.Addr)
	rep.offset = off
	rep.keys, _ = dst.DBSize(ctx).Result()
	return rep, nil
}
