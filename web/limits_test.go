package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/social"
	"chorus/web"

	"github.com/coder/websocket"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// refused checks that res is a 429 rate_limited answer with a Retry-After.
func refused(tb testing.TB, what string, res response) {
	tb.Helper()
	if res.Status != http.StatusTooManyRequests || res.errorCode(tb) != "rate_limited" {
		tb.Fatalf("%s: got %d %s, want 429 rate_limited", what, res.Status, res.Body)
	}
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || s < 1 {
		tb.Fatalf("%s: Retry-After %q, want whole seconds from 1", what, res.Header.Get("Retry-After"))
	}
}

func perHour(burst int) redis_rate.Limit {
	return redis_rate.Limit{Rate: 1, Period: time.Hour, Burst: burst}
}

func TestSignUpLimitPerAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{SignUpPerAddress: perHour(2)}
	in := e.start()
	in.signUp(t, "first")
	in.signUp(t, "second")
	res := in.anon(t).do("POST", "/api/v1/users", map[string]string{"login": "third", "name": "T", "password": "password-third"})
	refused(t, "third sign-up from one address", res)
	if res := in.anon(t).do("GET", "/api/v1/users/third", nil); res.Status != http.StatusNotFound {
		t.Fatalf("a refused sign-up made a user: %d", res.Status)
	}
	if got := in.metric(t, "chorus_rate_limited_total", `limit="signup"`); got != 1 {
		t.Fatalf("chorus_rate_limited_total{limit=signup} = %v, want 1", got)
	}
}

func TestSignInLimitPerAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{SignInPerAddress: perHour(3)}
	in := e.start()
	in.signUp(t, "ann")
	in.signUp(t, "bob")
	anon := in.anon(t)
	// Attempts count whatever their login and outcome.
	anon.must(http.StatusOK, "POST", "/api/v1/sessions", map[string]string{"login": "ann", "password": "password-ann"}, nil)
	anon.must(http.StatusUnauthorized, "POST", "/api/v1/sessions", map[string]string{"login": "bob", "password": "wrong-password"}, nil)
	anon.must(http.StatusUnauthorized, "POST", "/api/v1/sessions", map[string]string{"login": "nobody", "password": "wrong-password"}, nil)
	refused(t, "fourth sign-in from one address", anon.do("POST", "/api/v1/sessions", map[string]string{"login": "bob", "password": "password-bob"}))
}

func TestPostLimitHoldsAcrossInstances(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{PostsPerUser: perHour(3)}
	one, two := e.start(), e.start()
	a := one.signUp(t, "poster")
	b := one.signUp(t, "other")
	a.post("one")
	a.post("two")
	two.as(a).post("three")
	refused(t, "fourth post, on the other instance", two.as(a).do("POST", "/api/v1/statuses", map[string]string{"message": "four"}))
	refused(t, "fifth post", a.do("POST", "/api/v1/statuses", map[string]string{"message": "five"}))
	if got := a.counts("poster").posts; got != 3 {
		t.Fatalf("posts = %d, want 3: refused posts wrote nothing", got)
	}
	b.post("another user is not limited")
}

func TestFollowLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{FollowsPerUser: perHour(3)}
	in := e.start()
	a := in.signUp(t, "churner")
	in.signUp(t, "target")
	a.follow("target")
	a.unfollow("target")
	a.follow("target")
	refused(t, "fourth follow change", a.do("DELETE", "/api/v1/following/target", nil))
	if got := a.counts("churner").following; got != 1 {
		t.Fatalf("following = %d, want 1: the refused unfollow changed nothing", got)
	}
}

func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	signUp := func(in *instance, login, forwarded string) response {
		return in.anon(t).do("POST", "/api/v1/users",
			map[string]string{"login": login, "name": login, "password": "password-" + login},
			"X-Forwarded-For", forwarded)
	}

	// Behind a trusted proxy, the client is the address it names.
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{SignUpPerAddress: perHour(1)}
	e.proxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	in := e.start()
	if res := signUp(in, "via1", "203.0.113.5"); res.Status != http.StatusCreated {
		t.Fatalf("first sign-up through the proxy: %d %s", res.Status, res.Body)
	}
	refused(t, "second sign-up from the same client", signUp(in, "via2", "198.51.100.1, 203.0.113.5"))
	if res := signUp(in, "via3", "203.0.113.6"); res.Status != http.StatusCreated {
		t.Fatalf("another client through the proxy: %d %s", res.Status, res.Body)
	}
	// Addresses of one IPv6 /64 are one client.
	if res := signUp(in, "six1", "2001:db8:1:2::1"); res.Status != http.StatusCreated {
		t.Fatalf("IPv6 client: %d %s", res.Status, res.Body)
	}
	refused(t, "another address of the same /64", signUp(in, "six2", "2001:db8:1:2:ffff::9"))

	// From anyone else, X-Forwarded-For is not believed.
	e2 := newEnv(t, social.Options{})
	e2.limits = web.Limits{SignUpPerAddress: perHour(1)}
	direct := e2.start()
	if res := signUp(direct, "direct1", "203.0.113.7"); res.Status != http.StatusCreated {
		t.Fatalf("first direct sign-up: %d", res.Status)
	}
	refused(t, "a forged X-Forwarded-For", signUp(direct, "direct2", "203.0.113.8"))
}

