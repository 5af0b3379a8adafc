package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// benchUser is one user the tool signed up.
type benchUser struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
	Token string `json:"token"`
}

// edge is one follow the tool made: Follower follows Author, by login.
type edge struct {
	Follower string `json:"f"`
	Author   string `json:"a"`
}

// userStore is what the users file keeps between runs: the users, and the
// follows made so far, so that a run with another graph can undo the
// follows it does not want.
type userStore struct {
	Users   []benchUser `json:"users"`
	Follows []edge      `json:"follows"`
}

// loadUsers reads the users file; a missing file is an empty store.
func loadUsers(path string) (*userStore, error) {
	s := &userStore{}
	if path == "" {
		return s, nil
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("users file: %w", err)
	}
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, fmt.Errorf("users file %s: %w", path, err)
	}
	for i, u := range s.Users {
		if u.Login == "" || u.Token == "" {
			return nil, fmt.Errorf("users file %s: user %d has no login or token", path, i)
		}
	}
	return s, nil
}

// saveUsers writes the store whole, through a temporary file, so that an
// interrupted write never leaves half a file.
func saveUsers(path string, s *userStore) error {
	if path == "" {
		return nil
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("users file: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".chorus-bench-users-*")
	if err != nil {
		return fmt.Errorf("users file: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(raw); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("users file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("users file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("users file: %w", err)
	}
	return nil
}

// newRunID is a short random id for logins and markers: logins built from
// it stay within the API's 32 characters.
func newRunID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// errStaleUsers says the users file's tokens are unknown to the deployment.
var errStaleUsers = errors.New("the users file's tokens are not accepted (was Redis emptied, or is this another deployment?); remove the file to sign up anew")

// ensureUsers makes the store hold at least need users: it checks that the
// deployment still knows the users already there, then signs up the rest.
// Users signed up before a failure are kept in the store.
func ensureUsers(ctx context.Context, api *apiClient, cfg *config, s *userStore, need int, log *slog.Logger) (signedUp int, err error) {
	if len(s.Users) > 0 {
		for _, u := range []benchUser{s.Users[0], s.Users[len(s.Users)-1]} {
			err := retry(ctx, 3, func() error { return api.do(ctx, http.MethodGet, cfg.URLs[0], "/api/v1/me", u.Token, nil, nil) })
			var ae *apiError
			if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
				return 0, fmt.Errorf("user %s: %w", u.Login, errStaleUsers)
			}
			if err != nil {
				return 0, fmt.Errorf("check users file: %w", err)
			}
		}
	}
	missing := need - len(s.Users)
	if missing <= 0 {
		return 0, nil
	}
	runID := newRunID()
	password := "bench-" + runID + "-password"
	log.Info("signing up users", "count", missing, "concurrency", cfg.SignupConcurrency)
	made := make([]benchUser, missing)
	failed, firstErr := parallel(ctx, missing, cfg.SignupConcurrency, "sign-ups", log, func(ctx context.Context, i int) error {
		login := fmt.Sprintf("b%s_%d", runID, i)
		var out struct {
			User struct {
				ID int64 `json:"id"`
			} `json:"user"`
			Token string `json:"token"`
		}
		body := map[string]string{"login": login, "name": "bench user " + login, "password": password}
		signUp := func() error {
			return api.do(ctx, http.MethodPost, cfg.URLs[i%len(cfg.URLs)], "/api/v1/users", "", body, &out)
		}
		err := retry(ctx, 3, signUp)
		// A server busy hashing passwords answers 429 server_busy: a
		// sign-up waits its turn, as a client does (about 10 s more at
		// most), where other failures are given up on sooner.
		if ae := (*apiError)(nil); errors.As(err, &ae) && ae.Code == "server_busy" {
			err = retry(ctx, 6, signUp)
		}
		if err != nil {
			return fmt.Errorf("sign up %s: %w", login, err)
		}
		made[i] = benchUser{Login: login, ID: out.User.ID, Token: out.Token}
		return nil
	})
	for _, u := range made {
		if u.Token != "" {
			s.Users = append(s.Users, u)
			signedUp++
		}
	}
	if failed > 0 {
		return signedUp, fmt.Errorf("%d of %d sign-ups failed, the first: %w", failed, missing, firstErr)
	}
	return signedUp, nil
}

// syncFollows brings the follows the store records in line with want:
// it unfollows those not wanted any more and follows those missing. The
// store records the follows that succeeded.
func syncFollows(ctx context.Context, api *apiClient, cfg *config, s *userStore, want []edge, log *slog.Logger) (added, removed int, err error) {
	token := make(map[string]string, len(s.Users))
	for _, u := range s.Users {
		token[u.Login] = u.Token
	}
	have := make(map[edge]bool, len(s.Follows))
	for _, e := range s.Follows {
		have[e] = true
	}
	wanted := make(map[edge]bool, len(want))
	var add, drop []edge
	for _, e := range want {
		wanted[e] = true
		if !have[e] {
			add = append(add, e)
		}
	}
	for _, e := range s.Follows {
		if !wanted[e] {
			drop = append(drop, e)
		}
	}
	apply := func(what string, edges []edge, method string) (done []bool, err error) {
		done = make([]bool, len(edges))
		if len(edges) == 0 {
			return done, nil
		}
		log.Info(what, "count", len(edges), "concurrency", cfg.FollowConcurrency)
		failed, first := parallel(ctx, len(edges), cfg.FollowConcurrency, what, log, func(ctx context.Context, i int) error {
			e := edges[i]
			tok, ok := token[e.Follower]
			if !ok {
				return fmt.Errorf("%s: no token for %s in the users file", what, e.Follower)
			}
			err := retry(ctx, 3, func() error {
				return api.do(ctx, method, cfg.URLs[i%len(cfg.URLs)], "/api/v1/following/"+url.PathEscape(e.Author), tok, nil, nil)
			})
			if err != nil {
				return fmt.Errorf("%s follows %s: %w", e.Follower, e.Author, err)
			}
			done[i] = true
			return nil
		})
		if failed > 0 {
			return done, fmt.Errorf("%d of %d %s failed, the first: %w", failed, len(edges), what, first)
		}
		return done, nil
	}
	dropped, dropErr := apply("unfollows", drop, http.MethodDelete)
	for i, ok := range dropped {
		if ok {
			delete(have, drop[i])
			removed++
		}
	}
	followed, addErr := apply("follows", add, http.MethodPut)
	for i, ok := range followed {
		if ok {
			have[add[i]] = true
			added++
		}
	}
	s.Follows = s.Follows[:0]
	for _, e := range want { // in a stable order: wanted ones first
		if have[e] {
			s.Follows = append(s.Follows, e)
			delete(have, e)
		}
	}
	for _, e := range drop {
		if have[e] {
			s.Follows = append(s.Follows, e)
		}
	}
	return added, removed, errors.Join(dropErr, addErr)
}

// parallel runs fn for 0..n-1 with at most workers at once, logging
// progress every few seconds, and returns how many failed and the first
// error. It stops starting new calls once ctx ends.
func parallel(ctx context.Context, n, workers int, what string, log *slog.Logger, fn func(ctx context.Context, i int) error) (failed int, first error) {
	var next, done, bad atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	stopProgress := make(chan struct{})
	var progress sync.WaitGroup
	progress.Go(func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-t.C:
				log.Info("progress", "what", what, "done", done.Load(), "of", n, "failed", bad.Load())
			}
		}
	})
	for range min(workers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				var err error
				if err = ctx.Err(); err == nil {
					err = fn(ctx, i)
				}
				done.Add(1)
				if err != nil {
					bad.Add(1)
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	// Its last line is written before the caller's next: they may share
	// a writer that is not safe for two at once.
	close(stopProgress)
	progress.Wait()
	return int(bad.Load()), first
}
