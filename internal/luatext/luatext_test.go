package luatext_test

import (
	"context"
	"strings"
	"testing"

	"chorus/internal/luatext"
	"chorus/internal/redistest"
)

func TestCompact(t *testing.T) {
	src := "-- Adds one.\n--   and says so\nlocal n = 1\n  -- indented comment\n  if n > 0 then -- trailing\n\treturn n + 1\n  end\n"
	want := "\n\nlocal n = 1\n\nif n > 0 then -- trailing\nreturn n + 1\nend\n"
	if got := luatext.Compact(src); got != want {
		t.Errorf("Compact:\n%q\nwant\n%q", got, want)
	}
	if got := luatext.Compact("return 1 -- no line break"); got != "return 1 -- no line break" {
		t.Errorf("a last line without a break: %q", got)
	}
	if got := luatext.Compact("-- only a comment"); got != "" {
		t.Errorf("a comment without a break: %q", got)
	}
	for _, long := range []string{"local s = [[\n  kept\n]]\n", "--[==[\n  a comment\n]==]\nreturn 1\n"} {
		if got := luatext.Compact(long); got != long {
			t.Errorf("a long bracket changed: %q", got)
		}
	}
}

// TestCompactRunsAndPointsAlike runs a script and its compact text on a
// real Redis: the same answer, and an error at the same line.
func TestCompactRunsAndPointsAlike(t *testing.T) {
	rdb, _ := redistest.Client(t)
	ctx := context.Background()
	src := `-- Sums ARGV, then fails on purpose when asked.
local sum = 0
for _, v in ipairs(ARGV) do
  -- each a number
  sum = sum + tonumber(v)
end
if sum > 100 then
  -- line 9 calls a command that is not there
  return redis.call('NOSUCHCOMMAND')
end
return sum
`
	for _, text := range []string{src, luatext.Compact(src)} {
		if got, err := rdb.Eval(ctx, text, nil, 1, 2, 3).Int(); err != nil || got != 6 {
			t.Fatalf("sum: %d, %v; want 6", got, err)
		}
		err := rdb.Eval(ctx, text, nil, 200).Err()
		if err == nil || !strings.Contains(err.Error(), "user_script:9.") {
			t.Errorf("error %v, want one at user_script:9", err)
		}
	}
	if n, c := len(src), len(luatext.Compact(src)); c >= n*3/4 {
		t.Errorf("compact text %d bytes of %d", c, n)
	}
}
