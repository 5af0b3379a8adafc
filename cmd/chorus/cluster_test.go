package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"chorus/internal/redistest"

	"github.com/coder/websocket"
)

// Two chorus processes on one Redis Cluster serve one site: users of either
// follow each other, a status posted on one reaches the other's stream live,
// and each sees the other online, all through the cluster.
func TestRunOnCluster(t *testing.T) {
	t.Parallel()
	prefix := redistest.Prefix()
	env := map[string]string{
		"REDIS_URL":         "redis+cluster://" + strings.Join(redistest.ClusterAddrs(t), ","),
		"CHORUS_KEY_PREFIX": prefix,
	}
	a, _ := start(t, env)
	b, _ := start(t, env)
	aliceID, alice := signUp(t, a, "alice")
	bobID, bob := signUp(t, b, "bob")
	for _, f := range []struct{ base, token, login string }{{a, alice, "bob"}, {b, bob, "alice"}} {
		if status := do(t, http.MethodPut, f.base+"/api/v1/following/"+f.login, "Authorization", "Bearer "+f.token); status != http.StatusOK {
			t.Fatalf("follow %s: %d", f.login, status)
		}
	}

	// Bob listens on b; alice comes online on a and posts there.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b, "http")+"/api/v1/stream",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + bob}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if f := readFrame(ctx, t, ws); f.Type != "ready" {
		t.Fatalf("first frame %q, want ready", f.Type)
	}
	dialStream(t, a, alice)
	if f := readFrame(ctx, t, ws); f.Type != "presence" || f.User.ID != aliceID || !f.Online {
		t.Fatalf("bob was sent %+v, want alice online", f)
	}
	req, _ := http.NewRequest(http.MethodPost, a+"/api/v1/statuses", strings.NewReader(`{"message":"hello over the cluster"}`))
	req.Header.Set("Authorization", "Bearer "+alice)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var posted struct{ Status struct{ ID int64 } }
	json.NewDecoder(res.Body).Decode(&posted)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated || posted.Status.ID == 0 {
		t.Fatalf("post: %d", res.StatusCode)
	}
	if f := readFrame(ctx, t, ws); f.Type != "status" || f.Status.ID != posted.Status.ID {
		t.Fatalf("bob was sent %+v, want status %d", f, posted.Status.ID)
	}

	// Bob's online friends, read on b, hold alice; his home timeline her status.
	var online struct {
		Friends []struct{ User struct{ ID int64 } }
	}
	getJSON(t, b+"/api/v1/friends/online", bob, &online)
	if len(online.Friends) != 1 || online.Friends[0].User.ID != aliceID {
		t.Fatalf("bob's online friends = %+v, want alice (%d)", online.Friends, aliceID)
	}
	var home struct{ Statuses []struct{ ID int64 } }
	getJSON(t, b+"/api/v1/timelines/home", bob, &home)
	if len(home.Statuses) != 1 || home.Statuses[0].ID != posted.Status.ID {
		t.Fatalf("bob's home = %+v, want status %d", home.Statuses, posted.Status.ID)
	}
	var me struct {
		User struct{ ID, Followers, Following int64 }
	}
	getJSON(t, a+"/api/v1/users/bob", alice, &me)
	if me.User.ID != bobID || me.User.Followers != 1 || me.User.Following != 1 {
		t.Fatalf("bob's profile = %+v, want one follower and one followee", me.User)
	}
}

// frame is a stream frame, as far as TestRunOnCluster reads it.
type frame struct {
	Type   string
	Online bool
	User   struct{ ID int64 }
	Status struct{ ID int64 }
}

func readFrame(ctx context.Context, t *testing.T, ws *websocket.Conn) frame {
	t.Helper()
	_, raw, err := ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var f frame
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("frame %s: %v", raw, err)
	}
	return f
}

func getJSON(t *testing.T, url, token string, out any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(fmt.Errorf("GET %s: %w: %s", url, err, raw))
	}
}
