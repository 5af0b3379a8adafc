package realtime

import (
	"testing"
	"time"

	"chorus/internal/redistest"

	"github.com/redis/go-redis/v9"
)

// While Redis does not answer, open streams are told the instance cannot
// serve, once; when it answers again, they are told it can.
func TestServiceFrameFollowsRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	// As cmd/chorus makes it: commands end at their context's deadline.
	opt, err := redis.ParseURL(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	opt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	e := newEnv(t, envOptions{
		rdb: rdb,
		hub: Options{HealthInterval: 50 * time.Millisecond},
	})
	ada := e.signUp("ada")
	s := e.connect(ada)

	srv.Pause(t)
	f := s.next(5 * time.Second)
	if f.Type != "service" || f.Available == nil || *f.Available {
		srv.Resume()
		t.Fatalf("with Redis stopped the stream got %+v, want service available=false", f)
	}
	// Several failed pings later, still one frame.
	time.Sleep(300 * time.Millisecond)
	srv.Resume()
	f = s.next(5 * time.Second)
	if f.Type != "service" || f.Available == nil || !*f.Available {
		t.Fatalf("with Redis back the stream got %+v, want service available=true", f)
	}
	st := e.post(ada, "back")
	if f := s.next(5 * time.Second); f.Type != "status" || f.Status.ID != st.ID {
		t.Fatalf("after the service frames the stream got %+v, want status %d", f, st.ID)
	}
}
