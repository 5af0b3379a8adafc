package social

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Matching folds case by Unicode's full case folding after NFKC, and takes
// accents off: not lower-casing rune by rune.
func TestSearchFoldsUnicode(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	signUpNamed(t, s, "sisyphus", "Σίσυφος")
	signUpNamed(t, s, "street", "Straße")
	signUpNamed(t, s, "ligature", "ﬁnn Ｗｉｄｅ")
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"ΣΊΣΥΦΟΣ", []string{"sisyphus"}}, // capital sigma and a tonos
		{"σισυφος", []string{"sisyphus"}},
		{"Σίσυφος", []string{"sisyphus"}},
		{"ΣΙΣΥ", []string{"sisyphus"}},
		{"STRASSE", []string{"street"}}, // ß folds to ss
		{"strasse", []string{"street"}},
		{"STRAẞE", []string{"street"}}, // capital sharp s
		{"Straße", []string{"street"}},
		{"ＳＴＲＡＳＳＥ", []string{"street"}}, // full width
		{"finn", []string{"ligature"}},
		{"wide", []string{"ligature"}},
	} {
		got, err := s.SearchUsers(ctx, 0, tc.q, 10)
		if err != nil {
			t.Fatalf("search %q: %v", tc.q, err)
		}
		if !slices.Equal(logins(got), tc.want) {
			t.Errorf("search %q = %v, want %v", tc.q, logins(got), tc.want)
		}
	}
}

