package social

import "testing"

func TestLuaCode(t *testing.T) {
	src := "-- a comment\nlocal a = 1 -- kept, as the rest of its line\n\n  -- indented\nreturn a\n"
	if got, want := luaCode(src), "local a = 1 -- kept, as the rest of its line\nreturn a\n"; got != want {
		t.Errorf("luaCode = %q, want %q", got, want)
	}
	for _, src := range []string{followersPageSource, pushSource} {
		if got := luaCode(src); len(got) >= len(src) || len(got) == 0 {
			t.Errorf("luaCode kept %d of %d bytes", len(got), len(src))
		}
	}
}
