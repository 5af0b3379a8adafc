package social

import (
	"testing"

	"chorus/protocol"
)

// unpush tells a connected follower a status is gone only where it took it
// out of their home: a home the deletion's walk emptied first was told by
// the walk, not told twice; one the push did not add to is left alone. A
// reply's frame names what it answered, as its deletion's does.
func TestUnpushTellsOnlyWhereItRemoved(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	k := s.keys
	ann, bob, cat, dan := signUp(t, s, "ann"), signUp(t, s, "bob"), signUp(t, s, "cat"), signUp(t, s, "dan")
	const sid = 4242
	for _, u := range []User{bob, cat, dan} {
		if err := rdb.ZAdd(ctx, k.home(u.ID), redisZ(sid, itoa(sid))).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// The deletion's walk reached cat's home first.
	if err := rdb.ZRem(ctx, k.home(cat.ID), itoa(sid)).Err(); err != nil {
		t.Fatal(err)
	}
	l := listen(t, s, rdb, s.bus.UserChannel(bob.ID), s.bus.UserChannel(cat.ID), s.bus.UserChannel(dan.ID))
	uids := []int64{bob.ID, cat.ID, dan.ID, ann.ID}
	added := []int64{pushAdded, pushAdded, pushAdded - 1, pushAdded} // dan's not added by this push
	connected := []bool{true, true, true, false}
	reply := Status{ID: sid, ReplyTo: &protocol.StatusRef{ID: 4241, UID: ann.ID, Login: "ann"}}
	if err := s.unpush(ctx, reply, uids, added, connected); err != nil {
		t.Fatal(err)
	}
	got := eventsSoFar(t, l)
	if evs := got[s.bus.UserChannel(bob.ID)]; len(evs) != 1 || evs[0].Type != "status_deleted" || evs[0].ID != sid || evs[0].ReplyTo != 4241 {
		t.Errorf("bob's frames %+v; want one status_deleted of %d, reply_to 4241", evs, sid)
	}
	if evs := got[s.bus.UserChannel(cat.ID)]; len(evs) != 0 {
		t.Errorf("cat's frames %+v; want none: the walk took it out and told her", evs)
	}
	if evs := got[s.bus.UserChannel(dan.ID)]; len(evs) != 0 {
		t.Errorf("dan's frames %+v; want none: the push did not add it", evs)
	}
	if err := rdb.ZScore(ctx, k.home(bob.ID), itoa(sid)).Err(); err == nil {
		t.Error("still in bob's home")
	}
	if err := rdb.ZScore(ctx, k.home(dan.ID), itoa(sid)).Err(); err != nil {
		t.Errorf("taken out of dan's home, where this push did not add it: %v", err)
	}
}
