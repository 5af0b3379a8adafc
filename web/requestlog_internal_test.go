package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"chorus/internal/testio"
)

// A request whose client goes away before anything is written logs 499,
// as nginx does; one whose handler writes nothing but is answered logs
// the 200 net/http sends.
func TestRequestLogClientGone(t *testing.T) {
	t.Parallel()
	var out testio.Buffer
	s := &Server{log: slog.New(slog.NewTextHandler(&out, nil))}
	started := make(chan struct{}, 1)
	srv := httptest.NewServer(s.logRequests(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wait" {
			started <- struct{}{}
			<-r.Context().Done() // answers nothing: the client went away
		}
	})))
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/wait", nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-started
		cancel()
	}()
	if _, err := http.DefaultClient.Do(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("GET /wait: %v, want it cancelled", err)
	}
	res, err := http.Get(srv.URL + "/quiet")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /quiet: %d", res.StatusCode)
	}

	testio.Eventually(t, 10*time.Second, func() string {
		log := out.String()
		for _, want := range []string{"path=/wait status=499 ", "path=/quiet status=200 "} {
			if !strings.Contains(log, want) {
				return "no " + want + " in\n" + log
			}
		}
		return ""
	})
}
