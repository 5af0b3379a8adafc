package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"chorus/presence"
	"chorus/social"
	"chorus/web"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"
)

// searchLogins returns the logins a user search for q finds, as c.
func (c *client) searchLogins(q string) []string {
	c.tb.Helper()
	var out struct{ Users []userJSON }
	c.must(http.StatusOK, "GET", "/api/v1/users?q="+q, nil, &out)
	var logins []string
	for _, u := range out.Users {
		logins = append(logins, u.Login)
	}
	return logins
}

// A new name and bio are stored, shown and searchable at once, and a new
// name reaches, live, the user's own streams and their friends' connected
// ones on either instance; nobody else's.
func TestEditProfile(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	in1, in2 := e.start(), e.start()
	ada := in1.signUp(t, "ada")
	bob := in2.signUp(t, "bob")
	carl := in2.signUp(t, "carl")
	befriend(ada, bob)
	carl.follow("ada") // a follower, not a friend
	mine := in2.as(ada).connect()
	bobs := bob.connect()
	carls := carl.connect()

	var out struct{ User userJSON }
	ada.must(http.StatusOK, "PATCH", "/api/v1/me", map[string]string{"name": "  Ada Lovelace ", "bio": "Counting engines: https://example.com/notes <b>"}, &out)
	if out.User.Name != "Ada Lovelace" || out.User.Bio != "Counting engines: https://example.com/notes <b>" || out.User.Online == nil {
		t.Fatalf("PATCH /me answered %+v", out.User)
	}
	for name, s := range map[string]*stream{"ada's other tab": mine, "bob, a friend": bobs} {
		f := s.nextOf("profile", 10*time.Second)
		var u struct {
			ID    int64
			Login string
			Name  string
		}
		if err := json.Unmarshal(f.User, &u); err != nil || u.ID != ada.id || u.Login != "ada" || u.Name != "Ada Lovelace" {
			t.Fatalf("%s got profile frame %s, %v", name, f.User, err)
		}
	}
	carls.quiet("profile", 500*time.Millisecond)
	if got := bob.user("ada"); got.Name != "Ada Lovelace" || got.Bio != out.User.Bio {
		t.Fatalf("bob reads ada as %+v", got)
	}
	if got := carl.searchLogins("lovelace"); !slices.Equal(got, []string{"ada"}) {
		t.Fatalf("a search for her new name finds %v", got)
	}

	// A bio alone changes no name: nobody is told. A second rename takes the
	// first name's terms out of the index.
	ada.must(http.StatusOK, "PATCH", "/api/v1/me", map[string]string{"bio": ""}, &out)
	if out.User.Bio != "" || out.User.Name != "Ada Lovelace" {
		t.Fatalf("after clearing the bio: %+v", out.User)
	}
	ada.must(http.StatusOK, "PATCH", "/api/v1/me", map[string]any{"name": "Countess", "bio": nil}, &out)
	if f := bobs.nextOf("profile", 10*time.Second); !strings.Contains(string(f.User), `"Countess"`) {
		t.Fatalf("bob got %s, want the second rename", f.User)
	}
	if got := carl.searchLogins("lovelace"); len(got) != 0 {
		t.Fatalf("a search for her old name finds %v", got)
	}
	if got := carl.searchLogins("countess"); !slices.Equal(got, []string{"ada"}) {
		t.Fatalf("a search for her newest name finds %v", got)
	}
	if got := carl.searchLogins("ada"); !slices.Equal(got, []string{"ada"}) {
		t.Fatalf("a search for her login finds %v", got)
	}

	// Every user carries a bio, "" for none.
	var raw struct{ User map[string]json.RawMessage }
	carl.must(http.StatusOK, "GET", "/api/v1/users/bob", nil, &raw)
	if string(raw.User["bio"]) != `""` {
		t.Fatalf("bob's bio is %s, want \"\"; fields %v", raw.User["bio"], slices.Sorted(maps.Keys(raw.User)))
	}
	// A bio of 300 characters, however many bytes, is one.
	long := strings.Repeat("é", social.MaxBioRunes)
	ada.must(http.StatusOK, "PATCH", "/api/v1/me", map[string]string{"bio": long}, &out)
	if out.User.Bio != long {
		t.Fatalf("a bio of %d characters came back as %q", social.MaxBioRunes, out.User.Bio)
	}
}

