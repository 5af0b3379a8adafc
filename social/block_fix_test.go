package social

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"chorus/internal/redistest"
	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// hiddenTold counts the hidden_changed frames published on each of uids'
// channels since the last look (eventsSoFar).
func hiddenTold(t *testing.T, s *Service, l *listener, uids ...int64) []int {
	t.Helper()
	events := eventsSoFar(t, l)
	out := make([]int, len(uids))
	for i, uid := range uids {
		out[i] = len(ofType(events[s.UserChannel(uid)], protocol.TypeHiddenChanged))
	}
	return out
}

// A block, an unblock, a mute or an unmute that changes nothing tells no
// stream to read its hidden authors again: any account may send them about
// anyone, and each telling makes every stream of both read up to 30,000
// members. One that changes something tells them once.
func TestNoOpRelationChangesAnnounceNothing(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ann, bob := signUp(t, s, "ann"), signUp(t, s, "bob")
	l := listen(t, s, rdb, s.UserChannel(ann.ID), s.UserChannel(bob.ID))

	steps := []struct {
		what string
		do   func() error
		want []int // hidden_changed frames to ann, to bob
	}{
		{"unblock, no block", func() error { return s.Unblock(ctx, ann.ID, "bob") }, []int{0, 0}},
		{"unmute, no mute", func() error { return s.Unmute(ctx, ann.ID, "bob") }, []int{0, 0}},
		{"block", func() error { return s.Block(ctx, ann.ID, "bob") }, []int{1, 1}},
		{"block again", func() error { return s.Block(ctx, ann.ID, "bob") }, []int{0, 0}},
		{"unblock", func() error { return s.Unblock(ctx, ann.ID, "bob") }, []int{1, 1}},
		{"unblock again", func() error { return s.Unblock(ctx, ann.ID, "bob") }, []int{0, 0}},
		{"mute", func() error { return s.Mute(ctx, ann.ID, "bob") }, []int{1, 0}},
		{"mute again", func() error { return s.Mute(ctx, ann.ID, "bob") }, []int{0, 0}},
		{"unmute", func() error { return s.Unmute(ctx, ann.ID, "bob") }, []int{1, 0}},
		{"unmute again", func() error { return s.Unmute(ctx, ann.ID, "bob") }, []int{0, 0}},
	}
	for _, st := range steps {
		for range 3 {
			if err := st.do(); err != nil {
				t.Fatalf("%s: %v", st.what, err)
			}
			if got := hiddenTold(t, s, l, ann.ID, bob.ID); !slices.Equal(got, st.want) {
				t.Errorf("%s: hidden_changed to ann, bob: %v, want %v", st.what, got, st.want)
			}
			if st.want[0] != 0 {
				break // a change is made once
			}
		}
	}
}

// A block or mute cut short after its first write tells the streams all
// the same, and its retry tells them of what it changes itself: a block
// whose blocked user's side failed is told as it fails, and again by the
// retry that writes that side; a mute whose answer was lost is told by the
// call that lost it, as its retry changes nothing.
func TestRelationCutShortIsAnnounced(t *testing.T) {
	t.Parallel()
	s, h := failingService(t, Options{}, nil)
	ctx := ctxT(t)
	ann, bob := signUp(t, s, "ann"), signUp(t, s, "bob")
	signUp(t, s, "cat")
	l := listen(t, s, s.rdb, s.UserChannel(ann.ID), s.UserChannel(bob.ID))

	h.set(allOf("zadd", s.keys.blockedBy(bob.ID)))
	h.failing(t, "a block whose blocked side fails", func() error { return s.Block(ctx, ann.ID, "bob") })
	if got := hiddenTold(t, s, l, ann.ID, bob.ID); !slices.Equal(got, []int{1, 1}) {
		t.Errorf("the block cut short: hidden_changed to ann, bob: %v, want [1 1]", got)
	}
	for i, want := range [][]int{{1, 1}, {0, 0}} {
		if err := s.Block(ctx, ann.ID, "bob"); err != nil {
			t.Fatal(err)
		}
		if got := hiddenTold(t, s, l, ann.ID, bob.ID); !slices.Equal(got, want) {
			t.Errorf("retry %d of the block: hidden_changed to ann, bob: %v, want %v", i+1, got, want)
		}
	}
	if err := s.rdb.ZScore(ctx, s.keys.blockedBy(bob.ID), itoa(ann.ID)).Err(); err != nil {
		t.Errorf("bob's side of the block after the retry: %v", err)
	}

	// relation_add.lua loaded, so that the lost answer is of a script run.
	if err := s.Mute(ctx, ann.ID, "cat"); err != nil {
		t.Fatal(err)
	}
	hiddenTold(t, s, l, ann.ID)
	if err := s.Unblock(ctx, ann.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	hiddenTold(t, s, l, ann.ID)
	h.set(naming(s.keys.mutes(ann.ID)))
	h.lost.Store(true)
	h.failing(t, "a mute whose answer is lost", func() error { return s.Mute(ctx, ann.ID, "bob") })
	h.lost.Store(false)
	if err := s.rdb.ZScore(ctx, s.keys.mutes(ann.ID), itoa(bob.ID)).Err(); err != nil {
		t.Fatalf("the mute whose answer was lost: %v, want it written", err)
	}
	if got := hiddenTold(t, s, l, ann.ID); !slices.Equal(got, []int{1}) {
		t.Errorf("the mute whose answer was lost: hidden_changed to ann: %v, want [1]", got)
	}
	if err := s.Mute(ctx, ann.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	if got := hiddenTold(t, s, l, ann.ID); !slices.Equal(got, []int{0}) {
		t.Errorf("the mute's retry: hidden_changed to ann: %v, want [0]", got)
	}
}

// afterOnce runs do once, after the first command or pipeline that has a
// command match takes succeeded, while armed.
type afterOnce struct {
	armed atomic.Bool
	match func(redis.Cmder) bool
	do    func()
	fired atomic.Bool
}

func (h *afterOnce) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *afterOnce) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && h.armed.Load() && h.match(cmd) && h.fired.CompareAndSwap(false, true) {
			h.do()
		}
		return err
	}
}

