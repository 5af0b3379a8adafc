package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"

	"github.com/go-redis/redis_rate/v10"
)

// start runs the server on a free port and returns its base URL; the server
// stops, and must stop cleanly, when the test ends.
func start(t *testing.T, env map[string]string, args ...string) (string, *testio.Buffer) {
	t.Helper()
	base, logs, _ := startStoppable(t, env, args...)
	return base, logs
}

// startStoppable is start, with a function that stops the server as
// SIGTERM does and reports whether run returned cleanly; the test's end
// calls it too.
func startStoppable(t *testing.T, env map[string]string, args ...string) (string, *testio.Buffer, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &testio.Buffer{}
	listening := make(chan string, 1)
	done := make(chan error, 1)
	getenv := func(k string) string { return env[k] }
	go func() {
		// A request's deadline no request takes however busy the machine,
		// where the default might; a test's own -request-timeout wins.
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0", "-request-timeout", "1m", "-write-timeout", "2m"}, args...), getenv, io.Discard, logs, listening)
	}()
	var addr string
	select {
	case addr = <-listening:
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, logs)
	case <-time.After(time.Minute): // far past a start, even on a busy machine
		t.Fatal("server did not start")
	}
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				err = errors.New("server did not stop within a minute")
			}
		})
		return err
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("run returned %v", err)
		}
	})
	return "http://" + addr, logs, stop
}

func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out map[string]any
	json.Unmarshal(raw, &out)
	return res.StatusCode, out
}

func TestRunEmbedded(t *testing.T) {
	base, logs := start(t, nil)
	if !strings.Contains(logs.String(), "embedded in-memory store") {
		t.Fatalf("no loud warning about the embedded store in:\n%s", logs)
	}
	status, out := post(t, base+"/api/v1/users", `{"login":"embedded","name":"E","password":"kettle-drum-41"}`)
	if status != http.StatusCreated || out["token"] == "" {
		t.Fatalf("sign up on the embedded store: %d %v", status, out)
	}
	if status, out := post(t, base+"/api/v1/sessions", `{"login":"embedded","password":"wrong-one"}`); status != http.StatusUnauthorized {
		t.Fatalf("wrong password on the embedded store: %d %v", status, out)
	}
	res, err := http.Get(base + "/readyz")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("readyz: %v %v", res, err)
	}
}

func TestRunOnRedis(t *testing.T) {
	prefix := redistest.Prefix()
	base, logs := start(t, map[string]string{"REDIS_URL": redistest.URL(t), "CHORUS_KEY_PREFIX": prefix}, "-log-format", "json")
	status, _ := post(t, base+"/api/v1/users", `{"login":"onredis","name":"R","password":"kettle-drum-41"}`)
	if status != http.StatusCreated {
		t.Fatalf("sign up: %d", status)
	}
	rdb, _ := redistest.Client(t)
	if n, err := rdb.Exists(context.Background(), prefix+"user:1").Result(); err != nil || n != 1 {
		t.Fatalf("user not under the prefix %q: %v %v", prefix, n, err)
	}
	first := strings.SplitN(logs.String(), "\n", 2)[0]
	var line map[string]any
	if err := json.Unmarshal([]byte(first), &line); err != nil {
		t.Fatalf("log line is not JSON: %q", first)
	}
}

