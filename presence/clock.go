package presence

import (
	"errors"
	"time"
)

// minuteMoved is what the register, heartbeats and counts scripts answer in
// place of the lease (or the count) when the per-minute keys they were handed
// are not those of Redis's minute now: they wrote nothing, and the caller
// runs them again with the keys of the minute they answered.
const minuteMoved = -1

// minuteTries bounds those runs: the minute turns once a minute, and the
// second run has the minute of Redis's own clock.
const minuteTries = 3

var errMinute = errors.New("the minute by Redis's clock kept moving under the script")

// inMinute calls run with the minute (unix s / 60) by Redis's clock now, as
// this instance estimates it, for run to hand the script that minute's keys:
// a script may touch only the keys it is given (Redis Cluster), and which
// minute is current is Redis's to say. run returns Redis's time (unix ms),
// as the script answered it, and whether the script found another minute
// than the one given, in which case it runs again with that one.
func (t *Tracker) inMinute(run func(minute int64) (nowMS int64, moved bool, err error)) error {
	minute := (time.Now().UnixMilli() + t.skew.Load()) / 60_000
	for range minuteTries {
		nowMS, moved, err := run(minute)
		if err != nil {
			return err
		}
		t.skew.Store(nowMS - time.Now().UnixMilli())
		if !moved {
			return nil
		}
		minute = nowMS / 60_000
	}
	return errMinute
}
