package social

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	"golang.org/x/text/cases"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// The user search index is one sorted set whose members all score 0, so
// that ZRANGEBYLEX reads them by prefix: "<term>\x00<uid>", where the terms
// of a user are their login, their name, and each later word of the name,
// all folded (foldTerm). "Ada Lovelace" (ada_l) is found by "ada", "love" and
// "lovelace". A search costs O(log N + searchWindow) whatever the population.

// Search limits.
const (
	MaxQueryRunes  = 64
	MaxSearchLimit = 50
	maxNameWords   = 8 // words of a name indexed beyond the whole name

	// searchWindow is how many index entries a search reads, in the
	// order of their terms, before it ranks the users they name: the
	// ranking can only lift a user whose entries lie in it. A user has
	// at most maxNameWords+2 entries, and an entry whose term is the whole
	// query comes before every longer one.
	searchWindow = 200
)

// foldTerm is the form of a term the index holds and a query is read with:
// compatibility forms made plain (NFKC: "ﬁ" is "fi", a full-width "Ａ" is
// "A"), accents and other combining marks taken off, and cases folded by
// Unicode's full case folding (not lower-cased letter by letter), so that
// "ΣΊΣΥΦΟΣ" finds "Σίσυφος" and "STRASSE" finds "Straße".
func foldTerm(s string) string {
	// The transformers keep state: a chain per call.
	t := transform.Chain(norm.NFKD, runes.Remove(runes.In(unicode.Mn)), cases.Fold(), norm.NFKC)
	folded, _, err := transform.String(t, s)
	if err != nil { // only on invalid input, which no caller passes
		return strings.ToLower(s)
	}
	return folded
}

// searchTerms are the terms of one user, folded by fold.
func searchTerms(login, name string, fold func(string) string) []string {
	terms := []string{fold(login)}
	name = fold(name)
	terms = append(terms, name)
	words := strings.Fields(name)
	for i := 1; i < len(words) && i <= maxNameWords; i++ {
		terms = append(terms, strings.Join(words[i:], " "))
	}
	terms = slices.DeleteFunc(terms, func(t string) bool { return t == "" })
	slices.Sort(terms)
	return slices.Compact(terms)
}

// searchEntries are the index members of one user. A change of login or
// name must take the entries of the old ones out and put these in.
func searchEntries(uid int64, login, name string) []string {
	return indexEntries(uid, searchTerms(login, name, foldTerm))
}

// lowerSearchEntries are the members an index written before terms were
// folded held for one user (lower-cased rune by rune); the build takes
// those that differ out.
func lowerSearchEntries(uid int64, login, name string) []string {
	return indexEntries(uid, searchTerms(login, name, strings.ToLower))
}

func indexEntries(uid int64, terms []string) []string {
	id := itoa(uid)
	for i, t := range terms {
		terms[i] = t + "\x00" + id
	}
	return terms
}

// NormalizeQuery turns a search as typed into the prefix the index is read
// with: trimmed, without a leading "@", folded as the index's terms are.
func NormalizeQuery(q string) (string, error) {
	if !utf8.ValidString(q) {
		return "", invalid("q", "must be valid UTF-8")
	}
	q = strings.TrimPrefix(strings.TrimSpace(q), "@")
	switch {
	case q == "":
		return "", invalid("q", "must not be empty")
	case utf8.RuneCountInString(q) > MaxQueryRunes:
		return "", invalid("q", "must be at most %d characters", MaxQueryRunes)
	case strings.ContainsFunc(q, forbiddenInName):
		return "", invalid("q", "must not contain control characters")
	}
	if q = foldTerm(q); q == "" {
		return "", invalid("q", "must contain more than accents or combining marks")
	}
	return q, nil
}

// searchCandidate is a user whose index entries matched a search.
type searchCandidate struct {
	uid       int64
	login     bool    // their login is the query
	followed  bool    // the searcher follows them
	followers float64 // their follower count
	exact     bool    // one of their terms is the query, not only starts with it
	blocked   bool    // the viewer blocks them or they block the viewer: left out
	suspended bool    // in the list of suspended accounts: left out
	pending   bool    // waits for an admin's approval: left out
	order     int     // where their first entry lay in the window
}

