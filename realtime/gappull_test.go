package realtime

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/social"

	"github.com/redis/go-redis/v9"
)

// refusingDialer dials, unless *refuse holds: the hub's pub/sub connection,
// killed, then stays down.
func refusingDialer(refuse *atomic.Bool) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if refuse.Load() {
			return nil, errors.New("dial refused by the test")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

// gap kills the hub's pub/sub connection and keeps it down while during
// runs, then lets it come back, and waits until a channel is confirmed
// again and ok tells nothing more is awaited.
func (e *env) gap(t *testing.T, refuse *atomic.Bool, during func(), ok func() string) {
	t.Helper()
	before := e.hub.Stats.PubSubRestarts.Load()
	refuse.Store(true)
	if err := e.rdb.Do(t.Context(), "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	during()
	refuse.Store(false)
	testio.Eventually(t, 20*time.Second, func() string {
		if e.hub.Stats.PubSubRestarts.Load() == before {
			return "no channel confirmed again yet"
		}
		return ok()
	})
}

// A follow of a pulled author made while the hub's pub/sub connection was
// down (its pull_added lost with it) takes effect on the open stream once
// the connection is back: the hub reads its users' pulled authors again.
func TestGapPullAddedLost(t *testing.T) {
	var refuse atomic.Bool
	e := gapEnv(t, 27804, &redis.Options{Dialer: refusingDialer(&refuse)}, social.Options{PullThreshold: 2}, Options{})
	author := e.pulledAuthor(t)
	ann, bob := e.signUp("ann"), e.signUp("bob")
	e.follow(ann, bob) // pushed: a control that the stream is live
	s := e.connect(ann)
	achan := e.social.AuthorChannel(author.id)
	e.gap(t, &refuse, func() { e.follow(ann, author) }, func() string {
		if n := e.numSub(t, achan); n != 1 {
			return fmt.Sprintf("the author's channel has %d subscribers, want the hub: the follow made during the gap was not seen", n)
		}
		return ""
	})
	st := e.post(author, "after the reconnect")
	e.post(bob, "control")
	if got := nextStatus(t, s, 10*time.Second); got != st.ID {
		t.Fatalf("ann's stream got status %d first, want the pulled author's %d", got, st.ID)
	}
}

// An unfollow of a pulled author made while the hub's pub/sub connection
// was down (its pull_removed lost with it) takes effect too: the author's
// statuses stop, and the hub lets their channel go.
func TestGapPullRemovedLost(t *testing.T) {
	var refuse atomic.Bool
	e := gapEnv(t, 27808, &redis.Options{Dialer: refusingDialer(&refuse)}, social.Options{PullThreshold: 2}, Options{})
	author := e.pulledAuthor(t)
	ann, bob := e.signUp("ann"), e.signUp("bob")
	e.follow(ann, bob)
	e.follow(ann, author)
	s := e.connect(ann)
	achan := e.social.AuthorChannel(author.id)
	testio.Eventually(t, 20*time.Second, func() string {
		if n := e.numSub(t, achan); n != 1 {
			return fmt.Sprintf("the author's channel has %d subscribers, want the hub", n)
		}
		return ""
	})
	unfollow := func() {
		if _, err := e.social.Unfollow(t.Context(), ann.id, author.login); err != nil {
			t.Fatal(err)
		}
	}
	e.gap(t, &refuse, unfollow, func() string {
		if n := e.numSub(t, achan); n != 0 {
			return fmt.Sprintf("the author's channel has %d subscribers, want none: the unfollow made during the gap was not seen", n)
		}
		return ""
	})
	e.post(author, "after the unfollow")
	ctl := e.post(bob, "control")
	if got := nextStatus(t, s, 10*time.Second); got != ctl.ID {
		t.Fatalf("ann's stream got status %d first, want bob's %d: the author's came after the unfollow", got, ctl.ID)
	}
}