// Accounts whose names are made to fill the start of the index cannot push
// a real user off the page: each is listed once, and a user with followers,
// or one the searcher follows, ranks before them.
func TestSearchCraftedNamesCannotPushOffARealUser(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	real := signUpNamed(t, s, "ada_l", "Ada Lovelace")
	fans := []User{signUp(t, s, "fan_one"), signUp(t, s, "fan_two")}
	for _, f := range fans {
		if _, _, err := s.Follow(ctx, f.ID, "ada_l"); err != nil {
			t.Fatal(err)
		}
	}
	// Each crafted name has nine index entries that start with "ada" and
	// come before "ada lovelace".
	var sybils []User
	for i := range 8 {
		sybils = append(sybils, signUpNamed(t, s, fmt.Sprintf("sybil%d", i), "Ada Ada Ada Ada Ada Ada Ada Ada Ada"))
	}

	const page = 5
	got, err := s.SearchUsers(ctx, 0, "ada", page)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != page || got[0].ID != real.ID {
		t.Fatalf("a visitor's search = %v, want ada_l first of %d", logins(got), page)
	}
	// Every user once, however many of their entries match.
	all, err := s.SearchUsers(ctx, 0, "ada", MaxSearchLimit)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[int64]bool{}
	for _, u := range all {
		if ids[u.ID] {
			t.Fatalf("search lists %s twice: %v", u.Login, logins(all))
		}
		ids[u.ID] = true
	}
	if len(all) != 1+len(sybils) {
		t.Fatalf("search = %v, want ada_l and the %d others once each", logins(all), len(sybils))
	}

	// Sybils that follow one another outnumber the real user's followers;
	// someone who follows the real user still finds them first.
	for _, a := range sybils {
		for _, b := range sybils {
			if a.ID != b.ID {
				if _, _, err := s.Follow(ctx, a.ID, b.Login); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	got, err = s.SearchUsers(ctx, fans[0].ID, "ada", page)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != page || got[0].ID != real.ID {
		t.Fatalf("a follower's search = %v, want ada_l first", logins(got))
	}
	// The exact login comes before everything.
	got, err = s.SearchUsers(ctx, 0, "sybil3", page)
	if err != nil || len(got) != 1 || got[0].Login != "sybil3" {
		t.Fatalf("search sybil3 = %v (%v)", logins(got), err)
	}
}

// An index written before terms were folded (lower-cased rune by rune) is
// rewritten by the next build: users whose names folding changes are found
// again, and none of their old entries is left.
func TestBuildIndexesFoldsAnOldIndex(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	users := []User{signUpNamed(t, s, "sisyphus", "Σίσυφος"), signUpNamed(t, s, "street", "Straße"), signUpNamed(t, s, "plain", "Plain Name")}
	// As an index from before: lower-cased entries, built.
	k := s.keys
	for _, key := range []string{k.searchIndex(), k.searchIndexBuilt()} {
		if err := rdb.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range users {
		for _, e := range lowerSearchEntries(u.ID, u.Login, u.Name) {
			rdb.ZAdd(ctx, k.searchIndex(), redisZ(0, e))
		}
	}
	rdb.Set(ctx, k.searchIndexLowerBuilt(), "done", 0)
	if got, _ := s.SearchUsers(ctx, 0, "STRASSE", 10); len(got) != 0 {
		t.Fatalf("the old index found %v", logins(got))
	}
	if got, _ := s.SearchUsers(ctx, 0, "plain", 10); len(got) != 1 {
		t.Fatalf("the old index did not find an unaccented name: %v", logins(got))
	}
	if err := s.BuildIndexes(ctx, log); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{"STRASSE": "street", "ΣΊΣΥΦΟΣ": "sisyphus", "plain": "plain"} {
		if got, _ := s.SearchUsers(ctx, 0, q, 10); len(got) != 1 || got[0].Login != want {
			t.Errorf("search %q after the build = %v, want %s", q, logins(got), want)
		}
	}
	var want []string
	for _, u := range users {
		want = append(want, searchEntries(u.ID, u.Login, u.Name)...)
	}
	slices.Sort(want)
	got, err := rdb.ZRange(ctx, k.searchIndex(), 0, -1).Result()
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("index after the build = %q (%v), want %q", got, err, want)
	}
	if n := rdb.Exists(ctx, k.searchIndexLowerBuilt()).Val(); n != 0 {
		t.Error("the old index's mark outlived the build")
	}
}

// commandCounter counts the commands a client sends, pipelined or not, and
// the round trips they take; not the handshake of a connection the pool
// opens meanwhile (HELLO, CLIENT SETINFO), which depends on the pool, not
// on the work.
type commandCounter struct {
	commands, roundTrips atomic.Int64
}

func (h *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !isHandshake(cmd) {
			h.commands.Add(1)
			h.roundTrips.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		n := 0
		for _, c := range cmds {
			if !isHandshake(c) {
				n++
			}
		}
		if n > 0 {
			h.commands.Add(int64(n))
			h.roundTrips.Add(1)
		}
		return next(ctx, cmds)
	}
}

// isHandshake reports whether cmd is part of a new connection's handshake.
func isHandshake(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "client", "auth", "select":
		return true
	}
	return false
}

// A search's Redis work does not grow with the users that match: however
// many entries share the prefix, it reads at most searchWindow of them, in
// three round trips of at most 8 + limit commands (two of them ask
// whether the viewer blocks the candidates or is blocked, one which of them
// are suspended, one which wait for approval), and, where users it read were not there
// (here none is), searchRefills round trips more of limit commands.
func TestSearchWorkIsBounded(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	// 5,000 matching entries of users that need no hash to be ranked.
	members := make([]redis.Z, 5000)
	for i := range members {
		members[i] = redis.Z{Member: fmt.Sprintf("crowd %05d\x00%d", i, 100000+i)}
	}
	if err := rdb.ZAdd(ctx, s.keys.searchIndex(), members...).Err(); err != nil {
		t.Fatal(err)
	}
	viewer := signUp(t, s, "viewer")
	counter := &commandCounter{}
	rdb.AddHook(counter)
	const limit = 10
	if _, err := s.SearchUsers(ctx, viewer.ID, "crowd", limit); err != nil {
		t.Fatal(err)
	}
	if n := counter.roundTrips.Load(); n > 3+searchRefills {
		t.Errorf("%d round trips, want at most %d", n, 3+searchRefills)
	}
	if n, most := counter.commands.Load(), 8+limit*(1+searchRefills); n > int64(most) {
		t.Errorf("%d commands, want at most %d", n, most)
	}
}

// A rename whose index write comes after the account's deletion ran to its
// end (which took the account's entries out) leaves no entry of it behind.
func TestRenameRacingDeletionLeavesNoEntries(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	leaver := signUpLeaver(t, s, "leaver")
	hook := &beforeOnce{
		match: func(c redis.Cmder) bool {
			args := c.Args()
			return c.Name() == "zadd" && len(args) > 1 && args[1] == s.keys.searchIndex()
		},
		do: func() {
			if err := s.DeleteAccount(ctx, leaver.ID, leaverPassword, ""); err != nil {
				t.Error(err)
			}
			runJobIfQueued(t, s, s.keys.job(deleteAccountJobID(leaver.ID)))
		},
	}
	rdb.AddHook(hook)
	name := "Quite Another"
	if _, err := s.EditProfile(ctx, leaver.ID, ProfileEdit{Name: &name}); err != nil && !errors.Is(err, ErrUserNotFound) {
		t.Fatal(err)
	}
	if !hook.fired.Load() {
		t.Fatal("the rename never wrote the index")
	}
	entries, err := rdb.ZRange(ctx, s.keys.searchIndex(), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e, "\x00"+itoa(leaver.ID)) {
			t.Errorf("the deleted account's entry %q is in the index", e)
		}
	}
}
