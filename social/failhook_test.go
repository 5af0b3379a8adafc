package social

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"chorus/internal/redistest"

	"github.com/redis/go-redis/v9"
)

// errInjected is the error failHook makes commands fail with.
var errInjected = errors.New("injected redis failure")

// failHook fails, while on, each command its match picks (anyOf, allOf,
// naming). A pipeline holding one fails whole, unless alone: then the
// commands picked fail and the others run, as when Redis refuses one
// command. With lost, the commands run first: their answer is lost.
type failHook struct {
	on, lost, alone atomic.Bool

	mu    sync.Mutex
	match func(redis.Cmder) bool
}

// set makes match pick the commands to fail.
func (h *failHook) set(match func(redis.Cmder) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.match = match
}

func (h *failHook) fails(c redis.Cmder) bool {
	if !h.on.Load() {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.match != nil && h.match(c)
}

func (h *failHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *failHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error {
		if !h.fails(c) {
			return next(ctx, c)
		}
		if h.lost.Load() {
			_ = next(ctx, c)
		}
		c.SetErr(errInjected)
		return errInjected
	}
}

func (h *failHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var picked, rest []redis.Cmder
		for _, c := range cmds {
			if h.fails(c) {
				picked = append(picked, c)
			} else {
				rest = append(rest, c)
			}
		}
		switch {
		case len(picked) == 0:
			return next(ctx, cmds)
		case h.alone.Load():
			if h.lost.Load() {
				_ = next(ctx, picked)
			}
			for _, c := range picked {
				c.SetErr(errInjected)
			}
			if len(rest) == 0 {
				return errInjected
			}
			// As Redis's own error of one command: the pipeline answers
			// its commands' first error, in their order.
			return next(ctx, rest)
		}
		if h.lost.Load() {
			_ = next(ctx, cmds)
		}
		for _, c := range cmds {
			c.SetErr(errInjected)
		}
		return errInjected
	}
}

// failingService is a Service whose Redis commands h fails while on, where
// match picks (nil for none, until h.set).
func failingService(t *testing.T, opts Options, match func(redis.Cmder) bool) (*Service, *failHook) {
	t.Helper()
	base, prefix := redistest.Backend(t)
	h := &failHook{match: match}
	opts.Prefix, opts.BcryptCost = prefix, 4
	return New(redistest.WithHook(t, base, h), opts), h
}

// failing runs f with h on, and fails the test unless f fails with h's
// error.
func (h *failHook) failing(t *testing.T, what string, f func() error) {
	t.Helper()
	h.on.Store(true)
	err := f()
	h.on.Store(false)
	if !errors.Is(err, errInjected) {
		t.Fatalf("%s: %v, want the injected failure", what, err)
	}
}

// cmdLine is a command as the matches read it: its name in lower case,
// then its string arguments.
func cmdLine(c redis.Cmder) string {
	line := strings.ToLower(c.Name())
	for _, a := range c.Args()[1:] {
		if s, ok := a.(string); ok {
			line += " " + s
		}
	}
	return line
}

// anyOf picks the commands whose line contains one of parts ("" picks
// every command).
func anyOf(parts ...string) func(redis.Cmder) bool {
	return func(c redis.Cmder) bool {
		line := cmdLine(c)
		for _, p := range parts {
			if strings.Contains(line, p) {
				return true
			}
		}
		return false
	}
}

// allOf picks the commands whose line contains every one of parts.
func allOf(parts ...string) func(redis.Cmder) bool {
	return func(c redis.Cmder) bool {
		line := cmdLine(c)
		for _, p := range parts {
			if !strings.Contains(line, p) {
				return false
			}
		}
		return true
	}
}

// naming picks the commands that name key.
func naming(key string) func(redis.Cmder) bool {
	return func(c redis.Cmder) bool {
		for _, a := range c.Args() {
			if s, ok := a.(string); ok && s == key {
				return true
			}
		}
		return false
	}
}