// Every bad profile edit is refused in the API's error shape and changes
// nothing.
func TestEditProfileBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{ProfileEditsPerUser: perHour(30)}
	in := e.start()
	ada := in.signUp(t, "ada")
	anon := in.anon(t)
	for _, tc := range []struct {
		name   string
		c      *client
		body   any
		status int
		code   string
	}{
		{"no session", anon, map[string]string{"name": "x"}, 401, "not_signed_in"},
		{"nothing to edit", ada, map[string]string{}, 400, "invalid_profile"},
		{"both null", ada, map[string]any{"name": nil, "bio": nil}, 400, "invalid_profile"},
		{"not JSON", ada, "name=x", 400, "invalid_json"},
		{"not an object", ada, `["x"]`, 400, "invalid_json"},
		{"name a number", ada, map[string]any{"name": 7}, 400, "invalid_json"},
		{"empty name", ada, map[string]string{"name": "  "}, 400, "invalid_name"},
		{"long name", ada, map[string]string{"name": strings.Repeat("n", social.MaxNameRunes+1)}, 400, "invalid_name"},
		{"name with a control", ada, map[string]string{"name": "a\u0007b"}, 400, "invalid_name"},
		{"name with an override", ada, map[string]string{"name": "a\u202eb"}, 400, "invalid_name"},
		{"long bio", ada, map[string]string{"bio": strings.Repeat("b", social.MaxBioRunes+1)}, 400, "invalid_bio"},
		{"bio with a line break", ada, map[string]string{"bio": "one\ntwo"}, 400, "invalid_bio"},
		{"bio with a zero-width space", ada, map[string]string{"bio": "a\u200bb"}, 400, "invalid_bio"},
		{"good name, bad bio", ada, map[string]string{"name": "Fine", "bio": "\u0000"}, 400, "invalid_bio"},
		{"too large", ada, `{"bio": "` + strings.Repeat("x", 70<<10) + `"}`, 413, "too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.c.do("PATCH", "/api/v1/me", tc.body)
			if res.Status != tc.status || res.errorCode(t) != tc.code {
				t.Fatalf("got %d %s, want %d %s", res.Status, res.Body, tc.status, tc.code)
			}
		})
	}
	if got := ada.user("ada"); got.Name != "Name ada" || got.Bio != "" {
		t.Fatalf("after bad edits ada is %+v", got)
	}
}

// Profile edits are rate-limited per user.
func TestEditProfileLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{ProfileEditsPerUser: perHour(2)}
	in := e.start()
	ada := in.signUp(t, "ada")
	bob := in.signUp(t, "bob")
	for range 2 {
		ada.must(http.StatusOK, "PATCH", "/api/v1/me", map[string]string{"bio": "again"}, nil)
	}
	refused(t, "a third edit within the hour", ada.do("PATCH", "/api/v1/me", map[string]string{"bio": "once more"}))
	bob.must(http.StatusOK, "PATCH", "/api/v1/me", map[string]string{"bio": "mine"}, nil)
	if got := in.metric(t, "chorus_rate_limited_total", `limit="profile"`); got != 1 {
		t.Fatalf("chorus_rate_limited_total{limit=profile} = %v, want 1", got)
	}
}

// signIn opens another session of login (password "password-<login>", as
// signUp makes them) on this instance.
func (in *instance) signIn(tb testing.TB, login string) *client {
	tb.Helper()
	c := in.anon(tb)
	var out struct {
		User  userJSON `json:"user"`
		Token string   `json:"token"`
	}
	c.must(http.StatusOK, "POST", "/api/v1/sessions", map[string]string{"login": login, "password": "password-" + login}, &out)
	c.token, c.login, c.id = out.Token, out.User.Login, out.User.ID
	return c
}