func TestConfig(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		want    func(config) bool
		wantErr bool
	}{
		{"defaults", nil, nil, func(c config) bool {
			return c.Addr == ":8080" && c.RedisURL == "" && c.KeyPrefix == "chorus:" &&
				c.OnlineWindow == 30*time.Second && c.HeartbeatInterval == 10*time.Second && c.AllowedOrigins == nil
		}, false},
		{"environment", nil, map[string]string{
			"CHORUS_ADDR": ":9000", "REDIS_URL": "redis://r:6379/1", "CHORUS_KEY_PREFIX": "x:",
			"CHORUS_ONLINE_WINDOW": "1m", "CHORUS_HEARTBEAT_INTERVAL": "5s",
			"CHORUS_ALLOWED_ORIGINS": "https://a.example, https://b.example",
		}, func(c config) bool {
			return c.Addr == ":9000" && c.RedisURL == "redis://r:6379/1" && c.KeyPrefix == "x:" &&
				c.OnlineWindow == time.Minute && c.HeartbeatInterval == 5*time.Second &&
				len(c.AllowedOrigins) == 2 && c.AllowedOrigins[1] == "https://b.example"
		}, false},
		{"flags beat environment", []string{"-addr", ":7000", "-online-window", "20s"},
			map[string]string{"CHORUS_ADDR": ":9000"}, func(c config) bool {
				return c.Addr == ":7000" && c.OnlineWindow == 20*time.Second
			}, false},
		{"bad duration in env", nil, map[string]string{"CHORUS_ONLINE_WINDOW": "soon"}, nil, true},
		{"heartbeat not shorter than window", []string{"-heartbeat-interval", "30s"}, nil, nil, true},
		{"negative window", []string{"-online-window", "-1s"}, nil, nil, true},
		{"no shutdown timeout", []string{"-shutdown-timeout", "0"}, nil, nil, true},
		{"negative pull threshold", []string{"-pull-threshold", "-5"}, nil, nil, true},
		{"negative inactive-after", []string{"-inactive-after", "-1h"}, nil, nil, true},
		{"pull and inactivity off", []string{"-pull-threshold", "0", "-inactive-after", "0"}, nil, func(c config) bool {
			return c.PullThreshold == 0 && c.InactiveAfter == 0
		}, false},
		{"bad log format", []string{"-log-format", "xml"}, nil, nil, true},
		{"max streams", nil, map[string]string{"CHORUS_MAX_STREAMS": "500"}, func(c config) bool { return c.MaxStreams == 500 }, false},
		{"bad max streams", nil, map[string]string{"CHORUS_MAX_STREAMS": "many"}, nil, true},
		{"negative max streams", []string{"-max-streams", "-3"}, nil, nil, true},
		{"negative IPv6 site factor", []string{"-ipv6-site-limit-factor", "-5"}, nil, nil, true},
		{"IPv6 site factor", []string{"-ipv6-site-limit-factor", "16"}, nil, func(c config) bool { return c.IPv6SiteLimitFactor == 16 }, false},
		{"limit defaults", nil, nil, func(c config) bool {
			return c.PostLimit == redis_rate.Limit{Rate: 300, Period: 3 * time.Hour, Burst: 10} &&
				c.SignInFailures.Rate == 10 && c.MaxStreamsPerUser == 10 && c.ReadTimeout == 20*time.Second &&
				c.ReadLimit == redis_rate.Limit{Rate: 300, Period: 5 * time.Minute, Burst: 100}
		}, false},
		{"limits", []string{"-post-limit", "5/m", "-follow-limit", "off", "-list-limit", "7/h", "-signin-limit", "100/10m,burst=7", "-trusted-proxies", "10.0.0.0/8, 192.0.2.7"},
			map[string]string{"CHORUS_SIGNUP_LIMIT": "3/h,burst=1", "CHORUS_MAX_STREAMS_PER_USER": "4"}, func(c config) bool {
				return c.PostLimit == redis_rate.Limit{Rate: 5, Period: time.Minute, Burst: 5} && c.FollowLimit.IsZero() &&
					c.ListLimit == redis_rate.Limit{Rate: 7, Period: time.Hour, Burst: 7} &&
					c.SignInLimit == redis_rate.Limit{Rate: 100, Period: 10 * time.Minute, Burst: 7} &&
					c.SignUpLimit == redis_rate.Limit{Rate: 3, Period: time.Hour, Burst: 1} &&
					c.MaxStreamsPerUser == 4 && len(c.TrustedProxies) == 2 && c.TrustedProxies[1].String() == "192.0.2.7/32"
			}, false},
		{"read limit", nil, map[string]string{"CHORUS_READ_LIMIT": "60/1m,burst=30"}, func(c config) bool {
			return c.ReadLimit == redis_rate.Limit{Rate: 60, Period: time.Minute, Burst: 30}
		}, false},
		{"bad rate", []string{"-post-limit", "lots"}, nil, nil, true},
		{"rate without period", []string{"-post-limit", "5"}, nil, nil, true},
		{"bad burst", []string{"-post-limit", "5/m,burst=-1"}, nil, nil, true},
		{"bad rate in env", nil, map[string]string{"CHORUS_POST_LIMIT": "5 per minute"}, nil, true},
		{"sign-in failures cannot be off", []string{"-signin-failures", "off"}, nil, nil, true},
		{"sign-in ceiling per account", nil, map[string]string{"CHORUS_SIGNIN_ACCOUNT_FAILURES": "50/30m"}, func(c config) bool {
			return c.SignInAccount.Rate == 50 && c.SignInAccount.Period == 30*time.Minute
		}, false},
		{"sign-in ceiling per account defaults to 100 an hour", nil, nil, func(c config) bool {
			return c.SignInAccount.Rate == 100 && c.SignInAccount.Period == time.Hour
		}, false},
		{"sign-in ceiling per account cannot be off", []string{"-signin-account-failures", "off"}, nil, nil, true},
		{"bad proxy", []string{"-trusted-proxies", "10.0.0.0/33"}, nil, nil, true},
		{"zero idle timeout", []string{"-idle-timeout", "0s"}, nil, nil, true},
		{"zero streams per user", []string{"-max-streams-per-user", "0"}, nil, nil, true},
		{"account defaults", nil, nil, func(c config) bool {
			return c.Registrations == "open" && c.Admins == nil && c.SessionsPerUser == 100 &&
				c.ProfileLimit == redis_rate.Limit{Rate: 30, Period: time.Hour, Burst: 10} &&
				c.ExportLimit == redis_rate.Limit{Rate: 2, Period: time.Hour, Burst: 2}
		}, false},
		{"registrations and admins", []string{"-admins", " ada, Bob_2 ,"}, map[string]string{"CHORUS_REGISTRATIONS": "approval", "CHORUS_SESSIONS_PER_USER": "5"}, func(c config) bool {
			return c.Registrations == "approval" && len(c.Admins) == 2 && c.Admins[1] == "Bob_2" && c.SessionsPerUser == 5
		}, false},
		{"bad registrations", []string{"-registrations", "invite"}, nil, nil, true},
		{"bad admin", nil, map[string]string{"CHORUS_ADMINS": "ada,no body"}, nil, true},
		{"zero sessions per user", []string{"-sessions-per-user", "0"}, nil, nil, true},
		{"sub-millisecond sign-in window", []string{"-signin-failures", "10/500us"}, nil, nil, true},
		{"sub-millisecond rate", nil, map[string]string{"CHORUS_POST_LIMIT": "5/999999ns"}, nil, true},
		{"millisecond rate", []string{"-signin-failures", "3/1ms"}, nil, func(c config) bool {
			return c.SignInFailures.Rate == 3 && c.SignInFailures.Period == time.Millisecond
		}, false},
		{"flag over a bad environment value", []string{"-max-streams", "5", "-post-limit", "off"},
			map[string]string{"CHORUS_MAX_STREAMS": "abc", "CHORUS_POST_LIMIT": "lots"}, func(c config) bool {
				return c.MaxStreams == 5 && c.PostLimit.IsZero()
			}, false},
		{"heartbeat under 100 ms", []string{"-heartbeat-interval", "9ms"}, nil, nil, true},
		{"heartbeat of a second", []string{"-heartbeat-interval", "1s", "-online-window", "5s"}, nil, func(c config) bool { return c.HeartbeatInterval == time.Second }, false},
		{"streams as many as connections", []string{"-max-streams", "100", "-max-connections", "100"}, nil, nil, true},
		{"streams under connections", []string{"-max-streams", "99", "-max-connections", "100"}, nil, func(c config) bool { return c.MaxStreams == 99 }, false},
		{"request timeout past the write timeout", []string{"-request-timeout", "30s"}, nil, nil, true},
		{"origins", []string{"-allowed-origins", "https://app.example.com, http://localhost:3000/"}, nil, func(c config) bool { return len(c.AllowedOrigins) == 2 }, false},
		{"origin without a scheme", []string{"-allowed-origins", "app.example.com"}, nil, nil, true},
		{"origin with a path", []string{"-allowed-origins", "https://app.example.com/x"}, nil, nil, true},
		{"origin of an app's scheme", nil, map[string]string{"CHORUS_ALLOWED_ORIGINS": "capacitor://localhost"}, func(c config) bool { return len(c.AllowedOrigins) == 1 }, false},
		{"origin with a query", []string{"-allowed-origins", "https://app.example.com?x=1"}, nil, nil, true},
		{"unknown flag", []string{"-nope"}, nil, nil, true},
		{"stray argument", []string{"extra"}, nil, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && !tc.want(c) {
				t.Fatalf("config = %+v", c)
			}
		})
	}
}