// An IPv6 client counted by its address is counted by its /48 too, at
// SiteLimitFactor times the limit, so that one holding a site (a /48 of
// 65,536 /64s, which tunnel brokers give for free) does not get a budget a
// /64: sign-ups, a visitor's reads and stream openings alike. Another site
// has its own; a factor below 0 counts the /64 alone.
func TestIPv6SiteLimits(t *testing.T) {
	t.Parallel()
	from := func(site, n int) string { return fmt.Sprintf("2001:db8:%x:%x::1", site, n) }
	signUp := func(in *instance, login, forwarded string) response {
		return in.anon(t).do("POST", "/api/v1/users",
			map[string]string{"login": login, "name": login, "password": "password-" + login},
			"X-Forwarded-For", forwarded)
	}
	read := func(in *instance, forwarded string) response {
		return in.anon(t).do("GET", "/api/v1/timelines/global", nil, "X-Forwarded-For", forwarded)
	}
	proxy := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

	e := newEnv(t, social.Options{})
	e.proxies, e.sites = proxy, 3
	free := e.start() // where the streams' users sign up
	e.limits = web.Limits{SignUpPerAddress: perHour(1), ReadsPerClient: perHour(1), StreamOpensPerAddress: perHour(1)}
	in := e.start()
	for n := range 3 {
		if res := signUp(in, fmt.Sprintf("six%d", n), from(1, n)); res.Status != http.StatusCreated {
			t.Fatalf("sign-up from the site's /64 number %d: %d %s", n, res.Status, res.Body)
		}
		if res := read(in, from(1, n)); res.Status != http.StatusOK {
			t.Fatalf("a visitor's read from the site's /64 number %d: %d %s", n, res.Status, res.Body)
		}
	}
	refused(t, "a sign-up from a fourth /64 of the site", signUp(in, "six3", from(1, 3)))
	refused(t, "a visitor's read from a fourth /64 of the site", read(in, from(1, 3)))
	if res := signUp(in, "seven", from(2, 0)); res.Status != http.StatusCreated {
		t.Fatalf("a sign-up from another site: %d %s", res.Status, res.Body)
	}
	// Streams: three users each open one from a /64 of one site, a fourth
	// is refused; a client over its own /64's limit spent none of the
	// site's (the third opens after the first was refused a second).
	users := make([]*client, 4)
	for i := range users {
		users[i] = in.as(free.signUp(t, fmt.Sprintf("streamer%d", i)))
	}
	open := func(c *client, forwarded string) (*websocket.Conn, *http.Response, error) {
		return c.dial(http.Header{"X-Forwarded-For": {forwarded}})
	}
	for i, c := range users[:3] {
		ws, res, err := open(c, from(3, i))
		if err != nil {
			t.Fatalf("stream %d from the site: %v (%v)", i, err, res)
		}
		defer ws.CloseNow()
		if i == 0 {
			if ws, _, err := open(c, from(3, 0)); err == nil {
				ws.CloseNow()
				t.Fatal("a second stream from one /64 opened, want 429")
			}
		}
	}
	if ws, res, err := open(users[3], from(3, 3)); err == nil || res == nil || res.StatusCode != http.StatusTooManyRequests {
		if ws != nil {
			ws.CloseNow()
		}
		t.Fatalf("a stream from a fourth /64 of the site: %v (%v), want 429", err, res)
	}

	// Counted by their /64 alone.
	e2 := newEnv(t, social.Options{})
	e2.limits = web.Limits{SignUpPerAddress: perHour(1)}
	e2.proxies, e2.sites = proxy, -1
	alone := e2.start()
	for n := range 4 {
		if res := signUp(alone, fmt.Sprintf("six%d", n), from(1, n)); res.Status != http.StatusCreated {
			t.Fatalf("sites not counted: sign-up from /64 number %d: %d %s", n, res.Status, res.Body)
		}
	}
	refused(t, "sites not counted: a second sign-up from one /64", signUp(alone, "six9", from(1, 0)))
}

