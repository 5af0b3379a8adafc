package presence

import (
	_ "embed"
	"strings"

	"chorus/internal/luatext"

	"github.com/redis/go-redis/v9"
)

//go:embed clock.lua
var clockSource string

// script is a Redis script of parts, one after the other, after clock.lua,
// whose now_ms each may call.
func script(parts ...string) *redis.Script {
	return redis.NewScript(luatext.Compact(clockSource + "\n" + strings.Join(parts, "\n")))
}
