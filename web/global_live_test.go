package web_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/protocol"
	"chorus/social"

	"github.com/redis/go-redis/v9"
)

// A stream that watches the global timeline, on another instance than the
// poster's, gets each status posted through the API once, and its deletion;
// a stream that does not watch, or no longer does, gets none of it; and the
// instance holds its subscription to the global channel only while one of
// its streams watches. On one Redis and on a cluster.
func TestGlobalWatchAcrossInstances(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	one, two := e.start(), e.start()
	poster := one.signUp(t, "gposter")
	watcher, keeper, bystander := one.signUp(t, "gwatcher"), one.signUp(t, "gkeeper"), one.signUp(t, "gbystander")
	ws, ks, bs := two.as(watcher).connect(), two.as(keeper).connect(), two.as(bystander).connect()
	watch := map[string]string{"type": "watch", "timeline": "global"}
	for _, s := range []*stream{ws, ks} {
		s.send(watch)
		if f := s.nextOf(protocol.TypeWatching, 10*time.Second); f.Timeline != "global" {
			t.Fatalf("watching frame %+v, want the global timeline", f)
		}
	}
	if n := globalSubscribers(t, two); n != 1 {
		t.Fatalf("the global channel has %d subscribers, want 1 (instance two)", n)
	}

	// upToPing returns the frames s is sent before the answer to a frame
	// of an unknown type, sent now: everything queued for it before.
	upToPing := func(s *stream) []frame {
		t.Helper()
		s.send(map[string]string{"type": "ping"})
		var got []frame
		for {
			f := s.next(10 * time.Second)
			if f.Type == protocol.TypeError && f.Code == protocol.CodeUnknownType {
				return got
			}
			got = append(got, f)
		}
	}
	globalFrames := func(frames []frame) []string {
		var out []string
		for _, f := range frames {
			switch f.Type {
			case protocol.TypeGlobalStatus:
				out = append(out, fmt.Sprintf("%s %d", f.Type, f.Status.ID))
			case protocol.TypeGlobalStatusDeleted, protocol.TypeWatching:
				out = append(out, fmt.Sprintf("%s %d", f.Type, f.ID))
			}
		}
		return out
	}

	st := poster.post("for everyone, live")
	if f := ws.nextOf(protocol.TypeGlobalStatus, 10*time.Second); f.Status.ID != st.ID || f.Status.Login != "gposter" || f.Status.Message != st.Message {
		t.Fatalf("global_status frame %+v, want status %d by gposter", f.Status, st.ID)
	}
	// The hub hands a message to every watcher at once: by now the
	// bystander's would be queued, were it sent one.
	if got := globalFrames(upToPing(ws)); len(got) != 0 {
		t.Errorf("after the status, the watcher also got %q, want nothing more", got)
	}
	if got := globalFrames(upToPing(bs)); len(got) != 0 {
		t.Errorf("a stream that does not watch got %q, want nothing", got)
	}
	poster.deleteStatus(st.ID)
	if f := ws.nextOf(protocol.TypeGlobalStatusDeleted, 10*time.Second); f.ID != st.ID {
		t.Fatalf("global_status_deleted of %d, want %d", f.ID, st.ID)
	}

	// An unwatch, answered in order with the ping after it.
	first := st.ID
	ws.send(map[string]string{"type": "unwatch", "timeline": "global"})
	upToPing(ws)
	st = poster.post("after the unwatch")
	// The keeper got the first status and its deletion too, then this.
	if got, want := globalFrames(ks.upTo(protocol.TypeGlobalStatus, st.ID)), []string{
		fmt.Sprintf("global_status %d", first), fmt.Sprintf("global_status_deleted %d", first),
	}; !slices.Equal(got, want) {
		t.Errorf("before the status posted after the unwatch, the keeper got %q, want %q", got, want)
	}
	if got := globalFrames(upToPing(ws)); len(got) != 0 {
		t.Errorf("after its unwatch the stream got %q, want nothing", got)
	}
	ks.close()
	testio.Eventually(t, 10*time.Second, func() string {
		if n := globalSubscribers(t, two); n != 0 {
			return fmt.Sprintf("after the last watcher left, the global channel has %d subscribers, want 0", n)
		}
		return ""
	})
}

// upTo returns the frames s is sent before the frame of type typ about
// status id.
func (s *stream) upTo(typ string, id int64) []frame {
	s.tb.Helper()
	var got []frame
	for {
		f := s.next(10 * time.Second)
		if f.Type == typ && (f.ID == id || f.Status != nil && f.Status.ID == id) {
			return got
		}
		got = append(got, f)
	}
}

// globalSubscribers is how many pub/sub connections Redis holds subscribed
// to the global channel: on a cluster, sharded subscriptions on every
// master.
func globalSubscribers(tb testing.TB, in *instance) int64 {
	tb.Helper()
	channel := in.social.GlobalChannel()
	cc, ok := in.rdb.(*redis.ClusterClient)
	if !ok {
		n, err := in.rdb.PubSubNumSub(tb.Context(), channel).Result()
		if err != nil {
			tb.Fatal(err)
		}
		return n[channel]
	}
	var total atomic.Int64
	err := cc.ForEachMaster(tb.Context(), func(ctx context.Context, m *redis.Client) error {
		n, err := m.PubSubShardNumSub(ctx, channel).Result()
		total.Add(n[channel])
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return total.Load()
}