func TestLoginCSRF(t *testing.T) {
	t.Parallel()
	srv := newEnv(t, social.Options{}).start()
	srv.signUp(t, "victim")
	host := strings.TrimPrefix(srv.srv.URL, "http://")
	signIn := map[string]string{"login": "victim", "password": "password-victim"}
	cases := []struct {
		name         string
		path         string
		body         any
		header       []string
		status       int
		code         string
		writesCookie bool
	}{
		{"sign-in from another site", "/api/v1/sessions", signIn, []string{"Origin", "https://evil.example"}, 403, "forbidden_origin", false},
		{"sign-in, cross-site without Origin", "/api/v1/sessions", signIn, []string{"Sec-Fetch-Site", "cross-site"}, 403, "forbidden_origin", false},
		{"sign-in from this host over the other scheme", "/api/v1/sessions", signIn, []string{"Origin", "https://" + host}, 403, "forbidden_origin", false},
		{"sign-in as a form would send it", "/api/v1/sessions", `{"login":"victim","password":"password-victim"}`, []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type", false},
		{"sign-in without a content type", "/api/v1/sessions", `{"login":"victim","password":"password-victim"}`, []string{"Content-Type", ""}, 415, "unsupported_media_type", false},
		{"sign-up from another site", "/api/v1/users", map[string]string{"login": "planted", "name": "P", "password": "password-planted"}, []string{"Origin", "https://evil.example"}, 403, "forbidden_origin", false},
		{"sign-up as a form would send it", "/api/v1/users", `{"login":"planted","name":"P","password":"password-planted"}`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported_media_type", false},
		{"sign-in from this origin", "/api/v1/sessions", signIn, []string{"Origin", "http://" + host}, 200, "", true},
		{"sign-in with a charset", "/api/v1/sessions", `{"login":"victim","password":"password-victim"}`, []string{"Content-Type", "application/json; charset=utf-8"}, 200, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := srv.anon(t).do("POST", c.path, c.body, c.header...)
			if res.Status != c.status {
				t.Fatalf("got %d %s, want %d", res.Status, res.Body, c.status)
			}
			if c.code != "" && res.errorCode(t) != c.code {
				t.Fatalf("code %s, want %s", res.Body, c.code)
			}
			if got := res.Header.Get("Set-Cookie") != ""; got != c.writesCookie {
				t.Fatalf("Set-Cookie present = %v, want %v", got, c.writesCookie)
			}
		})
	}
	if res := srv.anon(t).do("GET", "/api/v1/users/planted", nil); res.Status != http.StatusNotFound {
		t.Fatalf("a refused sign-up made a user: %d", res.Status)
	}
}

func TestOriginSchemeCounts(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	a := in.signUp(t, "schemer")
	host := strings.TrimPrefix(in.srv.URL, "http://")
	cookie := "chorus_session=" + a.token
	anon := in.anon(t)
	res := anon.do("POST", "/api/v1/statuses", map[string]string{"message": "x"}, "Cookie", cookie, "Origin", "https://"+host)
	if res.Status != http.StatusForbidden {
		t.Fatalf("cookie write from https://%s to an http server: %d, want 403", host, res.Status)
	}
	// X-Forwarded-Proto from a client that is no trusted proxy is not
	// believed.
	res = anon.do("POST", "/api/v1/statuses", map[string]string{"message": "x"}, "Cookie", cookie, "Origin", "https://"+host, "X-Forwarded-Proto", "https")
	if res.Status != http.StatusForbidden {
		t.Fatalf("cookie write from https with a client's own X-Forwarded-Proto: %d, want 403", res.Status)
	}
	if _, res, err := a.dial(http.Header{"Origin": {"https://" + host}}); err == nil || res == nil || res.StatusCode != http.StatusForbidden {
		t.Fatalf("stream from the other scheme: %v, want 403", res)
	}
}

// X-Forwarded-Proto is believed from -trusted-proxies only: from them, https
// is this server's own scheme and the session cookie is Secure; from anyone
// else, neither.
func TestForwardedProtoFromTrustedProxiesOnly(t *testing.T) {
	t.Parallel()
	secureCookie := func(t *testing.T, res response) bool {
		t.Helper()
		for _, c := range (&http.Response{Header: res.Header}).Cookies() {
			if c.Name == web.SessionCookie {
				return c.Secure
			}
		}
		t.Fatalf("no session cookie in %d %s", res.Status, res.Body)
		return false
	}
	for _, tc := range []struct {
		name    string
		proxies []netip.Prefix
		believe bool
	}{
		{"direct client", nil, false},
		{"proxy not trusted", []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}, false},
		{"trusted proxy", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, social.Options{})
			e.proxies = tc.proxies
			in := e.start()
			host := strings.TrimPrefix(in.srv.URL, "http://")
			anon := in.anon(t)
			res := anon.do("POST", "/api/v1/users", map[string]string{"login": "proto", "name": "P", "password": "password-proto"},
				"Origin", "https://"+host, "X-Forwarded-Proto", "https")
			if want := map[bool]int{true: http.StatusCreated, false: http.StatusForbidden}[tc.believe]; res.Status != want {
				t.Fatalf("sign-up from https://%s saying X-Forwarded-Proto: https: %d %s, want %d", host, res.Status, res.Body, want)
			}
			if !tc.believe {
				res = anon.do("POST", "/api/v1/users", map[string]string{"login": "proto", "name": "P", "password": "password-proto"},
					"Origin", "http://"+host, "X-Forwarded-Proto", "https")
				if res.Status != http.StatusCreated {
					t.Fatalf("sign-up from http://%s: %d %s", host, res.Status, res.Body)
				}
			}
			if got := secureCookie(t, res); got != tc.believe {
				t.Fatalf("session cookie Secure = %v, want %v", got, tc.believe)
			}
		})
	}
}