// closeReason waits for the server to close s and returns the code and
// reason it gave.
func (s *stream) closeReason(within time.Duration) (websocket.StatusCode, string) {
	s.tb.Helper()
	code := s.closedWith(within)
	var ce websocket.CloseError
	if !errors.As(s.closeErr, &ce) {
		return code, ""
	}
	return code, ce.Reason
}

// A new password ends every other session of the user at once, their
// streams on either instance closed with 1008 "session ended"; the session
// that asked, and its stream, stay.
func TestChangePasswordAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	in1, in2 := e.start(), e.start()
	ada := in1.signUp(t, "ada")
	onTwo := in2.signIn(t, "ada")
	onOne := in1.signIn(t, "ada")
	bob := in2.signUp(t, "bob")
	mine := ada.connect()
	others := []*stream{onTwo.connect(), onOne.connect()}
	bobs := bob.connect()

	ada.must(http.StatusNoContent, "PUT", "/api/v1/me/password", map[string]string{"current": "password-ada", "new": "violin-case-77"}, nil)
	for i, s := range others {
		if code, reason := s.closeReason(10 * time.Second); code != websocket.StatusPolicyViolation || reason != "session ended" {
			t.Fatalf("other session %d's stream closed %d %q, want 1008 \"session ended\"", i, code, reason)
		}
	}
	for _, c := range []*client{onTwo, onOne} {
		if res := c.do("GET", "/api/v1/me", nil); res.Status != http.StatusUnauthorized {
			t.Fatalf("an ended session reads /me: %d", res.Status)
		}
	}
	ada.must(http.StatusOK, "GET", "/api/v1/me", nil, nil)
	mine.send(map[string]string{"type": "heartbeat"})
	bob.post("still here")
	if f := bobs.nextOf("status", 10*time.Second); f.Status == nil || f.Status.Message != "still here" {
		t.Fatalf("bob's stream got %+v", f)
	}
	select {
	case <-mine.done:
		t.Fatalf("the asking session's stream closed: %v", mine.closeErr)
	default:
	}
	if res := in2.anon(t).do("POST", "/api/v1/sessions", map[string]string{"login": "ada", "password": "password-ada"}); res.Status != http.StatusUnauthorized {
		t.Fatalf("the old password signs in: %d", res.Status)
	}
	in2.anon(t).must(http.StatusOK, "POST", "/api/v1/sessions", map[string]string{"login": "ada", "password": "violin-case-77"}, nil)
}

// Every bad password change is refused in the API's error shape and changes
// nothing; wrong current passwords count as failed sign-ins.
func TestChangePasswordBadInput(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{SignInFailures: 3}).start()
	ada := in.signUp(t, "ada")
	other := in.signIn(t, "ada")
	anon := in.anon(t)
	good := "violin-case-77"
	for _, tc := range []struct {
		name   string
		c      *client
		body   any
		status int
		code   string
	}{
		{"no session", anon, map[string]string{"current": "password-ada", "new": good}, 401, "not_signed_in"},
		{"not JSON", ada, "current=x", 400, "invalid_json"},
		{"new a number", ada, map[string]any{"current": "password-ada", "new": 12345678}, 400, "invalid_json"},
		{"no new", ada, map[string]string{"current": "password-ada"}, 400, "invalid_password"},
		{"new too short", ada, map[string]string{"current": "password-ada", "new": "short"}, 400, "invalid_password"},
		{"new too long", ada, map[string]string{"current": "password-ada", "new": strings.Repeat("x", social.MaxPasswordBytes+1)}, 400, "invalid_password"},
		{"new common", ada, map[string]string{"current": "password-ada", "new": "password123"}, 400, "invalid_password"},
		{"too large", ada, `{"current": "` + strings.Repeat("x", 70<<10) + `"}`, 413, "too_large"},
		{"no current", ada, map[string]string{"new": good}, 401, "invalid_credentials"},
		{"wrong current", ada, map[string]string{"current": "password-bob", "new": good}, 401, "invalid_credentials"},
		{"wrong current again", ada, map[string]string{"current": "password-ada!", "new": good}, 401, "invalid_credentials"},
		{"past the failures", ada, map[string]string{"current": "password-ada", "new": good}, 429, "rate_limited"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.c.do("PUT", "/api/v1/me/password", tc.body)
			if res.Status != tc.status || res.errorCode(t) != tc.code {
				t.Fatalf("got %d %s, want %d %s", res.Status, res.Body, tc.status, tc.code)
			}
		})
	}
	// Nothing changed: both sessions live. The wrong current passwords were
	// failed sign-ins from this address: a sign-in from it is refused too.
	ada.must(http.StatusOK, "GET", "/api/v1/me", nil, nil)
	other.must(http.StatusOK, "GET", "/api/v1/me", nil, nil)
	refused(t, "a sign-in after three wrong current passwords",
		in.anon(t).do("POST", "/api/v1/sessions", map[string]string{"login": "ada", "password": "password-ada"}))
}

