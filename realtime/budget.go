package realtime

import (
	"context"
	"fmt"
	"time"
)

// budgetTimeout bounds the Redis call that takes a resume from a budget.
const budgetTimeout = 5 * time.Second

// allowResume takes one resume from uid's budget, shared by all of uid's
// streams on every instance: Options.ResumeLimit, counted in Redis. It
// returns how long to wait before the next when there is none left, or 0.
func (h *Hub) allowResume(ctx context.Context, uid int64) (time.Duration, error) {
	if h.opts.ResumeLimit.IsZero() {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, budgetTimeout)
	defer cancel()
	res, err := h.budgets.Allow(ctx, resumeKey(h.opts.Prefix, uid), h.opts.ResumeLimit)
	if err != nil {
		return 0, fmt.Errorf("resume budget of %d: %w", uid, err)
	}
	if res.Allowed == 0 {
		// Whole seconds, up: a client that waits what it is told is not
		// refused again.
		return max(time.Second, (res.RetryAfter + time.Second - 1).Truncate(time.Second)), nil
	}
	return 0, nil
}
