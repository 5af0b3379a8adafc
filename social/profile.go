package social

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"chorus/protocol"

	"github.com/redis/go-redis/v9"
)

// MaxBioRunes is the longest bio, counted after trimming.
const MaxBioRunes = 300

var (
	//go:embed profile.lua
	profileSource string
	profileScript = newScript(profileSource)
)

// ProfileEdit is a change of a user's profile; a nil field is left as it
// is.
type ProfileEdit struct {
	Name *string
	Bio  *string
}

// validateBio trims a bio and checks it: valid UTF-8, at most MaxBioRunes
// characters, none that a name may not hold. It is plain text: the client
// shows it as text, links made links, never as HTML.
func validateBio(bio string) (string, error) {
	bio = strings.TrimSpace(bio)
	switch {
	case !utf8.ValidString(bio):
		return "", invalid("bio", "must be valid UTF-8")
	case utf8.RuneCountInString(bio) > MaxBioRunes:
		return "", invalid("bio", "must be at most %d characters", MaxBioRunes)
	case strings.ContainsFunc(bio, forbiddenInName):
		return "", invalid("bio", "must not contain control characters (line breaks included), bidirectional formatting characters or invisible characters")
	}
	return bio, nil
}

// EditProfile changes uid's name, bio or both, and returns the user as it
// is then. A new name is searchable under its terms at once (the old
// name's leave the index), and is told live, as a profile frame, to the
// user's own streams and, through Options.ProfileChanged, to their friends
// connected now.
func (s *Service) EditProfile(ctx context.Context, uid int64, edit ProfileEdit) (User, error) {
	var name, bio string
	setBio := "0"
	if edit.Name != nil {
		n, err := validateName(*edit.Name, MaxNameRunes)
		if err != nil {
			return User{}, err
		}
		name = n
	}
	if edit.Bio != nil {
		b, err := validateBio(*edit.Bio)
		if err != nil {
			return User{}, err
		}
		bio, setBio = b, "1"
	}
	// From the first write on, the edit runs though the client goes.
	ctx, cancel := detached(ctx)
	defer cancel()
	res, err := profileScript.Run(ctx, s.rdb, []string{s.keys.user(uid)}, name, setBio, bio).StringSlice()
	if errors.Is(err, redis.Nil) {
		return User{}, ErrUserNotFound
	}
	if err != nil {
		return User{}, fmt.Errorf("edit profile of %d: %w", uid, err)
	}
	oldName, login := res[0], res[1]
	if name != "" {
		// A name as it was is indexed again all the same: the edit that
		// wrote it may have failed before its index did.
		if err := s.reindexName(ctx, uid, login, oldName, name); err != nil {
			return User{}, fmt.Errorf("edit profile of %d: %w", uid, err)
		}
		if name != oldName {
			s.announceProfile(ctx, protocol.UserRef{ID: uid, Login: login, Name: name})
		}
	}
	u, err := s.UserByID(ctx, uid)
	if err != nil {
		return User{}, fmt.Errorf("edit profile of %d: %w", uid, err)
	}
	return u, nil
}

// reindexName takes the terms of uid's old name out of the search index
// and puts the new name's in; the login's terms, in both, stay. Two renames
// racing may leave a term of the middle name behind: search then finds the
// user by it, and the result shows the name as it is. An account deleted
// since the name was written (its deletion, which takes its entries out,
// may have run to its end between the two) has the new entries taken out
// again: the index is in another slot than the user on a cluster, so the
// mark is read after the write.
func (s *Service) reindexName(ctx context.Context, uid int64, login, oldName, newName string) error {
	now := searchEntries(uid, login, newName)
	var gone []any
	for _, e := range searchEntries(uid, login, oldName) {
		if !slices.Contains(now, e) {
			gone = append(gone, e)
		}
	}
	members := make([]redis.Z, len(now))
	for i, e := range now {
		members[i] = redis.Z{Member: e}
	}
	pipe := s.rdb.TxPipeline()
	if len(gone) > 0 {
		pipe.ZRem(ctx, s.keys.searchIndex(), gone...)
	}
	pipe.ZAdd(ctx, s.keys.searchIndex(), members...)
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	mark, err := s.rdb.HMGet(ctx, s.keys.user(uid), "id", "deleted").Result()
	if err != nil || (mark[0] != nil && mark[1] == nil) {
		return err
	}
	entries := make([]any, len(now))
	for i, e := range now {
		entries[i] = e
	}
	return s.rdb.ZRem(ctx, s.keys.searchIndex(), entries...).Err()
}

// announceProfile tells user's own streams, on every instance, their new
// name (another tab shows it in its header), and their connected friends
// through Options.ProfileChanged. The name is stored; a frame that fails is
// logged, and a page reloaded shows the name.
func (s *Service) announceProfile(ctx context.Context, user protocol.UserRef) {
	frame, err := json.Marshal(protocol.ProfileFrame{Type: protocol.TypeProfile, User: user})
	if err == nil {
		err = s.bus.Publish(ctx, s.bus.UserChannel(user.ID), frame)
	}
	if err == nil && s.opts.ProfileChanged != nil {
		err = s.opts.ProfileChanged(ctx, user, frame)
	}
	if err != nil {
		s.opts.Logger.WarnContext(ctx, "could not tell of a new name", "uid", user.ID, "err", err)
	}
}