// A value refused names where it came from: the flag, or the environment
// variable the operator set.
func TestConfigErrorsNameTheirSource(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, map[string]string{"CHORUS_DRAIN_WINDOW": "-5s"}, "CHORUS_DRAIN_WINDOW (-drain-window) must be 0 or more"},
		{[]string{"-drain-window", "-5s"}, map[string]string{"CHORUS_DRAIN_WINDOW": "5s"}, "-drain-window must be 0 or more"},
		{nil, map[string]string{"CHORUS_MAX_STREAMS": "abc"}, `CHORUS_MAX_STREAMS: want a whole number, got "abc"`},
		{nil, map[string]string{"CHORUS_ALLOWED_ORIGINS": "app.example.com"}, `CHORUS_ALLOWED_ORIGINS (-allowed-origins) names "app.example.com", which is not an origin`},
	} {
		_, err := parseConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("args %q, env %v: err = %v, want it to say %q", tc.args, tc.env, err, tc.want)
		}
	}
}

func TestRateFlagRoundTrip(t *testing.T) {
	for _, s := range []string{"300/3h,burst=10", "5/1m", "20/10s,burst=3", "7/90m"} {
		l, err := parseRate(s)
		if err != nil {
			t.Fatalf("parse %q: %v", s, err)
		}
		back, err := parseRate(formatRate(l))
		if err != nil || back != l {
			t.Fatalf("%q -> %q -> %+v, %v; want %+v", s, formatRate(l), back, err, l)
		}
	}
}
