package social

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// On one Redis a push's frames go in one message on the frames channel
// (bus.FramesChannel), naming their users, when they are as many as the
// instances that read that channel or more; fewer go each on its
// follower's channel. On a cluster each goes on its follower's channel.
func TestPushFramesInOneMessage(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	author := signUp(t, s, "author")
	followers := followersOf(t, s, "author", 3) // every follower counts as connected here
	frames := s.bus.FramesChannel()
	var channels []string
	for _, f := range followers {
		channels = append(channels, s.bus.UserChannel(f.ID))
	}
	if s.keys.cluster {
		if frames != "" {
			t.Fatalf("a frames channel on a cluster: %q", frames)
		}
		l := listen(t, s, rdb, channels...)
		st := post(t, s, author.ID, "to each")
		got := eventsUntil(t, l, 10*time.Second, func(evs map[string][]event) bool { return len(evs) == len(channels) })
		for _, ch := range channels {
			if ids := eventIDs(got[ch]); !slices.Equal(ids, []int64{st.ID}) {
				t.Errorf("%s got %v, want %d", ch, ids, st.ID)
			}
		}
		return
	}

	l := listen(t, s, rdb, append([]string{frames}, channels...)...)
	var want []string
	for _, f := range followers {
		want = append(want, itoa(f.ID))
	}
	// sent posts by s and says whether its frames went in one message.
	sent := func(s *Service, message string) bool {
		t.Helper()
		st := post(t, s, author.ID, message)
		got := payloadsSoFar(t, l)
		if msgs := got[frames]; len(msgs) > 0 {
			uids, frame, ok := strings.Cut(msgs[0], "\n")
			if len(got) != 1 || len(msgs) != 1 || !ok || uids != strings.Join(want, " ") ||
				!strings.Contains(frame, fmt.Sprintf(`"id":%d,`, st.ID)) {
				t.Fatalf("published %q, want one message naming %q with status %d's frame", got, strings.Join(want, " "), st.ID)
			}
			return true
		}
		if len(got) != len(channels) {
			t.Fatalf("published %q, want one frame on each follower's channel", got)
		}
		for _, ch := range channels {
			if len(got[ch]) != 1 || !strings.Contains(got[ch][0], fmt.Sprintf(`"id":%d,`, st.ID)) {
				t.Fatalf("%s got %q, want status %d's frame", ch, got[ch], st.ID)
			}
		}
		return false
	}
	// One reader of the frames channel (the listener), three frames.
	if !sent(s, "to many") {
		t.Error("three frames and one reader: not in one message")
	}
	// With presence's instances that hold streams, each must be marked as
	// a reader of the channel: "new" is, "old" (of an older build) is not.
	opts := s.opts
	opts.InstancesKey = s.keys.prefix + "instances"
	withInstances := New(rdb, opts)
	marks := s.bus.FramesReadersKey()
	mark := func(key, member string, in time.Duration) {
		t.Helper()
		score := float64(time.Now().Add(in).UnixMilli())
		if err := rdb.ZAdd(ctxT(t), key, redis.Z{Score: score, Member: member}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	reader := func() {
		t.Helper()
		sub := rdb.Subscribe(ctxT(t), frames)
		t.Cleanup(func() { sub.Close() })
		if _, err := sub.Receive(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	mark(opts.InstancesKey, "new", time.Hour)
	mark(opts.InstancesKey, "old", time.Hour)
	mark(marks, "new", time.Hour)
	if sent(withInstances, "an older instance") {
		t.Error("an instance holding streams is not marked as a reader: in one message")
	}
	// A newer instance holding no streams reads the channel too: the
	// readers now match the instances in number, not who they are.
	reader()
	mark(marks, "idle", time.Hour)
	if sent(withInstances, "an idle newer instance") {
		t.Error("an idle reader beside an unmarked instance holding streams: in one message")
	}
	// The older one's lease runs out: it may still hold streams (it
	// stalled) until the sweep takes it out.
	mark(opts.InstancesKey, "old", -time.Minute)
	if sent(withInstances, "a lease ran out") {
		t.Error("an unmarked instance whose lease ran out, not swept yet: in one message")
	}
	if err := rdb.ZRem(ctxT(t), opts.InstancesKey, "old").Err(); err != nil {
		t.Fatal(err)
	}
	if !sent(withInstances, "every instance reads") {
		t.Error("every instance holding streams marked as a reader: not in one message")
	}
	// A mark that ran out is none.
	mark(opts.InstancesKey, "old", time.Hour)
	mark(marks, "old", -time.Minute)
	if sent(withInstances, "a mark ran out") {
		t.Error("an instance holding streams whose mark ran out: in one message")
	}
	mark(marks, "old", time.Hour)
	if !sent(withInstances, "marked again") {
		t.Error("every instance holding streams marked again: not in one message")
	}
	// Presence's set past what one call in a script takes (Lua's unpack
	// stops near 8,000): 9,000 instances more, all marked, then one of
	// them not, past the first thousand.
	many := make([]redis.Z, 9000)
	for i := range many {
		many[i] = redis.Z{Score: float64(time.Now().Add(time.Hour).UnixMilli()), Member: fmt.Sprintf("many%04d", i)}
	}
	for _, key := range []string{opts.InstancesKey, marks} {
		if err := rdb.ZAdd(ctxT(t), key, many...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if !sent(withInstances, "many instances") {
		t.Error("9,000 more instances holding streams, every one marked: not in one message")
	}
	mark(marks, "many8999", -time.Minute)
	if sent(withInstances, "many instances, one not marked") {
		t.Error("9,000 more instances holding streams, the last one's mark run out: in one message")
	}
	if err := rdb.Del(ctxT(t), opts.InstancesKey).Err(); err != nil {
		t.Fatal(err)
	}
	// Four readers, three frames: each on its own.
	reader()
	reader()
	if sent(s, "to each") {
		t.Error("three frames and four readers: in one message")
	}
}
