package social

import (
	"chorus/internal/luatext"

	"github.com/redis/go-redis/v9"
)

// newScript is the Redis script of src's compact text (luatext.Compact):
// many of this package's scripts go by their text (EVAL) in the pipelines
// and transactions they share, where Redis reads and hashes the whole text
// on every call.
func newScript(src string) *redis.Script {
	return redis.NewScript(luatext.Compact(src))
}
