package web_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"chorus/social"
)

type replyJSON struct {
	ID      int64 `json:"id"`
	ReplyTo *struct {
		ID    int64  `json:"id"`
		UID   int64  `json:"uid"`
		Login string `json:"login"`
	} `json:"reply_to"`
	Mentions []struct {
		UID   int64  `json:"uid"`
		Login string `json:"login"`
	} `json:"mentions"`
	Replies int64 `json:"replies"`
	Liked   *bool `json:"liked"`
}

// POST /statuses with reply_to answers a status; the context shows the
// thread; bad reply_to values are refused with the API's errors and write
// nothing.
func TestRepliesAndContext(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	alice, bob := in.signUp(t, "alice"), in.signUp(t, "bob")
	root := alice.post("root")
	var made struct{ Status replyJSON }
	bob.must(http.StatusCreated, "POST", "/api/v1/statuses",
		map[string]any{"message": "answer to @alice and @nobody_x", "reply_to": root.ID}, &made)
	r := made.Status
	if r.ReplyTo == nil || r.ReplyTo.ID != root.ID || r.ReplyTo.UID != alice.id || r.ReplyTo.Login != "alice" {
		t.Fatalf("reply_to = %+v, want alice's %d", r.ReplyTo, root.ID)
	}
	if len(r.Mentions) != 1 || r.Mentions[0].Login != "alice" || r.Liked == nil || *r.Liked {
		t.Fatalf("reply = %+v: want one mention of alice and liked false", r)
	}
	var plain struct{ Status replyJSON }
	alice.must(http.StatusOK, "GET", fmt.Sprintf("/api/v1/statuses/%d", root.ID), nil, &plain)
	if plain.Status.ReplyTo != nil || plain.Status.Mentions == nil || plain.Status.Replies != 1 {
		t.Fatalf("root = %+v, want reply_to null, mentions [] and 1 reply", plain.Status)
	}

	var ctx struct {
		Thread      int64       `json:"thread"`
		Ancestors   []replyJSON `json:"ancestors"`
		Descendants []replyJSON `json:"descendants"`
		MoreReplies []int64     `json:"more_replies"`
	}
	in.anon(t).must(http.StatusOK, "GET", fmt.Sprintf("/api/v1/statuses/%d/context", r.ID), nil, &ctx)
	if len(ctx.Ancestors) != 1 || ctx.Ancestors[0].ID != root.ID || len(ctx.Descendants) != 0 || ctx.Thread != root.ID ||
		ctx.MoreReplies == nil || len(ctx.MoreReplies) != 0 {
		t.Fatalf("context of the reply = %+v", ctx)
	}
	ctx.Thread = 0
	alice.must(http.StatusOK, "GET", fmt.Sprintf("/api/v1/statuses/%d/context", root.ID), nil, &ctx)
	if len(ctx.Ancestors) != 0 || len(ctx.Descendants) != 1 || ctx.Descendants[0].ID != r.ID ||
		ctx.Descendants[0].Liked == nil || ctx.Thread != root.ID {
		t.Fatalf("context of the root, as alice = %+v", ctx)
	}

	before := alice.timeline("/api/v1/users/bob/statuses")
	for _, c := range []struct {
		body any
		code string
		want int
	}{
		{map[string]any{"message": "x", "reply_to": "12"}, "invalid_json", http.StatusBadRequest},
		{map[string]any{"message": "x", "reply_to": 1.5}, "invalid_json", http.StatusBadRequest},
		{map[string]any{"message": "x", "reply_to": 0}, "invalid_reply_to", http.StatusBadRequest},
		{map[string]any{"message": "x", "reply_to": -3}, "invalid_reply_to", http.StatusBadRequest},
		{map[string]any{"message": "x", "reply_to": root.ID + 10_000}, "not_found", http.StatusNotFound},
		{map[string]any{"message": "", "reply_to": root.ID}, "invalid_message", http.StatusBadRequest},
	} {
		res := bob.do("POST", "/api/v1/statuses", c.body)
		if res.Status != c.want || res.errorCode(t) != c.code {
			t.Errorf("POST %v = %d %s, want %d %s", c.body, res.Status, res.Body, c.want, c.code)
		}
	}
	for _, path := range []string{"/api/v1/statuses/abc/context", "/api/v1/statuses/0/context",
		fmt.Sprintf("/api/v1/statuses/%d/context", root.ID+10_000)} {
		if res := bob.do("GET", path, nil); res.Status != http.StatusNotFound {
			t.Errorf("GET %s = %d %s, want 404", path, res.Status, res.Body)
		}
	}
	alice.deleteStatus(root.ID)
	res := bob.do("POST", "/api/v1/statuses", map[string]any{"message": "late", "reply_to": root.ID})
	if res.Status != http.StatusNotFound || !strings.Contains(string(res.Body), "deleted") {
		t.Errorf("reply to a deleted status = %d %s, want 404 saying so", res.Status, res.Body)
	}
	after := alice.timeline("/api/v1/users/bob/statuses")
	if !slices.Equal(ids(after.Statuses), ids(before.Statuses)) {
		t.Errorf("refused replies changed bob's profile: %v, then %v", ids(before.Statuses), ids(after.Statuses))
	}
	// The reply stays, answering a deleted status.
	bob.must(http.StatusOK, "GET", fmt.Sprintf("/api/v1/statuses/%d", r.ID), nil, &made)
	if made.Status.ReplyTo == nil || made.Status.ReplyTo.ID != root.ID {
		t.Errorf("the reply once its parent is deleted = %+v, want it answering %d", made.Status, root.ID)
	}
}
