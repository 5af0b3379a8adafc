package presence

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// BenchmarkOpen measures a reconnect storm's registrations on one
// redis-server: 10,000 users online, each with three friends, reopening in
// batches of openBatch (a new connection each, their old one still
// registered, as after an instance's crash). An op is one connection's
// Open; it reports the Redis time (commandstats of the scripts) per op, of
// the registration and of the read of online friends apart.
func BenchmarkOpen(b *testing.B) {
	const users, openBatch = 10_000, 25
	e := newEnv(b)
	b.Cleanup(func() { dropPrefix(e) })
	tr := e.tracker(b, Options{Window: benchWindow})
	ctx := context.Background()
	var beats []Beat
	pipe := e.rdb.Pipeline()
	for uid := int64(1); uid <= users; uid++ {
		beats = append(beats, Beat{UID: uid, ConnID: "old" + strconv.FormatInt(uid, 10)})
		var friends []redis.Z
		for j := int64(1); j <= 3; j++ {
			friends = append(friends, redis.Z{Member: (uid+j*97)%users + 1})
		}
		pipe.ZAdd(ctx, e.friendsKey(uid), friends...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := tr.register(ctx, beats, 0); err != nil {
		b.Fatal(err)
	}
	if _, err := tr.OnlineFriends(ctx, 1); err != nil { // the shared copy, made
		b.Fatal(err)
	}
	scripts := []string{"evalsha", "eval"}
	var regUS, friendsUS float64
	b.ResetTimer()
	for i := 0; i < b.N; i += openBatch {
		n := min(openBatch, b.N-i)
		conns := make([]Beat, n)
		uids := make([]int64, n)
		for j := range conns {
			uid := int64((i+j)%users + 1)
			conns[j] = Beat{UID: uid, ConnID: "new" + strconv.Itoa(i+j)}
			uids[j] = uid
		}
		before := serverMicros(b, e, scripts)
		if _, err := tr.register(ctx, conns, 10); err != nil {
			b.Fatal(err)
		}
		mid := serverMicros(b, e, scripts)
		if _, err := tr.onlineFriendsOf(ctx, uids); err != nil {
			b.Fatal(err)
		}
		regUS += mid - before
		friendsUS += serverMicros(b, e, scripts) - mid
	}
	b.ReportMetric(regUS/float64(b.N), "register-µs/op")
	b.ReportMetric(friendsUS/float64(b.N), "friends-µs/op")
}
