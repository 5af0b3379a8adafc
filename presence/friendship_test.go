package presence

import (
	"slices"
	"testing"
	"time"

	"chorus/protocol"
)

// A friendship made tells each new friend the other's presence, through
// their channels: the connected one as online, the other as offline, its
// last_seen null when never seen.
func TestAnnounceFriendship(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		tr := e.tracker(t, Options{})
		const on, off = 11, 12
		onHears, offHears := e.subscribe(t, on), e.subscribe(t, off)
		mustConnect(t, tr, on, "a") // no friends yet: nobody is told
		e.befriend(t, on, off)
		if err := tr.AnnounceFriendship(ctxT(t), on, off); err != nil {
			t.Fatal(err)
		}
		checkEvent(t, nextEvent(t, offHears, 5*time.Second), on, true)
		ev := nextEvent(t, onHears, 5*time.Second)
		want := protocol.UserRef{ID: off, Login: "user12", Name: "User 12"}
		if ev.Type != protocol.TypePresence || ev.User != want || ev.Online || ev.LastSeen != nil {
			t.Fatalf("event %+v, want presence of %+v offline, never seen", ev, want)
		}
		noEvent(t, onHears, 100*time.Millisecond)
		noEvent(t, offHears, 100*time.Millisecond)
	})
}

// Forget leaves nothing of a user in presence: not among the connected,
// last seen or the online copy, no registry, no place in its instance's set
// of connections, and in no per-minute active set; another user's stay.
func TestForgetLeavesNothing(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, e env) {
		tr := e.tracker(t, Options{})
		ctx := ctxT(t)
		k := e.keys()
		const gone, stays = 21, 22
		mustConnect(t, tr, gone, "a")
		mustConnect(t, tr, gone, "b")
		mustConnect(t, tr, stays, "c")
		minute := e.now(t).Unix() / 60
		if err := e.rdb.ZAdd(ctx, k.lastSeen(), redisZ(e.now(t), gone), redisZ(e.now(t), stays)).Err(); err != nil {
			t.Fatal(err)
		}
		if err := tr.Forget(ctx, gone); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{k.connected(), k.lastSeen()} {
			if _, err := e.rdb.ZScore(ctx, key, itoa(gone)).Result(); err == nil {
				t.Errorf("%s still holds the user forgotten", key)
			}
			if _, err := e.rdb.ZScore(ctx, key, itoa(stays)).Result(); err != nil {
				t.Errorf("%s lost the other user: %v", key, err)
			}
		}
		if n := e.rdb.Exists(ctx, k.conns(gone)).Val(); n != 0 {
			t.Error("the forgotten user's registry is left")
		}
		members := e.rdb.SMembers(ctx, k.instanceConns(tr.id)).Val()
		if !slices.Equal(members, []string{itoa(stays) + ":c"}) {
			t.Errorf("the instance's connections %v, want the other user's alone", members)
		}
		for m := minute - 1; m <= minute+1; m++ {
			if e.rdb.SIsMember(ctx, k.activeUsers(m), itoa(gone)).Val() {
				t.Errorf("the active set of minute %d holds the user forgotten", m)
			}
		}
		// (Of the minute before, when it turned since the connect.)
		if !e.rdb.SIsMember(ctx, k.activeUsers(minute), itoa(stays)).Val() && !e.rdb.SIsMember(ctx, k.activeUsers(minute-1), itoa(stays)).Val() {
			t.Errorf("the active sets of minutes %d and %d lost the other user", minute-1, minute)
		}
	})
}