func TestStaticFilesCarrySecurityHeaders(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	for _, path := range []string{"/", "/static/app.js", "/static/style.css"} {
		res := in.anon(t).do("GET", path, nil)
		if res.Status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, res.Status)
		}
		for _, h := range []string{"Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy", "X-Frame-Options"} {
			if res.Header.Get(h) == "" {
				t.Errorf("GET %s: no %s", path, h)
			}
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s: CSP %q", path, csp)
		}
	}
}

func TestRateLimitRetryAfterRounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{PostsPerUser: redis_rate.Limit{Rate: 1, Period: 90 * time.Second, Burst: 1}}
	in := e.start()
	a := in.signUp(t, "waiter")
	a.post("first")
	res := a.do("POST", "/api/v1/statuses", map[string]string{"message": "second"})
	refused(t, "second post", res)
	if s, _ := strconv.Atoi(res.Header.Get("Retry-After")); s < 80 || s > 90 {
		t.Fatalf("Retry-After = %d, want about 90 s", s)
	}
	var e2 struct{ Error struct{ Message string } }
	res.decode(t, &e2)
	if !strings.Contains(e2.Error.Message, "posting too fast") || !strings.Contains(e2.Error.Message, "Try again in 2 minutes.") {
		t.Fatalf("message %q", e2.Error.Message)
	}
}

func TestPasswordHashersBusy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{PasswordHashers: 1, HashWait: time.Millisecond})
	e.opts.BcryptCost = 12 // each hash holds the one hasher far longer than the wait
	in := e.start()
	results := make(chan response, 4)
	for i := range 4 {
		go func() {
			results <- in.anon(t).do("POST", "/api/v1/users", map[string]string{
				"login": "busy" + strconv.Itoa(i), "name": "B", "password": "password-busy"})
		}()
	}
	created, busy := 0, 0
	for range 4 {
		res := <-results
		switch res.Status {
		case http.StatusCreated:
			created++
		case http.StatusTooManyRequests:
			if res.errorCode(t) != "server_busy" || res.Header.Get("Retry-After") != "1" {
				t.Fatalf("busy answer: %s %v", res.Body, res.Header)
			}
			busy++
		default:
			t.Fatalf("sign-up: %d %s", res.Status, res.Body)
		}
	}
	if created < 1 || busy < 1 {
		t.Fatalf("created %d, busy %d: want some of each with one hasher", created, busy)
	}
	if got := in.metric(t, "chorus_rate_limited_total", `limit="password_hashers"`); got != float64(busy) {
		t.Fatalf("chorus_rate_limited_total{limit=password_hashers} = %v, want %d", got, busy)
	}
}

func TestLongPasswordsCountWhole(t *testing.T) {
	t.Parallel()
	in := newEnv(t, social.Options{}).start()
	long := strings.Repeat("p", 100)
	in.anon(t).must(http.StatusCreated, "POST", "/api/v1/users", map[string]string{"login": "longpw", "name": "L", "password": long}, nil)
	in.anon(t).must(http.StatusOK, "POST", "/api/v1/sessions", map[string]string{"login": "longpw", "password": long}, nil)
	// The same first 72 bytes are not the password.
	in.anon(t).must(http.StatusUnauthorized, "POST", "/api/v1/sessions", map[string]string{"login": "longpw", "password": long[:72] + strings.Repeat("q", 28)}, nil)
	res := in.anon(t).do("POST", "/api/v1/users", map[string]string{"login": "toolong", "name": "L", "password": strings.Repeat("p", 129)})
	if res.Status != http.StatusBadRequest || res.errorCode(t) != "invalid_password" {
		t.Fatalf("129-byte password: %d %s", res.Status, res.Body)
	}
}

