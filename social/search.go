package social

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// The user search index is one sorted set whose members all score 0, so
// that ZRANGEBYLEX reads them by prefix: "<term>\x00<uid>", where the terms
// of a user are their lower-case login, their lower-case name, and each later
// word of the name. "Ada Lovelace" (ada_l) is found by "ada", "love" and
// "lovelace". A search costs O(log N + limit) whatever the population.

// Search limits.
const (
	MaxQueryRunes   = 64
	MaxSearchLimit  = 50
	maxNameWords    = 8 // words of a name indexed beyond the whole name
	searchOverfetch = 4 // entries read per result wanted: a user has several
)

// searchEntries are the index members of one user.
func searchEntries(uid int64, login, name string) []string {
	terms := []string{strings.ToLower(login)}
	name = strings.ToLower(name)
	terms = append(terms, name)
	words := strings.Fields(name)
	for i := 1; i < len(words) && i <= maxNameWords; i++ {
		terms = append(terms, strings.Join(words[i:], " "))
	}
	slices.Sort(terms)
	terms = slices.Compact(terms)
	id := itoa(uid)
	for i, t := range terms {
		terms[i] = t + "\x00" + id
	}
	return terms
}

// NormalizeQuery turns a search as typed into the prefix the index is read
// with: trimmed, without a leading "@", lower-case.
func NormalizeQuery(q string) (string, error) {
	if !utf8.ValidString(q) {
		return "", invalid("q", "must be valid UTF-8")
	}
	q = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(q), "@"))
	switch {
	case q == "":
		return "", invalid("q", "must not be empty")
	case utf8.RuneCountInString(q) > MaxQueryRunes:
		return "", invalid("q", "must be at most %d characters", MaxQueryRunes)
	case strings.ContainsFunc(q, forbiddenInName):
		return "", invalid("q", "must not contain control characters")
	}
	return q, nil
}

// SearchUsers finds up to limit users whose login, name or a later word of
// their name starts with q (ignoring case), the user whose login is q first,
// then in the order of the matched text.
func (s *Service) SearchUsers(ctx context.Context, q string, limit int) ([]User, error) {
	q, err := NormalizeQuery(q)
	if err != nil {
		return nil, err
	}
	limit = min(max(limit, 1), MaxSearchLimit)
	pipe := s.rdb.Pipeline()
	var exact *redis.StringCmd
	if ValidLogin(q) {
		exact = pipe.HGet(ctx, s.keys.loginIndex(), q)
	}
	entries := pipe.ZRangeByLex(ctx, s.keys.searchIndex(), &redis.ZRangeBy{
		Min: "[" + q, Max: "[" + q + "\xff", Count: int64(limit * searchOverfetch),
	})
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("search %q: %w", q, err)
	}
	var ids []int64
	seen := map[int64]bool{}
	add := func(id int64) {
		if !seen[id] && len(ids) < limit {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if exact != nil {
		if id, err := exact.Int64(); err == nil {
			add(id)
		}
	}
	for _, e := range entries.Val() {
		_, raw, ok := strings.Cut(e, "\x00")
		if id, err := strconv.ParseInt(raw, 10, 64); ok && err == nil {
			add(id)
		}
	}
	users, err := s.usersByID(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", q, err)
	}
	return users, nil
}

// Index build: users created before the search index and the follower
// ranking existed are added once, in batches, by whichever instance starts
// first; a build cut short is begun again by the next start.
const (
	indexBatch     = 500
	indexBuildLock = 10 * time.Minute
)

// BuildIndexes adds every user to the search index and the ranking by
// follower count, unless that was done already. Sign-up and follows keep
// both up to date afterwards; adding a user twice changes nothing.
func (s *Service) BuildIndexes(ctx context.Context, log *slog.Logger) (err error) {
	err = s.rdb.SetArgs(ctx, s.keys.searchIndexBuilt(), "building", redis.SetArgs{
		Mode: "NX", TTL: indexBuildLock,
	}).Err()
	if errors.Is(err, redis.Nil) {
		return nil // built, or being built
	}
	if err != nil {
		return fmt.Errorf("build user indexes: %w", err)
	}
	defer func() {
		if err != nil { // let the next start try again at once
			s.rdb.Del(context.WithoutCancel(ctx), s.keys.searchIndexBuilt())
		}
	}()
	n := 0
	var cursor uint64
	for {
		pairs, next, err := s.rdb.HScan(ctx, s.keys.loginIndex(), cursor, "*", indexBatch).Result()
		if err != nil {
			return fmt.Errorf("build user indexes: %w", err)
		}
		if err := s.indexUsers(ctx, pairs); err != nil {
			return fmt.Errorf("build user indexes: %w", err)
		}
		n += len(pairs) / 2
		if cursor = next; cursor == 0 {
			break
		}
	}
	if err := s.rdb.Set(ctx, s.keys.searchIndexBuilt(), "done", 0).Err(); err != nil {
		return fmt.Errorf("build user indexes: %w", err)
	}
	log.Info("user search index built", "users", n)
	return nil
}

// indexUsers indexes the users of login index pairs (login, uid, ...).
func (s *Service) indexUsers(ctx context.Context, pairs []string) error {
	var ids []int64
	for i := 1; i < len(pairs); i += 2 {
		if id, err := strconv.ParseInt(pairs[i], 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	users, err := s.usersByID(ctx, ids)
	if err != nil {
		return err
	}
	if len(users) == 0 {
		return nil
	}
	var entries []redis.Z
	ranked := make([]int64, len(users))
	for i, u := range users {
		for _, e := range searchEntries(u.ID, u.Login, u.Name) {
			entries = append(entries, redis.Z{Member: e})
		}
		ranked[i] = u.ID
	}
	if err := s.rdb.ZAdd(ctx, s.keys.searchIndex(), entries...).Err(); err != nil {
		return err
	}
	return s.syncRank(ctx, ranked...)
}
