package slots_test

import (
	"context"
	"testing"

	"chorus/internal/redistest"
	"chorus/internal/slots"
)

// Of agrees with the cluster's own CLUSTER KEYSLOT on tagged, untagged and
// odd keys.
func TestOfAgreesWithRedis(t *testing.T) {
	rdb, _ := redistest.ClusterClient(t)
	ctx := context.Background()
	for _, key := range []string{
		"foo", "bar", "", "chorus:user:{42}", "chorus:home:{42}", "{}", "{}x", "a{}b{c}",
		"x{a}y{b}", "{unclosed", "}{", "chorus:{presence}:last.seen", "événement:{é}",
	} {
		want, err := rdb.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := slots.Of(key); int64(got) != want {
			t.Errorf("Of(%q) = %d, Redis says %d", key, got, want)
		}
	}
	if slots.Of("chorus:home:{42}") != slots.Of("chorus:events:user:{42}") {
		t.Error("a tag does not keep a user's keys and channel in one slot")
	}
}

func TestTag(t *testing.T) {
	if got := slots.Tag(true, "42"); got != "{42}" {
		t.Errorf("Tag(true) = %q", got)
	}
	if got := slots.Tag(false, "42"); got != "42" {
		t.Errorf("Tag(false) = %q", got)
	}
}