// Failed sign-ins for one login from many addresses meet the login's
// ceiling: past it, new addresses get 429 with Retry-After and a message
// that says what to do, counted as signin_account_failures, while the
// address the owner signed in from before still signs in.
func TestSignInCeilingPerAccount(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{SignInAccountLimit: 4})
	e.proxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	in := e.start()
	victim := in.signUp(t, "victim")
	signIn := func(password, from string) response {
		return in.anon(t).do("POST", "/api/v1/sessions", map[string]string{"login": "victim", "password": password}, "X-Forwarded-For", from)
	}
	if res := signIn("password-victim", "198.51.100.7"); res.Status != http.StatusOK {
		t.Fatalf("the owner at home: %d %s", res.Status, res.Body)
	}
	// The owner's browser, signed in once from a café: it keeps its mark.
	res := in.anon(t).do("POST", "/api/v1/sessions", map[string]string{"login": "victim", "password": "password-victim"},
		"X-Forwarded-For", "192.0.2.44", "Sec-Fetch-Site", "same-origin")
	var mark string
	for _, c := range (&http.Response{Header: res.Header}).Cookies() {
		if c.Name == web.DeviceCookie {
			mark = c.Value
			if c.Path != "/api/v1/sessions" || !c.HttpOnly || c.MaxAge < 80*24*3600 {
				t.Errorf("the device cookie %+v: want HttpOnly, for /api/v1/sessions, kept 90 days", c)
			}
		}
	}
	if res.Status != http.StatusOK || !social.ValidDeviceMark(mark) {
		t.Fatalf("the owner's browser: %d, device mark %q", res.Status, mark)
	}
	// The owner's script signs in again and again from its server, keeping
	// no cookie: each sign-in's new mark pushes out no known address.
	for i := range 25 {
		if res := signIn("password-victim", "192.0.2.50"); res.Status != http.StatusOK {
			t.Fatalf("the owner's script, sign-in %d: %d %s", i, res.Status, res.Body)
		}
	}
	for i := range 4 {
		if res := signIn("wrong-password", "203.0.113."+strconv.Itoa(i)); res.Status != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d %s, want 401", i, res.Status, res.Body)
		}
	}
	res = signIn("password-victim", "203.0.113.99")
	refused(t, "the right password from a new address past the ceiling", res)
	if !strings.Contains(string(res.Body), "addresses it has not signed in from") {
		t.Fatalf("message %s does not say why", res.Body)
	}
	if got := in.metric(t, "chorus_rate_limited_total", `limit="signin_account_failures"`); got != 1 {
		t.Fatalf("chorus_rate_limited_total{limit=signin_account_failures} = %v, want 1", got)
	}
	if res := signIn("password-victim", "198.51.100.7"); res.Status != http.StatusOK {
		t.Fatalf("the owner at home past the ceiling: %d %s", res.Status, res.Body)
	}
	// The owner's browser, from yet another address, shows its mark: known,
	// it is spared the ceiling; a made-up mark is not.
	withMark := func(mark, from string) response {
		return in.anon(t).do("POST", "/api/v1/sessions", map[string]string{"login": "victim", "password": "password-victim"},
			"X-Forwarded-For", from, "Sec-Fetch-Site", "same-origin", "Cookie", web.DeviceCookie+"="+mark)
	}
	refused(t, "the right password past the ceiling from a browser never seen", withMark(social.NewDeviceMark(), "203.0.113.77"))
	if res := withMark(mark, "203.0.113.77"); res.Status != http.StatusOK {
		t.Fatalf("the owner's browser, known, from a new address past the ceiling: %d %s", res.Status, res.Body)
	}
	// A mark is good for one sign-in: the same one again (copied off the
	// browser, say) is no longer known.
	refused(t, "a device mark shown a second time", withMark(mark, "203.0.113.78"))
	// Signed in already, the owner changes the password from a new
	// address: the session spares the check the ceiling strangers filled,
	// not the address's own count.
	if res := victim.do("PUT", "/api/v1/me/password", map[string]string{"current": "password-victim", "new": "a-new-kettle-drum-7"},
		"X-Forwarded-For", "203.0.113.100"); res.Status != http.StatusNoContent {
		t.Fatalf("the owner's password change from a new address past the ceiling: %d %s, want 204", res.Status, res.Body)
	}
	for i := range 10 {
		res := victim.do("PUT", "/api/v1/me/password", map[string]string{"current": "wrong-password", "new": "a-new-kettle-drum-8"},
			"X-Forwarded-For", "203.0.113.101")
		if res.Status != http.StatusUnauthorized {
			t.Fatalf("wrong current password %d on a session: %d %s, want 401", i, res.Status, res.Body)
		}
	}
	refused(t, "an eleventh wrong current password from one address", victim.do("PUT", "/api/v1/me/password",
		map[string]string{"current": "wrong-password", "new": "a-new-kettle-drum-8"}, "X-Forwarded-For", "203.0.113.101"))
}