// exportJSON is an export as GET /me/export writes it.
type exportJSON struct {
	Exported  time.Time
	Profile   map[string]json.RawMessage
	Statuses  []statusJSON
	Following []exportedUser
	Followers []exportedUser
	Blocks    []exportedUser
	Mutes     []exportedUser
	Lists     []struct {
		ID         int64
		Name       string
		Members    int64
		MemberList []struct{ Login string } `json:"member_list"`
	}
	Likes []struct {
		StatusID int64 `json:"status_id"`
		At       time.Time
	}
}

type exportedUser struct {
	ID    int64
	Login string
	Name  string
	Since *time.Time
}

func exportedLogins(us []exportedUser) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.Login
	}
	return out
}

// An export is one JSON download holding every field of the account: the
// profile, every status (past the page the export reads at once), the
// follows both ways, the lists with their members, blocks, mutes and
// likes. It is limited per user.
func TestExportAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{ExportsPerUser: perHour(2)}
	in := e.start()
	ada := in.signUp(t, "ada")
	bob := in.signUp(t, "bob")
	carl := in.signUp(t, "carl")
	ada.must(http.StatusOK, "PATCH", "/api/v1/me", map[string]string{"bio": "Notes on the engine"}, nil)
	ada.follow("bob")
	ada.follow("carl")
	carl.follow("ada")
	var list struct{ List struct{ ID int64 } }
	ada.must(http.StatusCreated, "POST", "/api/v1/lists", map[string]string{"name": "Engines"}, &list)
	ada.must(http.StatusOK, "PUT", fmt.Sprintf("/api/v1/lists/%d/members/bob", list.List.ID), nil, nil)

	const n = 1203 // past two pages of the export's reads
	ctx := t.Context()
	var want []int64
	for i := range n {
		st, err := in.social.Post(ctx, ada.id, fmt.Sprint("status ", i))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, st.ID)
	}
	deleted := want[7]
	ada.deleteStatus(deleted)
	want = slices.Delete(want, 7, 8)
	// Blocks, mutes and likes as their keys hold them: uid or status id ->
	// ms.
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for kind, member := range map[string]int64{"blocks": carl.id, "mutes": bob.id, "liked": want[0]} {
		if err := in.rdb.ZAdd(ctx, in.userKey(kind, ada.id), redis.Z{Score: float64(at.UnixMilli()), Member: member}).Err(); err != nil {
			t.Fatal(err)
		}
	}

	// A suspended account ada follows, lists and mutes is hers to export
	// all the same.
	if _, err := in.social.Suspend(ctx, bob.id); err != nil {
		t.Fatal(err)
	}

	res := ada.must(http.StatusOK, "GET", "/api/v1/me/export", nil, nil)
	if got := res.Header.Get("Content-Disposition"); got != `attachment; filename="chorus-ada.json"` {
		t.Fatalf("Content-Disposition %q", got)
	}
	if got := res.Header.Get("Content-Type"); !strings.HasPrefix(got, "application/json") {
		t.Fatalf("Content-Type %q", got)
	}
	var ex exportJSON
	if err := json.Unmarshal(res.Body, &ex); err != nil {
		t.Fatalf("export does not read back: %v", err)
	}
	var me struct{ User map[string]json.RawMessage }
	ada.must(http.StatusOK, "GET", "/api/v1/users/ada", nil, &me)
	for _, f := range []string{"id", "login", "name", "bio", "followers", "following", "posts", "signup"} {
		if string(ex.Profile[f]) != string(me.User[f]) {
			t.Errorf("profile %s: exported %s, the API says %s", f, ex.Profile[f], me.User[f])
		}
	}
	if time.Since(ex.Exported) > time.Hour {
		t.Errorf("exported at %v", ex.Exported)
	}
	if got := ids(ex.Statuses); !slices.Equal(got, want) {
		t.Fatalf("exported %d statuses, want %d, oldest first, without the deleted one", len(got), len(want))
	}
	for _, st := range []statusJSON{ex.Statuses[0], ex.Statuses[len(ex.Statuses)-1]} {
		var api struct{ Status statusJSON }
		ada.must(http.StatusOK, "GET", fmt.Sprintf("/api/v1/statuses/%d", st.ID), nil, &api)
		if !st.Posted.Equal(api.Status.Posted) || st.Message != api.Status.Message || st.Login != "ada" || st.UID != ada.id || st.Name != api.Status.Name {
			t.Fatalf("exported %+v, the API says %+v", st, api.Status)
		}
	}
	if got := exportedLogins(ex.Following); !slices.Equal(got, []string{"bob", "carl"}) {
		t.Errorf("following %v", got)
	}
	if got := exportedLogins(ex.Followers); !slices.Equal(got, []string{"carl"}) {
		t.Errorf("followers %v", got)
	}
	if len(ex.Lists) != 1 || ex.Lists[0].Name != "Engines" || ex.Lists[0].Members != 1 ||
		len(ex.Lists[0].MemberList) != 1 || ex.Lists[0].MemberList[0].Login != "bob" {
		t.Errorf("lists %+v", ex.Lists)
	}
	for name, got := range map[string][]exportedUser{"blocks": ex.Blocks, "mutes": ex.Mutes} {
		want := map[string]string{"blocks": "carl", "mutes": "bob"}[name]
		if len(got) != 1 || got[0].Login != want || got[0].Since == nil || !got[0].Since.Equal(at) {
			t.Errorf("%s %+v, want %s since %v", name, got, want, at)
		}
	}
	if len(ex.Likes) != 1 || ex.Likes[0].StatusID != want[0] || !ex.Likes[0].At.Equal(at) {
		t.Errorf("likes %+v", ex.Likes)
	}

	// Someone with nothing gets every part, empty.
	res = in.signUp(t, "dora").must(http.StatusOK, "GET", "/api/v1/me/export", nil, nil)
	var empty map[string]json.RawMessage
	res.decode(t, &empty)
	for _, f := range []string{"statuses", "following", "followers", "lists", "blocks", "mutes", "likes"} {
		if string(empty[f]) != "[]" {
			t.Errorf("bob's %s: %s, want []", f, empty[f])
		}
	}

	if res := in.anon(t).do("GET", "/api/v1/me/export", nil); res.Status != http.StatusUnauthorized || res.errorCode(t) != "not_signed_in" {
		t.Fatalf("an export without a session: %d %s", res.Status, res.Body)
	}
	ada.must(http.StatusOK, "GET", "/api/v1/me/export", nil, nil)
	refused(t, "a third export within the hour", ada.do("GET", "/api/v1/me/export", nil))
	if got := in.metric(t, "chorus_rate_limited_total", `limit="export"`); got != 1 {
		t.Fatalf("chorus_rate_limited_total{limit=export} = %v, want 1", got)
	}
}

