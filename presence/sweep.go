package presence

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"
)

var (
	//go:embed sweep.lua
	sweepSource string
	sweepScript = script(sweepSource)

	//go:embed trim.lua
	trimSource string
	trimScript = script(copySource, trimSource)
)

// Sweep takes out of the registry the connections of instances whose lease
// ran out (they died, or stalled for W, without disconnecting them), and
// tells the connected friends of the users left with none that they are
// offline: the users of each script call side by side (announceAll), so
// that a large instance gone away is announced in a fraction of the time
// one after another would take. Each such user is taken by one sweeping
// instance only. It returns how many users it took out.
func (t *Tracker) Sweep(ctx context.Context) (int, error) {
	k := t.keys
	total := 0
	var instance string // to sweep, as the last call answered; none at first
	var conns []string  // of instance, to take out
	for {
		keys := []string{k.instances(), k.connected(), k.lastSeen(), k.onlineCopy()}
		args := []any{sweepBatch}
		if instance != "" {
			keys = append(keys, k.instanceConns(instance))
			args = append(args, instance)
			for _, c := range conns {
				keys = append(keys, k.conns(connUser(c)))
				args = append(args, c)
			}
		}
		res, err := sweepScript.Run(ctx, t.rdb, keys, args...).Slice()
		if err != nil {
			return total, fmt.Errorf("sweep: %w", err)
		}
		var offline []userSeen
		for i := 2; i+1 < len(res); i += 2 {
			uid, err := strconv.ParseInt(fmt.Sprint(res[i]), 10, 64)
			if err != nil {
				continue // not a user id; nobody to tell
			}
			total++
			u := userSeen{uid: uid}
			if n := toInt(res, i+1); n > 0 {
				u.seen = unixMilli(n)
			}
			offline = append(offline, u)
		}
		t.announceAll(ctx, offline, false)
		if instance, _ = res[0].(string); instance == "" {
			return total, nil
		}
		conns = conns[:0]
		next, _ := res[1].([]any)
		for _, c := range next {
			conns = append(conns, fmt.Sprint(c))
		}
		if len(conns) == 0 {
			conns, err = t.rdb.SRandMemberN(ctx, k.instanceConns(instance), sweepBatch).Result()
			if err != nil {
				return total, fmt.Errorf("sweep: connections of %s: %w", instance, err)
			}
		}
	}
}

// connUser is the user of a connection in an instance's set ("uid:connID"),
// or 0 when it names none.
func connUser(conn string) int64 {
	uid, _, _ := strings.Cut(conn, ":")
	n, _ := strconv.ParseInt(uid, 10, 64)
	return n
}

// TrimCopy takes out of the shared online copy the users seen before now -
// W, unless an instance did within Options.CopyTTL. It reports how many it
// took out (0 when the trim was not due). It goes in script calls of
// trimBatch users at most, so that the users of an instance gone away, stale
// all at once, do not block Redis for one long call.
func (t *Tracker) TrimCopy(ctx context.Context) (int, error) {
	if t.opts.CopyTTL < 0 {
		return 0, nil // every read copies afresh
	}
	k := t.keys
	total := 0
	for goOn := 0; ; goOn = 1 {
		n, err := trimScript.Run(ctx, t.rdb,
			[]string{k.lastSeen(), k.onlineCopy(), k.onlineCopyTrimmed()},
			ms(t.opts.Window), max(ms(t.opts.CopyTTL), 1), trimBatch, goOn,
		).Int()
		if err != nil {
			return total, fmt.Errorf("trim the online copy: %w", err)
		}
		if n < trimBatch {
			return total + max(n, 0), nil
		}
		total += n
	}
}

// RunSweeper sweeps, and trims the shared online copy, every half heartbeat
// interval until ctx ends. Every instance runs one, so
// friends learn that a user's instance vanished within W and one heartbeat
// interval of its last word. It is the Tracker's background work: on its way
// out it waits for a registration again under way (registerAgainAside).
func (t *Tracker) RunSweeper(ctx context.Context) {
	defer t.registeredAgain()
	tick := time.NewTicker(max(t.opts.HeartbeatInterval/2, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n, err := t.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			t.log.WarnContext(ctx, "presence sweep failed", "err", err)
		case n > 0:
			t.log.InfoContext(ctx, "swept users of instances gone away", "users", n)
		}
		if _, err := t.TrimCopy(ctx); err != nil && ctx.Err() == nil {
			t.log.WarnContext(ctx, "online copy not trimmed", "err", err)
		}
	}
}