func (h *afterOnce) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if err == nil && h.armed.Load() && slices.ContainsFunc(cmds, h.match) && h.fired.CompareAndSwap(false, true) {
			h.do()
		}
		return err
	}
}

// A mute whose request is cancelled right after its write still drops the
// muted user's stored notifications (the unread count with them) and tells
// the muter's streams; an unmute cancelled so tells them too.
func TestMuteCancelledAfterItsWriteFinishes(t *testing.T) {
	t.Parallel()
	base, prefix := redistest.Backend(t)
	h := &afterOnce{}
	s := New(redistest.WithHook(t, base, h), Options{Prefix: prefix, BcryptCost: 4})
	ctx := ctxT(t)
	ann, bob := signUp(t, s, "ann"), signUp(t, s, "bob")
	if _, _, err := s.Follow(ctx, bob.ID, "ann"); err != nil {
		t.Fatal(err)
	}
	if got := noteSizes(t, s, ann.ID); got != [3]int64{1, 1, 1} {
		t.Fatalf("ann's notifications after bob's follow: %v, want one", got)
	}
	l := listen(t, s, base, s.UserChannel(ann.ID))

	for _, c := range []struct {
		what string
		do   func(context.Context) error
	}{
		{"mute", func(ctx context.Context) error { return s.Mute(ctx, ann.ID, "bob") }},
		{"unmute", func(ctx context.Context) error { return s.Unmute(ctx, ann.ID, "bob") }},
	} {
		req, cancel := context.WithCancel(ctx)
		h.match, h.do = naming(s.keys.mutes(ann.ID)), cancel
		h.fired.Store(false)
		h.armed.Store(true)
		err := c.do(req)
		h.armed.Store(false)
		cancel()
		if !h.fired.Load() {
			t.Fatalf("%s: the hook did not run", c.what)
		}
		if err != nil {
			t.Fatalf("%s cancelled after its write: %v, want it done", c.what, err)
		}
		if got := hiddenTold(t, s, l, ann.ID); !slices.Equal(got, []int{1}) {
			t.Errorf("%s cancelled after its write: hidden_changed to ann: %v, want [1]", c.what, got)
		}
		if c.what == "mute" {
			if got := noteSizes(t, s, ann.ID); got != [3]int64{} {
				t.Errorf("the mute cancelled after its write: ann's notifications %v, want none (bob's dropped)", got)
			}
		}
	}
}

// A block that an unblock of the same pair overtakes (run whole between
// the block's two sides) leaves no block, and the last relation frame the
// blocker's streams get says so, though the block told last: each frame
// says what the set holds as it is sent. Each comes right after a
// hidden_changed on the same channel, which the instances of every build
// read whom the user hides again on.
func TestRelationFramesTellWhatStands(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	ada, bob := signUp(t, s, "ada"), signUp(t, s, "bob")
	sub := listen(t, s, rdb, s.UserChannel(ada.ID))
	s.betweenBlockSides = func() {
		s.betweenBlockSides = nil
		if err := s.Unblock(ctx, ada.ID, "bob"); err != nil {
			t.Error(err)
		}
	}
	if err := s.Block(ctx, ada.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZScore(ctx, s.keys.blocks(ada.ID), itoa(bob.ID)).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("ada's blocks after the unblock overtook the block: bob's score %v, want none", err)
	}
	var told []string
	for _, p := range payloadsSoFar(t, sub)[s.UserChannel(ada.ID)] {
		var r protocol.Relation
		if err := json.Unmarshal([]byte(p), &r); err != nil {
			t.Fatal(err)
		}
		switch r.Type {
		case protocol.TypeHiddenChanged:
			told = append(told, "hidden")
		case protocol.TypeRelation:
			if r.Kind != protocol.RelationBlock || r.User.ID != bob.ID || r.User.Login != "bob" {
				t.Errorf("relation frame %s, want bob's block", p)
			}
			told = append(told, fmt.Sprintf("on=%v", r.On))
		}
	}
	// The unblock's, then the block's, each after its write.
	if want := []string{"hidden", "on=false", "hidden", "on=false"}; !slices.Equal(told, want) {
		t.Errorf("ada's channel was told %q, want %q", told, want)
	}
}

// A block whose telling fails on the blocked one's channel still tells the
// blocker's streams, which must leave the blocked one's statuses out.
func TestBlockToldToTheBlockerThoughTheOtherSideFails(t *testing.T) {
	t.Parallel()
	var bobChannel atomic.Value
	s, h := failingService(t, Options{}, func(c redis.Cmder) bool {
		ch, _ := bobChannel.Load().(string)
		line := cmdLine(c)
		return ch != "" && strings.Contains(line, "publish "+ch)
	})
	ctx := ctxT(t)
	ann, bob := signUp(t, s, "ann"), signUp(t, s, "bob")
	bobChannel.Store(s.UserChannel(bob.ID))
	l := listen(t, s, s.rdb, s.UserChannel(ann.ID), s.UserChannel(bob.ID))
	h.on.Store(true)
	err := s.Block(ctx, ann.ID, "bob")
	h.on.Store(false)
	if err != nil {
		t.Fatal(err)
	}
	if got := hiddenTold(t, s, l, ann.ID, bob.ID); !slices.Equal(got, []int{1, 0}) {
		t.Errorf("hidden_changed to ann, bob: %v, want [1 0] (bob's refused)", got)
	}
}
