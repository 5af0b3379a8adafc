package main

import (
	"context"
	"fmt"
	"log/slog"
)

// redisLogger sends the Redis client's own messages (failed dials, pool
// trouble) to the structured log.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, fmt.Sprintf(format, v...))
}
