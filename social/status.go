package social

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// MaxMessageRunes is the longest status message, counted after trimming.
const MaxMessageRunes = 500

// Status is one posted message, as the API shows it.
type Status = protocol.Status

var userCreatedEvent, _ = json.Marshal(protocol.Internal{Type: protocol.TypeUserCreated})

var (
	//go:embed post.lua
	postSource string
	postScript = redis.NewScript(sharedSource + postSource)

	//go:embed delete.lua
	deleteSource string
	deleteScript = redis.NewScript(deleteSource)
)

var statusFields = []string{"id", "uid", "login", "message", "posted", "name"}

// ValidateMessage trims message and checks it against the API's rules.
func ValidateMessage(message string) (string, error) {
	if !utf8.ValidString(message) {
		return "", invalid("message", "must be valid UTF-8")
	}
	message = strings.TrimSpace(message)
	if n := utf8.RuneCountInString(message); n == 0 || n > MaxMessageRunes {
		return "", invalid("message", "must be 1 to %d characters after trimming", MaxMessageRunes)
	}
	if strings.ContainsFunc(message, forbiddenInMessage) {
		return "", invalid("message", "must not contain control characters other than tab, newline and carriage return")
	}
	return message, nil
}

// forbiddenInMessage reports whether r may not appear in a message: a control
// character (C0, DEL, C1) other than tab, newline and carriage return.
func forbiddenInMessage(r rune) bool {
	return unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r'
}

// Post publishes a status by uid: it is in the author's timelines and the
// global one when Post returns, and in followers' home timelines and the
// timelines of lists that hold the author after the fan-out jobs, whose
// first passes run before Post returns.
func (s *Service) Post(ctx context.Context, uid int64, message string) (Status, error) {
	st, job, listJob, err := s.queuePost(ctx, uid, message)
	if err != nil {
		return Status{}, err
	}
	if job != "" {
		s.inlinePass(ctx, job)
	}
	if listJob != "" {
		s.inlinePass(ctx, listJob)
	}
	return st, nil
}

// Bits of what the post and delete scripts answer: the jobs they queued.
const (
	queuedFollowersJob = 1
	queuedListsJob     = 2
)

// queuePost writes a status and queues its fan-out jobs, whose keys it
// returns: the followers' ("" when it has no followers to push to) and the
// lists' ("" when no list holds the author).
func (s *Service) queuePost(ctx context.Context, uid int64, message string) (st Status, job, listJob string, err error) {
	message, err = ValidateMessage(message)
	if err != nil {
		return Status{}, "", "", err
	}
	pipe := s.rdb.Pipeline()
	author := pipe.HMGet(ctx, s.keys.user(uid), "login", "name")
	sid := pipe.Incr(ctx, s.keys.statusSeq())
	now := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil {
		return Status{}, "", "", fmt.Errorf("post by %d: %w", uid, err)
	}
	login, _ := author.Val()[0].(string)
	name, _ := author.Val()[1].(string)
	if login == "" {
		return Status{}, "", "", ErrUserNotFound
	}
	st = Status{
		ID: sid.Val(), UID: uid, Login: login, Name: name, Message: message,
		Posted: now.Val().UTC().Truncate(time.Millisecond),
	}
	payload, err := json.Marshal(protocol.StatusFrame{Type: protocol.TypeStatus, Status: st})
	if err != nil {
		return Status{}, "", "", fmt.Errorf("post by %d: %w", uid, err)
	}
	k := s.keys
	job, listJob = k.job(postJobID(st.ID)), k.job(listPostJobID(st.ID))
	res, err := postScript.Run(ctx, s.rdb, []string{
		k.user(uid), k.status(st.ID), k.profile(uid), k.home(uid), k.global(),
		k.followers(uid), k.jobs(), job, k.followSeq(), k.pulledAuthors(), k.job(promoteJobID(uid)),
		k.listsIn(uid), listJob, k.listMemberSeq(),
	}, st.ID, uid, st.Login, st.Message, st.Posted.UnixMilli(),
		s.opts.HomeSize, s.opts.GlobalSize, payload, k.userChannel(uid), st.Name,
		k.authorChannel(uid), max(0, s.opts.PullThreshold)).Int()
	if err != nil {
		return Status{}, "", "", fmt.Errorf("post by %d: %w", uid, err)
	}
	if res < 0 {
		return Status{}, "", "", ErrUserNotFound
	}
	if res&queuedFollowersJob == 0 {
		job = ""
	}
	if res&queuedListsJob == 0 {
		listJob = ""
	}
	return st, job, listJob, nil
}

// Status returns one status.
func (s *Service) Status(ctx context.Context, id int64) (Status, error) {
	sts, err := s.statusesByID(ctx, []int64{id})
	if err != nil {
		return Status{}, fmt.Errorf("status %d: %w", id, err)
	}
	if len(sts) == 0 {
		return Status{}, ErrStatusNotFound
	}
	return sts[0], nil
}

// DeleteStatus deletes status id, which uid must own. It is gone from every
// read when DeleteStatus returns; followers' home timelines and the
// timelines of lists that hold its author are cleaned by background jobs
// whose first passes run before it returns.
func (s *Service) DeleteStatus(ctx context.Context, uid, id int64) error {
	payload, err := json.Marshal(protocol.StatusDeleted{Type: protocol.TypeStatusDeleted, ID: id})
	if err != nil {
		return fmt.Errorf("delete status %d: %w", id, err)
	}
	k := s.keys
	job := k.job(deleteJobID(id))
	listJob := k.job(listDeleteJobID(id))
	res, err := deleteScript.Run(ctx, s.rdb, []string{
		k.status(id), k.user(uid), k.profile(uid), k.home(uid), k.global(),
		k.followers(uid), k.jobs(), job, k.pulledAuthors(), k.listsIn(uid), listJob,
	}, id, uid, payload, k.userChannel(uid), k.authorChannel(uid)).Int()
	if err != nil {
		return fmt.Errorf("delete status %d: %w", id, err)
	}
	switch {
	case res == -1:
		return ErrStatusNotFound
	case res == -2:
		return ErrNotOwner
	}
	if res&queuedFollowersJob != 0 {
		s.inlinePass(ctx, job)
	}
	if res&queuedListsJob != 0 {
		s.inlinePass(ctx, listJob)
	}
	return nil
}

// statusesByID reads statuses in one round trip, in the order given, leaving
// out those deleted.
func (s *Service) statusesByID(ctx context.Context, ids []int64) ([]Status, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HMGet(ctx, s.keys.status(id), statusFields...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]Status, 0, len(ids))
	for _, c := range cmds {
		v := c.Val()
		str := func(i int) string { s, _ := v[i].(string); return s }
		if str(0) == "" {
			continue
		}
		id, _ := strconv.ParseInt(str(0), 10, 64)
		uid, _ := strconv.ParseInt(str(1), 10, 64)
		out = append(out, Status{ID: id, UID: uid, Login: str(2), Message: str(3), Posted: unixMilli(str(4)), Name: str(5)})
	}
	return out, nil
}