// One browser signing in to two accounts in turns keeps a device mark for
// each: each account's sign-in spends and renews its own and leaves the
// other's, so that each is spared its ceiling from a new address; a copy
// of the cookie, spent, is worth nothing; a cookie of garbage is none.
func TestDeviceMarksOfTwoAccounts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{SignInAccountLimit: 2})
	e.proxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	in := e.start()
	in.signUp(t, "ann")
	in.signUp(t, "bob")
	cookie := "" // the browser's
	browser := func(login, from string, want int) response {
		t.Helper()
		header := []string{"X-Forwarded-For", from, "Sec-Fetch-Site", "same-origin"}
		if cookie != "" {
			header = append(header, "Cookie", web.DeviceCookie+"="+cookie)
		}
		res := in.anon(t).do("POST", "/api/v1/sessions", map[string]string{"login": login, "password": "password-" + login}, header...)
		if res.Status != want {
			t.Fatalf("%s's browser from %s: %d %s, want %d", login, from, res.Status, res.Body, want)
		}
		for _, c := range (&http.Response{Header: res.Header}).Cookies() {
			if c.Name == web.DeviceCookie {
				cookie = c.Value
			}
		}
		return res
	}
	guess := func(login, from string) {
		t.Helper()
		res := in.anon(t).do("POST", "/api/v1/sessions", map[string]string{"login": login, "password": "wrong-password"}, "X-Forwarded-For", from)
		if res.Status != http.StatusUnauthorized {
			t.Fatalf("a guess at %s: %d %s, want 401", login, res.Status, res.Body)
		}
	}
	browser("ann", "192.0.2.1", http.StatusOK)
	browser("bob", "192.0.2.1", http.StatusOK)
	if marks := strings.Split(cookie, "."); len(marks) != 2 {
		t.Fatalf("the browser keeps %q after two accounts' sign-ins, want two marks", cookie)
	}
	copied := cookie
	// Strangers fill both accounts' ceilings.
	for i := range 2 {
		guess("ann", "203.0.113."+strconv.Itoa(i))
		guess("bob", "203.0.113."+strconv.Itoa(i))
	}
	// From a new address, each account on the browser is spared, in turns.
	browser("ann", "198.51.100.1", http.StatusOK)
	browser("bob", "198.51.100.2", http.StatusOK)
	browser("ann", "198.51.100.3", http.StatusOK)
	if marks := strings.Split(cookie, "."); len(marks) != 2 {
		t.Fatalf("the browser keeps %q, want two marks", cookie)
	}
	// The copy's marks were spent by the sign-ins after it.
	current := cookie
	cookie = copied
	refused(t, "a copy of the browser's cookie, spent", browser("ann", "198.51.100.4", http.StatusTooManyRequests))
	cookie = current
	// Garbage is no mark, however long: at home, a sign-in goes through
	// all the same.
	cookie = strings.Repeat(".", 3000) + "not-a-mark." + strings.Repeat("z", 32) + ".." + current
	browser("bob", "192.0.2.1", http.StatusOK)
	if marks := strings.Split(cookie, "."); len(marks) != 2 || slices.ContainsFunc(marks, func(m string) bool { return !social.ValidDeviceMark(m) }) {
		t.Fatalf("after a cookie with garbage, the browser keeps %q, want two marks", cookie)
	}
	// A right password refused after it was checked (a suspended account)
	// spent the account's mark: the browser is given the new one all the
	// same, and the other account's stays.
	bob, err := in.social.UID(t.Context(), "bob")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.social.Suspend(t.Context(), bob); err != nil {
		t.Fatal(err)
	}
	before := strings.Split(cookie, ".")
	browser("bob", "192.0.2.1", http.StatusForbidden)
	after := strings.Split(cookie, ".")
	if len(after) != 2 || after[0] != before[0] || after[1] == before[1] || !social.ValidDeviceMark(after[1]) {
		t.Fatalf("a suspended account's browser sign-in left the cookie %q (was %q), want ann's mark kept and bob's renewed", cookie, strings.Join(before, "."))
	}
}

// dialRefused dials a stream as c and fails unless it is refused 429
// rate_limited, in the API's error shape, with a Retry-After.
func dialRefused(tb testing.TB, what string, c *client) {
	tb.Helper()
	ws, res, err := c.dial(nil)
	if err == nil {
		ws.CloseNow()
		tb.Fatalf("%s: the stream opened, want 429", what)
	}
	if res == nil {
		tb.Fatalf("%s: %v, want 429", what, err)
	}
	body, _ := io.ReadAll(res.Body)
	refused(tb, what, response{Status: res.StatusCode, Header: res.Header, Body: body})
}

