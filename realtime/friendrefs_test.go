package realtime

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"chorus/internal/testio"
	"chorus/presence"
	"chorus/social"
)

// refFeed answers Users as memFeed does, but for user 404 (gone), holding
// its first call until released, and keeps the ids of every call.
type refFeed struct {
	memFeed
	release chan struct{}
	mu      sync.Mutex
	calls   [][]int64
}

func (f *refFeed) Users(ctx context.Context, ids []int64) ([]social.User, error) {
	f.mu.Lock()
	f.calls = append(f.calls, slices.Clone(ids))
	first := len(f.calls) == 1
	f.mu.Unlock()
	if first {
		<-f.release
	}
	var out []social.User
	for _, id := range ids {
		if id != 404 {
			u, _ := f.UserByID(ctx, id)
			out = append(out, u)
		}
	}
	return out, nil
}

// The friends' references that streams opening together miss are read
// together, each user once, not once per stream, and are kept; a user gone
// is left out, and not kept.
func TestFriendRefsReadOnceForStreamsOpeningTogether(t *testing.T) {
	f := &refFeed{release: make(chan struct{})}
	h := &Hub{feed: f}
	h.refReads.Do = h.readRefs
	friends := []presence.FriendSeen{{UID: 7, LastSeen: time.UnixMilli(3)}, {UID: 404}, {UID: 8, LastSeen: time.UnixMilli(2)}}
	first := make(chan error, 1)
	go func() { _, err := h.onlineFriends(friends[:1]); first <- err }()
	testio.Eventually(t, 30*time.Second, func() string {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.calls) != 1 {
			return "the first read not under way"
		}
		return ""
	})
	const streams = 20
	var wg sync.WaitGroup
	got := make([][]int64, streams)
	for i := range streams {
		wg.Go(func() {
			refs, err := h.onlineFriends(friends)
			if err != nil {
				t.Error(err)
			}
			for _, r := range refs {
				got[i] = append(got[i], r.User.ID)
			}
		})
	}
	testio.Eventually(t, 30*time.Second, func() string {
		if n := h.refReads.Waiting(); n != 3*streams {
			return fmt.Sprintf("%d friends asked meanwhile, want %d", n, 3*streams)
		}
		return ""
	})
	close(f.release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for i, ids := range got {
		if !slices.Equal(ids, []int64{7, 8}) {
			t.Errorf("stream %d's friends %v; want [7 8], 404 left out", i, ids)
		}
	}
	h.friendRefs.mu.Lock()
	for _, id := range []int64{7, 8} {
		if _, ok := h.friendRefs.refs[id]; !ok {
			t.Errorf("user %d read but not kept", id)
		}
	}
	for _, id := range []int64{404, 0} {
		if _, ok := h.friendRefs.refs[id]; ok {
			t.Errorf("user %d kept: a user gone is not kept", id)
		}
	}
	h.friendRefs.mu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) != 2 {
		t.Fatalf("Users calls %v; want the first stream's, then one for the others", f.calls)
	}
	if c := slices.Sorted(slices.Values(f.calls[1])); !slices.Equal(c, []int64{7, 8, 404}) {
		t.Errorf("the streams' call read %v; want 7, 8 and 404, each once", c)
	}
}
