package deploy_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/protocol"

	"github.com/coder/websocket"
)

// TestSigtermIsClean stops the binary as docker stop and systemd do, with
// SIGTERM, while a stream is open: the stream is drained (a reconnect
// frame saying at once, then 1001), the process exits 0, and it logs
// nothing above INFO on the way.
func TestSigtermIsClean(t *testing.T) {
	t.Parallel()
	prefix := "deploytest:" + rand.Text()[:10] + ":"
	base, p := startChorusProcess(t, "chorus", baseEnv("REDIS_URL="+redistest.URL(t)), "-key-prefix", prefix)
	var s struct{ Token string }
	apiCall(t, "POST", base+"/api/v1/users", nil,
		map[string]string{"login": "leaver", "name": "Leaver", "password": "password-l"}, http.StatusCreated, &s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream := dialStream(ctx, t, "ws"+strings.TrimPrefix(base, "http")+"/api/v1/stream", bearer(s.Token))

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var drain struct {
		Type     string
		WithinMS *int64 `json:"within_ms"`
	}
	for drain.Type != protocol.TypeReconnect {
		_, raw, err := stream.Read(ctx)
		if err != nil {
			t.Fatalf("the stream ended with %v before a reconnect frame", err)
		}
		if err := json.Unmarshal(raw, &drain); err != nil {
			t.Fatal(err)
		}
	}
	if drain.WithinMS == nil || *drain.WithinMS != 0 {
		t.Errorf("reconnect frame says within_ms %v, want 0: at once", drain.WithinMS)
	}
	if _, _, err := stream.Read(ctx); websocket.CloseStatus(err) != protocol.CloseGoingAway {
		t.Errorf("the stream ended with %v, want %d", err, protocol.CloseGoingAway)
	}
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		t.Fatal("chorus did not exit within 15 s of SIGTERM")
	}
	if p.err != nil {
		t.Errorf("chorus exited with %v after SIGTERM, want 0", p.err)
	}
	var last string
	sc := bufio.NewScanner(strings.NewReader(p.out.String()))
	for sc.Scan() {
		var line struct{ Level, Msg string }
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Errorf("not a JSON log line: %q", sc.Text())
			continue
		}
		if line.Level != "INFO" {
			t.Errorf("logged at %s: %s", line.Level, sc.Text())
		}
		last = line.Msg
	}
	if last != "stopped" {
		t.Errorf("last line %q, want stopped", last)
	}
}
