package social

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/slots"

	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/bcrypt"
)

// newClusterService returns a Service on the shared test cluster.
func newClusterService(tb testing.TB, opts Options) (*Service, *redis.ClusterClient) {
	tb.Helper()
	rdb, prefix := redistest.ClusterClient(tb)
	opts.Prefix = prefix
	opts.BcryptCost = 4
	return New(rdb, opts), rdb
}

// seedUser writes a user and its login as sign-up would (sign-up does not
// run on a cluster yet), and a session, returning its token.
func seedUser(tb testing.TB, s *Service, rdb redis.UniversalClient, uid int64, login, password string) string {
	tb.Helper()
	ctx := ctxT(tb)
	hash, err := bcrypt.GenerateFromPassword([]byte(password), 4)
	if err != nil {
		tb.Fatal(err)
	}
	k := s.keys
	if err := rdb.HSet(ctx, k.user(uid), "id", uid, "login", login, "name", "Name of "+login,
		"password", hash, "followers", 0, "following", 0, "posts", 0, "signup", 1).Err(); err != nil {
		tb.Fatal(err)
	}
	if err := rdb.HSet(ctx, k.loginIndex(), login, uid).Err(); err != nil {
		tb.Fatal(err)
	}
	token, tokenHash := newToken()
	if err := rdb.Set(ctx, k.session(tokenHash), uid, time.Hour).Err(); err != nil {
		tb.Fatal(err)
	}
	return token
}

// On a cluster a user's keys share the uid's slot (its channels too:
// bus's TestChannelsInTheUsersSlot), the job
// keys theirs, and the names on one Redis stay as they were.
func TestClusterKeyLayout(t *testing.T) {
	single := keys{prefix: "chorus:"}
	if got := single.home(42); got != "chorus:home:42" {
		t.Errorf("home on one Redis = %q, want the old name", got)
	}
	if got := single.jobs(); got != "chorus:fanout:jobs" {
		t.Errorf("jobs on one Redis = %q, want the old name", got)
	}
	k := keys{prefix: "chorus:", cluster: true}
	slot := slots.Of(k.user(42))
	for _, key := range []string{k.home(42), k.profile(42), k.followers(42), k.following(42),
		k.friends(42), k.pulls(42), k.listsOut(42), k.listsIn(42), k.signInFailures(42, "10.0.0.1")} {
		if slots.Of(key) != slot {
			t.Errorf("%s is not in user 42's slot", key)
		}
	}
	if slots.Of(k.home(43)) == slot && slots.Of(k.home(44)) == slot {
		t.Error("users 42, 43 and 44 share a slot: the tags do not spread users")
	}
	if slots.Of(k.jobs()) != slots.Of(k.job(postJobID(7))) {
		t.Error("the job stream and a job hash are in different slots")
	}
	if slots.Of(k.list(7)) != slots.Of(k.listMembers(7)) || slots.Of(k.list(7)) != slots.Of(k.listStatuses(7)) {
		t.Error("a list's keys are in different slots")
	}
}

