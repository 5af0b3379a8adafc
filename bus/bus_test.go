package bus

import (
	"go/build"
	"strings"
	"testing"

	"chorus/internal/slots"
)

// On a cluster a user's channels carry the uid as hash tag, in the slot of
// the social core's keys of that user, so that a script on those keys can
// publish on them; on one Redis the names stay as they were.
func TestChannelsInTheUsersSlot(t *testing.T) {
	single := &Bus{prefix: "chorus:"}
	for _, tc := range []struct{ got, want string }{
		{single.UserChannel(42), "chorus:events:user:42"},
		{single.AuthorChannel(42), "chorus:events:author:42"},
		{single.Command(), "PUBLISH"},
	} {
		if tc.got != tc.want {
			t.Errorf("on one Redis: got %q, want %q", tc.got, tc.want)
		}
	}
	cluster := &Bus{prefix: "chorus:", cluster: true}
	if got, want := cluster.Command(), "SPUBLISH"; got != want {
		t.Errorf("command on a cluster = %q, want %q", got, want)
	}
	home := "chorus:home:{42}" // social's keys.home(42) on a cluster
	for _, ch := range []string{cluster.UserChannel(42), cluster.AuthorChannel(42)} {
		if slots.Of(ch) != slots.Of(home) {
			t.Errorf("%s is not in user 42's slot", ch)
		}
	}
	if slots.Of(cluster.UserChannel(43)) == slots.Of(home) && slots.Of(cluster.UserChannel(44)) == slots.Of(home) {
		t.Error("users 42, 43 and 44 share a slot: the tags do not spread channels")
	}
}

// The bus is a ground floor beside protocol: it imports the standard
// library, internal/slots and go-redis alone, so that every package that
// publishes may import it.
func TestImportsGroundFloorOnly(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range pkg.Imports {
		std := !strings.Contains(path, ".") && !strings.HasPrefix(path, "chorus/")
		if !std && path != "chorus/internal/slots" && path != "github.com/redis/go-redis/v9" {
			t.Errorf("bus imports %s", path)
		}
	}
}

// On one Redis a frame for many users goes on the frames channel, naming
// them by id; a hub names their channels from the ids as UserChannel does.
// A cluster has no frames channel.
func TestFramesChannel(t *testing.T) {
	single := &Bus{prefix: "chorus:"}
	if got, want := single.FramesChannel(), "chorus:events:frames"; got != want {
		t.Errorf("frames channel %q, want %q", got, want)
	}
	if got, want := single.UserChannelStart()+"42", single.UserChannel(42); got != want {
		t.Errorf("a user's channel from its start %q, want %q", got, want)
	}
	if got, want := string(single.AppendUserChannel([]byte("x"), "42")), "x"+single.UserChannel(42); got != want {
		t.Errorf("AppendUserChannel = %q, want %q", got, want)
	}
	cluster := &Bus{prefix: "chorus:", cluster: true}
	if cluster.FramesChannel() != "" || cluster.UserChannelStart() != "" {
		t.Errorf("on a cluster: frames channel %q, user channels' start %q; want none", cluster.FramesChannel(), cluster.UserChannelStart())
	}
	if got, want := string(cluster.AppendUserChannel(nil, "42")), cluster.UserChannel(42); got != want {
		t.Errorf("AppendUserChannel on a cluster = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		msg, uids, frame string
		ok               bool
	}{
		{"1 2 3\n{\"type\":\"status\"}", "1 2 3", "{\"type\":\"status\"}", true},
		{"1\n{}\n{}", "1", "{}\n{}", true},
		{"1 2 3", "", "", false},
		{"\n{}", "", "", false},
		{"1\n", "", "", false},
	} {
		uids, frame, ok := SplitFrames(tc.msg)
		if ok != tc.ok || ok && (uids != tc.uids || frame != tc.frame) {
			t.Errorf("SplitFrames(%q) = %q, %q, %v; want %q, %q, %v", tc.msg, uids, frame, ok, tc.uids, tc.frame, tc.ok)
		}
	}
}
