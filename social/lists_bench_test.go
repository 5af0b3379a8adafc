package social

import (
	"context"
	"fmt"
	"testing"
)

// seedListsHolding makes n lists, 20 to an owner (uids from 2,000,000 on),
// each holding author alone, directly in Redis as AddListMember leaves
// them (the owners follow the author).
func seedListsHolding(b *testing.B, s *Service, author int64, n int) {
	b.Helper()
	ctx := context.Background()
	k := s.keys
	pipe := s.rdb.Pipeline()
	for i := range n {
		id := int64(i + 1)
		owner := int64(2_000_000 + i/MaxListsPerUser)
		pipe.HSet(ctx, k.list(id), "id", id, "owner", owner, "name", "bench", "created", 1, "members", 1)
		pipe.ZAdd(ctx, k.listsOut(owner), redisZ(float64(id), itoa(id)))
		pipe.ZAdd(ctx, k.following(owner), redisZ(1, itoa(author)))
		pipe.ZAdd(ctx, k.listMembers(id), redisZ(float64(id), itoa(author)))
		pipe.ZAdd(ctx, k.listsIn(author), redisZ(float64(id), itoa(id)))
		if i%500 == 499 {
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	pipe.Set(ctx, k.listSeq(), n, 0)
	pipe.Set(ctx, k.listMemberSeq(), n, 0)
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkListPostCost measures one post by an author in 5,000 lists (and
// followed by nobody else), until every pass of its fan-out has run, in
// Redis CPU time and commands: "pushed" is an author under the pull
// threshold (10,000 followers or lists), "pulled" one past it.
func BenchmarkListPostCost(b *testing.B) {
	const lists = 5_000
	for _, pulled := range []bool{false, true} {
		name := "pushed"
		if pulled {
			name = "pulled"
		}
		b.Run(fmt.Sprintf("lists=%d/%s", lists, name), func(b *testing.B) {
			s, rdb := newPrivateService(b, Options{})
			ctx := context.Background()
			author := signUp(b, s, "author")
			seedListsHolding(b, s, author.ID, lists)
			if pulled {
				rdb.ZAdd(ctx, s.keys.pulledAuthors(), redisZ(1, itoa(author.ID)))
			}
			resetStats(b, rdb)
			cpu := redisCPU(b, rdb)
			b.ResetTimer()
			for b.Loop() {
				job, listJob, err := queuedPostLists(ctx, s, author, !pulled)
				if err != nil {
					b.Fatal(err)
				}
				runJob(b, s, job)
				if listJob != "" {
					runJob(b, s, listJob)
				}
			}
			b.StopTimer()
			used := redisCPU(b, rdb) - cpu
			var calls int64
			for _, n := range commandCalls(b, rdb) {
				calls += n
			}
			b.ReportMetric(float64(used.Microseconds())/1000/float64(b.N), "redis-ms/op")
			b.ReportMetric(float64(calls)/float64(b.N), "cmds/op")
		})
	}
}

// BenchmarkListRead measures reading the newest page of 20 of a list of
// MaxListMembers members of 20 statuses each, none, 50 or all of them
// pulled, in Redis CPU time and commands: the statuses of those not pulled
// are in the list's stored timeline (its newest 1000), the pulled ones'
// only in their profiles.
func BenchmarkListRead(b *testing.B) {
	const members, each = MaxListMembers, 20
	for _, pulled := range []int{0, 50, members} {
		b.Run(fmt.Sprintf("members=%d/pulled=%d", members, pulled), func(b *testing.B) {
			s, rdb := newPrivateService(b, Options{})
			ctx := context.Background()
			k := s.keys
			const id = 1
			pipe := rdb.Pipeline()
			pipe.HSet(ctx, k.list(id), "id", id, "owner", 1, "name", "bench", "created", 1, "members", members)
			for m := range members {
				author := int64(3_000_000 + m)
				pipe.ZAdd(ctx, k.listMembers(id), redisZ(float64(m+1), itoa(author)))
				if m < pulled {
					pipe.ZAdd(ctx, k.pulledAuthors(), redisZ(1, itoa(author)))
				}
				// Member m's i-th status has id i*members+m+1: they take turns.
				for i := range each {
					sid := int64(i*members + m + 1)
					pipe.HSet(ctx, k.status(sid), "id", sid, "uid", author, "login", "a", "name", "A",
						"message", "benchmark status", "posted", 1)
					pipe.ZAdd(ctx, k.profile(author), redisZ(float64(sid), itoa(sid)))
					if m >= pulled {
						pipe.ZAdd(ctx, k.listStatuses(id), redisZ(float64(sid), itoa(sid)))
					}
				}
				if _, err := pipe.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
			pipe.ZRemRangeByRank(ctx, k.listStatuses(id), 0, -1001)
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
			resetStats(b, rdb)
			cpu := redisCPU(b, rdb)
			b.ResetTimer()
			for b.Loop() {
				page, err := s.ListTimeline(ctx, 1, id, Cursor{Limit: 20})
				if err != nil {
					b.Fatal(err)
				}
				if len(page.Statuses) != 20 {
					b.Fatalf("page of %d", len(page.Statuses))
				}
			}
			b.StopTimer()
			used := redisCPU(b, rdb) - cpu
			var calls int64
			for _, n := range commandCalls(b, rdb) {
				calls += n
			}
			b.ReportMetric(float64(used.Microseconds())/float64(b.N), "redis-µs/op")
			b.ReportMetric(float64(calls)/float64(b.N), "cmds/op")
		})
	}
}
