package social

import (
	"sync"
	"time"
)

// maxTouches bounds the users an instance remembers noting active: when it
// is full it starts again empty, and each user costs one more round trip.
const maxTouches = 1 << 17

// touches remembers which users this instance noted active lately, so that
// most signed-in requests cost Authenticate one round trip, not two. It only
// spares writes Redis would skip anyway (the activity script writes once
// per touchEvery), so an instance that forgets loses nothing.
type touches struct {
	every time.Duration

	mu sync.Mutex
	at map[int64]time.Time
}

func newTouches(every time.Duration) *touches {
	return &touches{every: every, at: map[int64]time.Time{}}
}

// recent reports whether uid was noted by this instance within every.
func (t *touches) recent(uid int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.at[uid]
	return ok && time.Since(at) < t.every
}

// note remembers that uid was noted active now.
func (t *touches) note(uid int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.at) >= maxTouches {
		clear(t.at)
	}
	t.at[uid] = time.Now()
}

// inactiveAfter is Options.InactiveAfter, 0 for never.
func (s *Service) inactiveAfter() time.Duration { return max(0, s.opts.InactiveAfter) }

// touchEvery is how often, at most, a user's activity is written: hourly,
// or more often when InactiveAfter is short (tests).
func (s *Service) touchEvery() time.Duration {
	if d := s.inactiveAfter(); d > 0 {
		return min(time.Hour, d/4)
	}
	return time.Hour
}