// Opening streams is limited per user, on every instance together, before
// the stream does any work of its own: a refused open subscribes to
// nothing and leaves its user offline.
func TestStreamOpenLimitPerUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{StreamOpensPerUser: perHour(2)}
	one, two := e.start(), e.start()
	a := one.signUp(t, "opener")
	b := one.signUp(t, "neighbour")
	one.as(a).connect().close()
	two.as(a).connect().close()
	subscribes := one.hub.Stats.SubscribeCommands.Load()
	dialRefused(t, "a third stream of one user", one.as(a))
	if n := one.hub.Stats.SubscribeCommands.Load() - subscribes; n != 0 {
		t.Fatalf("a refused stream sent %d SUBSCRIBE commands, want none", n)
	}
	if got := one.metric(t, "chorus_rate_limited_total", `limit="stream_opens"`); got != 1 {
		t.Fatalf("chorus_rate_limited_total{limit=stream_opens} = %v, want 1", got)
	}
	b.connect() // another user is not limited
}

// Streams opened together are admitted together (each limit one script
// call for the batch), and each limit stays exact: of many streams dialled
// at once, each user opens as many as the per-user limit lets, and one
// address as many as its own limit lets, however the batches fell.
func TestStreamOpenLimitsInABatch(t *testing.T) {
	t.Parallel()
	const perUser, users, dials = 2, 3, 4 // each user dials 4 streams at once
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{StreamOpensPerUser: perHour(perUser)}
	in := e.start()
	var cs []*client
	for i := range users {
		cs = append(cs, in.signUp(t, "batch"+strconv.Itoa(i)))
	}
	opened := dialTogether(t, cs, dials)
	for i, n := range opened {
		if n != perUser {
			t.Errorf("user %d opened %d of %d streams dialled at once; want %d (the per-user limit)", i, n, dials, perUser)
		}
	}
	if got := in.metric(t, "chorus_rate_limited_total", `limit="stream_opens"`); got != users*(dials-perUser) {
		t.Errorf("chorus_rate_limited_total{limit=stream_opens} = %v, want %d", got, users*(dials-perUser))
	}

	e = newEnv(t, social.Options{})
	e.limits = web.Limits{StreamOpensPerAddress: perHour(5)}
	in = e.start()
	cs = nil
	for i := range 8 {
		cs = append(cs, in.signUp(t, "neighbour"+strconv.Itoa(i)))
	}
	total := 0
	for _, n := range dialTogether(t, cs, 1) {
		total += n
	}
	if total != 5 {
		t.Errorf("%d of 8 streams dialled at once from one address opened; want 5 (the per-address limit)", total)
	}
}

// dialTogether dials n streams as each of cs, all at once, and returns how
// many of each client's opened; the others must be refused by a limit. The
// streams stay open until the test ends.
func dialTogether(t *testing.T, cs []*client, n int) []int {
	t.Helper()
	opened := make([]int, len(cs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range cs {
		for range n {
			wg.Go(func() {
				ws, res, err := c.dial(nil)
				if err == nil {
					t.Cleanup(func() { ws.CloseNow() })
					mu.Lock()
					opened[i]++
					mu.Unlock()
					return
				}
				if res == nil || res.StatusCode != http.StatusTooManyRequests {
					t.Errorf("a stream of client %d: %v; want it opened or refused 429", i, err)
				}
			})
		}
	}
	wg.Wait()
	return opened
}

// Opening streams is limited per client address too, whoever opens them.
func TestStreamOpenLimitPerAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{StreamOpensPerAddress: perHour(3)}
	in := e.start()
	var users []*client
	for i := range 4 {
		users = append(users, in.signUp(t, "neighbour"+strconv.Itoa(i)))
	}
	for _, c := range users[:3] {
		c.connect()
	}
	dialRefused(t, "a fourth stream from one address", users[3])
	if got := in.metric(t, "chorus_rate_limited_total", `limit="stream_opens_address"`); got != 1 {
		t.Fatalf("chorus_rate_limited_total{limit=stream_opens_address} = %v, want 1", got)
	}
}

// Password changes and account deletions share a limit per user: each
// checks a password with bcrypt, right or wrong. Status deletions and the
// admins' changes share another, refused or not.
func TestPasswordAndActionLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{PasswordChecksPerUser: perHour(2), ActionsPerUser: perHour(2)}
	in := e.start()
	ada := in.signUp(t, "ada")
	bob := in.signUp(t, "bob")

	ada.must(http.StatusNoContent, "PUT", "/api/v1/me/password", map[string]string{"current": "password-ada", "new": "a new one for ada"}, nil)
	if res := ada.do("DELETE", "/api/v1/me", map[string]string{"password": "not the password"}); res.Status != http.StatusUnauthorized {
		t.Fatalf("a deletion with a wrong password: %d %s, want 401", res.Status, res.Body)
	}
	refused(t, "a third password check within the hour", ada.do("PUT", "/api/v1/me/password", map[string]string{"current": "a new one for ada", "new": "password-ada"}))
	refused(t, "a deletion past the limit", ada.do("DELETE", "/api/v1/me", map[string]string{"password": "a new one for ada"}))
	ada.must(http.StatusOK, "GET", "/api/v1/me", nil, nil) // still there
	bob.must(http.StatusNoContent, "PUT", "/api/v1/me/password", map[string]string{"current": "password-bob", "new": "a new one for bob"}, nil)

	var st struct{ Status struct{ ID int64 } }
	ada.must(http.StatusCreated, "POST", "/api/v1/statuses", map[string]string{"message": "kept"}, &st)
	kept := st.Status.ID
	ada.must(http.StatusCreated, "POST", "/api/v1/statuses", map[string]string{"message": "deleted"}, &st)
	ada.deleteStatus(st.Status.ID)
	if res := ada.do("PUT", "/api/v1/admin/suspensions/bob", nil); res.Status != http.StatusForbidden {
		t.Fatalf("a suspension by a user no admin: %d %s, want 403", res.Status, res.Body)
	}
	refused(t, "a deletion past the limit", ada.do("DELETE", fmt.Sprintf("/api/v1/statuses/%d", kept), nil))
	ada.must(http.StatusOK, "GET", fmt.Sprintf("/api/v1/statuses/%d", kept), nil, nil)
	if got := in.metric(t, "chorus_rate_limited_total", `limit="password"`); got != 2 {
		t.Errorf(`chorus_rate_limited_total{limit="password"} = %v, want 2`, got)
	}
	if got := in.metric(t, "chorus_rate_limited_total", `limit="action"`); got != 1 {
		t.Errorf(`chorus_rate_limited_total{limit="action"} = %v, want 1`, got)
	}
}