// SearchUsers finds up to limit users whose login, name or a later word of
// their name starts with q, matched as foldTerm folds them, for viewer (0
// for a visitor). Each user is listed once, ranked by what an attacker
// cannot make cheaply, before the limit is applied: the user whose login is
// q, then those viewer follows, then by follower count, then those with a
// term that is q itself, then in the order of the matched text; those
// viewer blocks or who block viewer, suspended accounts, and accounts that
// wait for approval (which the login index leads to, and the index holds
// no entry of) are left out first, so that a page is short only when fewer
// match. Its Redis work is
// bounded: three round trips (up to searchRefills more, rarely), reading
// searchWindow index entries, a few scores for each user they name, and the
// users listed.
func (s *Service) SearchUsers(ctx context.Context, viewer int64, q string, limit int) ([]User, error) {
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
		Min: "[" + q, Max: "[" + q + "\xff", Count: searchWindow,
	})
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("search %q: %w", q, err)
	}

	var cands []searchCandidate
	at := map[int64]int{}
	add := func(uid int64) *searchCandidate {
		i, ok := at[uid]
		if !ok {
			i = len(cands)
			at[uid] = i
			cands = append(cands, searchCandidate{uid: uid, order: i})
		}
		return &cands[i]
	}
	if exact != nil {
		// A deleted account's login is held for no one (0).
		if uid, err := exact.Int64(); err == nil && uid > 0 {
			add(uid).login = true
		}
	}
	for _, e := range entries.Val() {
		term, raw, ok := strings.Cut(e, "\x00")
		if uid, err := strconv.ParseInt(raw, 10, 64); ok && err == nil {
			c := add(uid)
			c.exact = c.exact || term == q
		}
	}
	if len(cands) == 0 {
		return nil, nil
	}
	if err := s.scoreCandidates(ctx, viewer, cands); err != nil {
		return nil, fmt.Errorf("search %q: %w", q, err)
	}
	// Left out before the limit is applied, so that they take no place of
	// the page (usersByID leaves out, too, one suspended since the list
	// was read).
	cands = slices.DeleteFunc(cands, func(c searchCandidate) bool { return c.blocked || c.suspended || c.pending })
	slices.SortStableFunc(cands, func(a, b searchCandidate) int {
		switch {
		case a.login != b.login:
			return boolFirst(a.login)
		case a.followed != b.followed:
			return boolFirst(a.followed)
		case a.followers != b.followers:
			return cmp.Compare(b.followers, a.followers)
		case a.exact != b.exact:
			return boolFirst(a.exact)
		}
		return cmp.Compare(a.order, b.order)
	})
	// The users, in order: an account usersByID leaves out (one being
	// deleted, whose entries its job has not taken out yet, or suspended
	// since the list was read) has the next candidates read in its place,
	// searchRefills times at most.
	users := make([]User, 0, limit)
	for next, round := 0, 0; len(users) < limit && next < len(cands) && round <= searchRefills; round++ {
		end := min(next+limit-len(users), len(cands))
		ids := make([]int64, 0, end-next)
		for _, c := range cands[next:end] {
			ids = append(ids, c.uid)
		}
		got, err := s.usersByID(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("search %q: %w", q, err)
		}
		users, next = append(users, got...), end
	}
	return users, nil
}

// searchRefills bounds the reads of a search's users past its first: each
// reads as many as its page still lacks.
const searchRefills = 2

// boolFirst orders a candidate with a property before one without.
func boolFirst(has bool) int {
	if has {
		return -1
	}
	return 1
}

// scoreCandidates reads, in one round trip, the follower count of each
// candidate, whether viewer follows them, whether either blocks the other,
// and whether the candidate is suspended or waits for approval. Mutes are
// not read: muting hides statuses, not accounts.
func (s *Service) scoreCandidates(ctx context.Context, viewer int64, cands []searchCandidate) error {
	members := make([]string, len(cands))
	for i, c := range cands {
		members[i] = itoa(c.uid)
	}
	k := s.keys
	pipe := s.rdb.Pipeline()
	// ZMSCORE reads a missing member as 0: no followers, not followed
	// (follow scores come from a sequence and are never 0), not blocked,
	// suspended or pending (those scores are times).
	followers := pipe.ZMScore(ctx, k.popular(), members...)
	suspended := pipe.ZMScore(ctx, k.suspended(), members...)
	pending := pipe.ZMScore(ctx, k.pendingUsers(), members...)
	var followed, blocks, blockedBy *redis.FloatSliceCmd
	if viewer > 0 {
		followed = pipe.ZMScore(ctx, k.following(viewer), members...)
		blocks = pipe.ZMScore(ctx, k.blocks(viewer), members...)
		blockedBy = pipe.ZMScore(ctx, k.blockedBy(viewer), members...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	if blocks != nil {
		for i := range cands {
			cands[i].blocked = blocks.Val()[i] != 0 || blockedBy.Val()[i] != 0
		}
	}
	for i, n := range followers.Val() {
		cands[i].followers = n
	}
	for i, at := range suspended.Val() {
		cands[i].suspended = at != 0
	}
	for i, at := range pending.Val() {
		cands[i].pending = at != 0
	}
	if followed != nil {
		for i, sc := range followed.Val() {
			cands[i].followed = sc != 0
		}
	}
	return nil
}

// Index build: users created before the search index and the follower
// ranking existed, or before the index held folded terms, are indexed once,
// in batches, by whichever instance starts first; a build cut short is begun
// again by the next start.
const (
	indexBatch     = 500
	indexBuildLock = 10 * time.Minute
)

// BuildIndexes adds every user to the search index, with folded terms, and
// to the ranking by follower count, unless that was done already. An index
// written before terms were folded (users:search:built set, not
// users:search:folded) is rewritten by it: each user's entries that
// lower-casing made and folding does not are taken out, the folded ones put
// in. Until it is done, a search misses those whose names folding changes
// (those with accents, ß, final sigma...). It reads and writes one batch of
// users at a time: four round trips per indexBatch users (see indexUsers),
// and the ranking's (syncRank). Accounts suspended are indexed, those that
// wait for approval are not. Sign-up, approval, renames and follows keep
// both up to date afterwards; indexing a user twice changes nothing.
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
	pipe := s.rdb.Pipeline()
	pipe.Set(ctx, s.keys.searchIndexBuilt(), "done", 0)
	pipe.Del(ctx, s.keys.searchIndexLowerBuilt())
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("build user indexes: %w", err)
	}
	log.Info("user search index built", "users", n)
	return nil
}

