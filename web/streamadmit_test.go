package web_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"chorus/social"
	"chorus/web"

	"github.com/coder/websocket"
)

// dialStatus opens a stream as c, closes it at once if it opened, and
// returns the handshake's status: 101 when it opened.
func dialStatus(tb testing.TB, c *client) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, res, err := websocket.Dial(ctx, dialURL(c.base), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + c.token}},
	})
	if err == nil {
		ws.CloseNow()
		return http.StatusSwitchingProtocols
	}
	if res == nil {
		tb.Errorf("dial: %v", err)
		return 0
	}
	return res.StatusCode
}

// Streams asked for at once are admitted together (in batches, a round trip
// for their sessions and one for their limits) and each exactly: however
// many come at once, a user's opens past their limit are refused and the
// rest let in, a session that is not one is refused 401, and another
// user's opens count against their own limit alone.
func TestStreamOpensAtOnceAdmittedExactly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	const limit = 5
	e.limits = web.Limits{StreamOpensPerUser: perHour(limit)}
	in := e.start()
	eager, calm := in.signUp(t, "eager"), in.signUp(t, "calm")
	bad := &client{tb: t, base: in.srv.URL, token: "not-a-session"}
	var asks []*client
	for range 12 {
		asks = append(asks, eager)
	}
	for range 4 {
		asks = append(asks, bad, calm)
	}
	statuses := make([]int, len(asks))
	var wg sync.WaitGroup
	for i, c := range asks {
		wg.Go(func() { statuses[i] = dialStatus(t, c) })
	}
	wg.Wait()
	got := map[*client]map[int]int{eager: {}, calm: {}, bad: {}}
	for i, c := range asks {
		got[c][statuses[i]]++
	}
	if g := got[eager]; g[http.StatusSwitchingProtocols] != limit || g[http.StatusTooManyRequests] != 12-limit {
		t.Errorf("12 streams of one user at once, limit %d: %v; want %d opened, %d refused 429", limit, g, limit, 12-limit)
	}
	if g := got[bad]; g[http.StatusUnauthorized] != 4 {
		t.Errorf("4 streams of no session: %v; want 4 refused 401", g)
	}
	if g := got[calm]; g[http.StatusSwitchingProtocols] != 4 {
		t.Errorf("4 streams of another user: %v; want 4 opened", g)
	}
	if n := in.metric(t, "chorus_rate_limited_total", `limit="stream_opens"`); n != 12-limit {
		t.Errorf("chorus_rate_limited_total{limit=stream_opens} = %v, want %d", n, 12-limit)
	}
}
