package web_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"chorus/social"
	"chorus/web"
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