// failReads fails, as a lost connection would, every read of a sorted set
// named one of keys while armed.
type failReads struct {
	keys  []string
	armed atomic.Bool
	// anyArg fails any command that names one of keys in any argument,
	// not only the sorted-set reads of it.
	anyArg bool
}

func (*failReads) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *failReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.armed.Load() && h.matches(cmd) {
			cmd.SetErr(fmt.Errorf("refused by the test: %w", syscall.ECONNRESET))
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}

func (h *failReads) matches(cmd redis.Cmder) bool {
	named := func(a any) bool { return slices.Contains(h.keys, fmt.Sprint(a)) }
	if h.anyArg {
		return slices.ContainsFunc(cmd.Args(), named)
	}
	args := cmd.Args()
	return strings.HasPrefix(cmd.Name(), "zr") && len(args) > 1 && named(args[1])
}

func (h *failReads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// An export that Redis fails before any of it was sent answers 503 in the
// API's error shape, not an empty download.
func TestExportFailedBeforeItsFirstByte(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	in := e.start()
	ada := in.signUp(t, "ada")
	ada.post("mine")
	// The profile timeline's key, on one Redis or (its id a hash tag) on a
	// cluster.
	hook := &failReads{keys: []string{fmt.Sprintf("%sprofile:%d", e.prefix, ada.id), fmt.Sprintf("%sprofile:{%d}", e.prefix, ada.id)}}
	e.rdb.AddHook(hook)
	hook.armed.Store(true)
	res := ada.do("GET", "/api/v1/me/export", nil)
	if res.Status != http.StatusServiceUnavailable || res.errorCode(t) == "" || res.Header.Get("Content-Disposition") != "" {
		t.Errorf("export: %d %q, Content-Disposition %q; want 503 in the error shape, no download",
			res.Status, res.Body, res.Header.Get("Content-Disposition"))
	}
}

// A HEAD of the export answers its headers, reads nothing and spends none
// of the user's exports.
func TestExportHead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{ExportsPerUser: perHour(1)}
	in := e.start()
	ada := in.signUp(t, "ada")
	for range 3 {
		res := ada.do("HEAD", "/api/v1/me/export", nil)
		if res.Status != http.StatusOK || len(res.Body) != 0 || res.Header.Get("Content-Disposition") != `attachment; filename="chorus-ada.json"` {
			t.Fatalf("HEAD /me/export: %d %q, Content-Disposition %q", res.Status, res.Body, res.Header.Get("Content-Disposition"))
		}
	}
	ada.must(http.StatusOK, "GET", "/api/v1/me/export", nil, nil)
	if res := ada.do("GET", "/api/v1/me/export", nil); res.Status != http.StatusTooManyRequests {
		t.Errorf("a second export within the hour: %d, want 429", res.Status)
	}
}

// A sign-in whose answer fails after its session was made (presence not
// read) ends that session: its token is never given, and it would hold a
// place among the user's sessions for 30 days.
func TestSignInFailedAfterItsSessionEndsIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	in := e.start()
	ada := in.signUp(t, "ada")
	hook := &failReads{keys: []string{presence.ConnectedKey(e.prefix, false), presence.ConnectedKey(e.prefix, true)}, anyArg: true}
	e.rdb.AddHook(hook)
	hook.armed.Store(true)
	res := in.anon(t).do("POST", "/api/v1/sessions", map[string]string{"login": "ada", "password": "password-ada"})
	hook.armed.Store(false)
	if res.Status < 500 {
		t.Fatalf("sign-in with presence failing: %d %s, want a 5xx", res.Status, res.Body)
	}
	var n int64
	for _, key := range []string{fmt.Sprintf("%ssessions:%d", e.prefix, ada.id), fmt.Sprintf("%ssessions:{%d}", e.prefix, ada.id)} {
		n += e.rdb.ZCard(t.Context(), key).Val()
	}
	if n != 1 {
		t.Errorf("ada holds %d sessions, want 1 (the sign-up's): the failed sign-in's stayed", n)
	}
}
