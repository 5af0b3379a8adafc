package social

import "strings"

// luaCode returns a Lua script without its comment lines and blank lines,
// for a script sent as EVAL, with its text, on a post's hot path: Redis
// reads and hashes the text of each EVAL. A line that opens a long comment
// or string ("--[[", "[[") would make this wrong, so such a script is
// refused when the package loads.
func luaCode(src string) string {
	if strings.Contains(src, "[[") {
		panic("luaCode: a script with a long string or comment")
	}
	var b strings.Builder
	for line := range strings.Lines(src) {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}