// A Redis at its maxmemory refuses writes, and the limits' scripts, which
// write: the answer is 503 redis_unavailable with a Retry-After, in the
// API's error shape, not a 500; what needs no write still answers.
func TestRedisOutOfMemoryAnswers503(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.ClientOf(t, srv.URL)
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{ReadsPerClient: perHour(1000)}
	in := e.startOn(rdb)
	ada := in.signUp(t, "ada")
	in.signUp(t, "bob")
	if err := rdb.ConfigSet(t.Context(), "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.ConfigSet(context.Background(), "maxmemory", "0") })
	for _, c := range []struct{ what, method, path string }{
		{"a follow", "PUT", "/api/v1/following/bob"},
		{"a limited read", "GET", "/api/v1/timelines/global"},
	} {
		res := ada.do(c.method, c.path, nil)
		if res.Status != http.StatusServiceUnavailable || res.errorCode(t) != "redis_unavailable" || res.Header.Get("Retry-After") == "" {
			t.Errorf("%s at maxmemory: %d %s (Retry-After %q), want 503 redis_unavailable with a Retry-After", c.what, res.Status, res.Body, res.Header.Get("Retry-After"))
		}
	}
	if res := in.anon(t).do("GET", "/healthz", nil); res.Status != http.StatusOK {
		t.Errorf("/healthz at maxmemory: %d, want 200", res.Status)
	}
}

// The limits counted with a request's other reads go by their script's
// hash: a Redis that lost its scripts (restarted, flushed) has each call
// made again by its text, and every limit still counts each request once:
// a post's, a signed-in read's (with its session), a stream's.
func TestLimitsAfterRedisLostItsScripts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, social.Options{})
	e.limits = web.Limits{PostsPerUser: perHour(2), ReadsPerClient: perHour(3), StreamOpensPerUser: perHour(1), StreamOpensPerAddress: perHour(100)}
	// A Redis of its own, whose scripts no other test needs.
	var rdb redis.UniversalClient
	if redistest.OnCluster() {
		rdb = redistest.ClusterClientOf(t, redistest.StartCluster(t, 3, 0).Addrs())
	} else {
		rdb = redistest.ClientOf(t, redistest.Start(t).URL)
	}
	in := e.startOn(rdb)
	ada := in.signUp(t, "ada")
	flush := func() {
		t.Helper()
		if err := redistest.FlushScripts(t.Context(), rdb); err != nil {
			t.Fatal(err)
		}
	}
	ada.must(http.StatusOK, "GET", "/api/v1/me", nil, nil) // the route learns its limit
	ada.post("one")
	flush()
	ada.post("two")
	flush()
	refused(t, "a third post", ada.do("POST", "/api/v1/statuses", map[string]string{"message": "three"}))
	for range 2 {
		flush()
		ada.must(http.StatusOK, "GET", "/api/v1/me", nil, nil)
	}
	flush()
	refused(t, "a fourth read", ada.do("GET", "/api/v1/me", nil))
	flush()
	ada.connect().close()
	flush()
	dialRefused(t, "a second stream", ada)
}