// indexUsers indexes the users of login index pairs (login, uid, ...),
// taking out the entries of an index from before terms were folded. An
// account suspended is indexed (searches leave it out while it is, by
// users:suspended, and find it once the suspension is lifted, which indexes
// nothing); one that waits for approval is not (Approve indexes it). Every
// account read is ranked.
//
// The users are read a round trip before their entries are written: an
// account renamed or deleted in between (whose own change took the entries
// out, or will find none) would have stale entries put back. So, as
// reindexName does, the names and deletion marks are read again after the
// write, and the entries they no longer give are taken out.
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
	k := s.keys
	fields := append(slices.Clone(userFields), "pending")
	pipe := s.rdb.Pipeline()
	reads := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		reads[i] = pipe.HMGet(ctx, k.user(id), fields...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	var (
		ranked  []int64
		indexed []User
		entries []redis.Z
		stale   []any
	)
	for _, c := range reads {
		u, ok := parseUser(c.Val())
		if !ok {
			continue // gone, or being deleted
		}
		ranked = append(ranked, u.ID)
		if c.Val()[len(userFields)] != nil {
			continue // waits for approval
		}
		indexed = append(indexed, u)
		folded := searchEntries(u.ID, u.Login, u.Name)
		for _, e := range folded {
			entries = append(entries, redis.Z{Member: e})
		}
		for _, e := range lowerSearchEntries(u.ID, u.Login, u.Name) {
			if !slices.Contains(folded, e) {
				stale = append(stale, e)
			}
		}
	}
	if len(ranked) == 0 {
		return nil
	}
	if len(entries) > 0 || len(stale) > 0 {
		pipe = s.rdb.Pipeline()
		if len(entries) > 0 {
			pipe.ZAdd(ctx, k.searchIndex(), entries...)
		}
		if len(stale) > 0 {
			pipe.ZRem(ctx, k.searchIndex(), stale...)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
	}
	if err := s.unindexChanged(ctx, indexed); err != nil {
		return err
	}
	return s.syncRank(ctx, ranked...)
}

// unindexChanged reads again the names and deletion marks of users, whose
// entries were just written as users holds them, and takes out the entries
// of those renamed since (the ones the new name does not give: the rename
// writes its own) or deleted since (all of them): one round trip, and one
// more where any changed.
func (s *Service) unindexChanged(ctx context.Context, users []User) error {
	if len(users) == 0 {
		return nil
	}
	pipe := s.rdb.Pipeline()
	marks := make([]*redis.SliceCmd, len(users))
	for i, u := range users {
		marks[i] = pipe.HMGet(ctx, s.keys.user(u.ID), "id", "name", "deleted")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	var gone []any
	for i, u := range users {
		mark := marks[i].Val()
		name, _ := mark[1].(string)
		if mark[0] != nil && mark[2] == nil && name == u.Name {
			continue
		}
		var now []string
		if mark[0] != nil && mark[2] == nil {
			now = searchEntries(u.ID, u.Login, name)
		}
		for _, e := range searchEntries(u.ID, u.Login, u.Name) {
			if !slices.Contains(now, e) {
				gone = append(gone, e)
			}
		}
	}
	if len(gone) == 0 {
		return nil
	}
	return s.rdb.ZRem(ctx, s.keys.searchIndex(), gone...).Err()
}
