package social

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkConversation measures the Redis CPU of a reply and of reading a
// thread, each on a private redis-server so that its CPU is theirs alone:
// "post" is a plain status by an author of 100 followers, "reply" the same
// author answering someone 50 of those followers follow, with one @mention;
// "thread-read-200" reads the context of a status with 200 replies, as
// GET /statuses/{id}/context does (the thread, then the decoration).
func BenchmarkConversation(b *testing.B) {
	ctx := context.Background()
	setup := func(b *testing.B) (*Service, func() float64, User, User) {
		s, rdb := newPrivateService(b, Options{})
		author, other := signUp(b, s, "author"), signUp(b, s, "other")
		seedFollowers(b, s, author.ID, 100)
		seedFollowersFrom(b, s, other.ID, 1_000_000, 50) // the first 50 of author's
		cpu := redisCPU(b, rdb)
		return s, func() float64 { return (redisCPU(b, rdb) - cpu).Seconds() * 1e6 / float64(b.N) }, author, other
	}
	b.Run("post", func(b *testing.B) {
		s, used, author, _ := setup(b)
		b.ResetTimer()
		for b.Loop() {
			if _, err := s.Post(ctx, author.ID, "benchmark status"); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(used(), "redis-us/op")
	})
	b.Run("reply", func(b *testing.B) {
		s, used, author, other := setup(b)
		parent, err := s.Post(ctx, other.ID, "question")
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for b.Loop() {
			if _, err := s.Reply(ctx, author.ID, parent.ID, "@other benchmark answer"); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(used(), "redis-us/op")
	})
	b.Run("thread-read-200", func(b *testing.B) {
		s, used, author, other := setup(b)
		root, err := s.Post(ctx, other.ID, "root")
		if err != nil {
			b.Fatal(err)
		}
		for i := range MaxDescendants {
			if _, err := s.Reply(ctx, author.ID, root.ID, fmt.Sprint("reply ", i)); err != nil {
				b.Fatal(err)
			}
		}
		b.ResetTimer()
		for b.Loop() {
			t, err := s.Context(ctx, root.ID)
			if err != nil || len(t.Descendants) != MaxDescendants {
				b.Fatalf("context: %d descendants, %v", len(t.Descendants), err)
			}
			if _, err := s.Decorate(ctx, author.ID, t.Descendants); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(used(), "redis-us/op")
	})
}