// Signing in, Authenticate (a returning user's rebuild queued) and home
// reads merging pulled authors' timelines from other shards run on a
// cluster.
func TestClusterSignInAuthenticateAndRead(t *testing.T) {
	t.Parallel()
	s, rdb := newClusterService(t, Options{SignInFailures: 2})
	ctx := ctxT(t)
	k := s.keys
	const reader, pushed, pulled = 1001, 1002, 1003
	token := seedUser(t, s, rdb, reader, "reader", "password-reader")

	// Sign-in: a wrong password counts against (user, address), a right one
	// opens a session that authenticates.
	if _, _, err := s.SignIn(ctx, "reader", "wrong-password", "10.0.0.1"); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("sign-in with a wrong password: %v", err)
	}
	if n, _ := rdb.Get(ctx, k.signInFailures(reader, "10.0.0.1")).Int(); n != 1 {
		t.Errorf("attempts counted = %d, want 1", n)
	}
	u, fresh, err := s.SignIn(ctx, "READER", "password-reader", "10.0.0.1")
	if err != nil || u.ID != reader {
		t.Fatalf("sign-in = %+v, %v", u, err)
	}
	if uid, err := s.Authenticate(ctx, fresh); err != nil || uid != reader {
		t.Fatalf("authenticate the new session = %d, %v", uid, err)
	}
	if _, _, err := s.SignIn(ctx, "nobody", "password-nobody", ""); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("sign-in of an unknown login: %v", err)
	}

	// A user back after InactiveAfter away is noted active again, and the
	// script that queues their rebuild runs in the jobs' slot, once.
	rdb.ZAdd(ctx, k.seen(), redisZ(float64(time.Now().Add(-30*24*time.Hour).UnixMilli()), itoa(reader)))
	s2 := New(rdb, s.opts) // an instance that has not noted the reader lately
	if uid, err := s2.Authenticate(ctx, token); err != nil || uid != reader {
		t.Fatalf("authenticate = %d, %v", uid, err)
	}
	for i, want := range []int{1, 0} {
		q, err := queueJobScript.Run(ctx, rdb, []string{k.jobs(), k.job(refillJobID(4242)), k.making()},
			"1", "kind", "refill", "uid", 4242, "cursor", 0, "floor", "+inf").Int()
		if err != nil || q != want {
			t.Fatalf("queue rebuild, call %d = %d, %v; want %d", i+1, q, err, want)
		}
	}
	if last, _ := rdb.ZScore(ctx, k.seen(), itoa(reader)).Result(); time.Since(time.UnixMilli(int64(last))) > time.Minute {
		t.Errorf("activity not noted: last seen %v", time.UnixMilli(int64(last)))
	}

	// The home read merges a pulled author's profile timeline, in its own
	// slot, with the stored timeline.
	if slots.Of(k.home(reader)) == slots.Of(k.profile(pulled)) {
		t.Fatal("the test wants the reader and the pulled author in different slots")
	}
	for id, author := range map[int64]int64{1: pushed, 2: pulled, 3: pushed, 4: pulled, 5: pulled} {
		rdb.HSet(ctx, k.status(id), "id", id, "uid", author, "login", "a", "name", "A", "message", "m", "posted", 1)
		rdb.ZAdd(ctx, k.profile(author), redisZ(float64(id), itoa(id)))
		if author == pushed || id == 2 { // 2 was pushed before its author was pulled
			rdb.ZAdd(ctx, k.home(reader), redisZ(float64(id), itoa(id)))
		}
	}
	rdb.ZAdd(ctx, k.pulls(reader), redisZ(1, itoa(pulled)))
	var got []int64
	for c := (Cursor{Limit: 2}); ; {
		page, err := s.HomeTimeline(ctx, reader, c)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range page.Statuses {
			got = append(got, st.ID)
		}
		if page.NextBefore == nil {
			break
		}
		c.Before = *page.NextBefore
	}
	if want := []int64{5, 4, 3, 2, 1}; !slices.Equal(got, want) {
		t.Errorf("home pages = %v, want %v", got, want)
	}
}

// On a cluster, the stream openings of a batch count each user's unread
// notifications in the user's own slot: one script call per user, each its
// own count, all in one round trip; the next batch reads them as kept.
// Whom each may not see is read in the user's slot too: the one who blocks
// and the one blocked each hide the other.
func TestClusterStreamOpenings(t *testing.T) {
	t.Parallel()
	s, rdb := newClusterService(t, Options{})
	ctx := ctxT(t)
	k := s.keys
	users := []int64{2001, 2002, 2003}
	var keys []StreamKey
	for i, uid := range users {
		token := seedUser(t, s, rdb, uid, fmt.Sprintf("opener%d", i), "password-opener")
		// i+1 notifications, the first read: i unread.
		for id := int64(1); id <= int64(i+1); id++ {
			if err := rdb.ZAdd(ctx, k.notes(uid), redisZ(float64(id), itoa(id))).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := rdb.Set(ctx, k.notesRead(uid), 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, StreamKey{UID: uid, Session: SessionID(token)})
	}
	if err := s.Block(ctx, users[1], "opener2"); err != nil {
		t.Fatal(err)
	}
	hidden := [][]int64{nil, {users[2]}, {users[1]}}
	for range 2 { // counted, then as kept
		os, err := s.StreamOpenings(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range os {
			if o.Owner != users[i] || o.User.ID != users[i] || o.Unread != int64(i) || !slices.Equal(o.Hidden, hidden[i]) {
				t.Errorf("opening of %d: owner %d, user %d, %d unread, %v hidden; want its own, %d unread, %v hidden",
					users[i], o.Owner, o.User.ID, o.Unread, o.Hidden, i, hidden[i])
			}
		}
	}
}
