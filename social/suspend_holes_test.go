package social

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"chorus/internal/redistest"
	"chorus/internal/testio"

	"github.com/redis/go-redis/v9"
)

// A suspension cut short once the account is marked (its sessions' index
// failing to read) leaves no session of it that acts: each is refused at
// its next use, whether the instance knew it or not, noted its user lately
// or not, and ended then.
func TestSuspendCutShortLeavesNoSessionActing(t *testing.T) {
	t.Parallel()
	s, h := failingService(t, Options{}, nil)
	ctx := ctxT(t)
	bob, first := signUpToken(t, s, "bob")
	tokens := []string{first}
	for range 3 {
		_, token, err := s.SignIn(ctx, "bob", "password-bob", "192.0.2.1")
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, token)
	}
	for _, token := range tokens {
		authenticate(t, s, token)
	}
	h.set(anyOf("sessions:"))
	h.on.Store(true)
	_, err := s.Suspend(ctx, bob.ID)
	h.on.Store(false)
	if err == nil {
		t.Fatal("the suspension went through its sessions' index, which failed")
	}
	if !s.rdb.HExists(ctx, s.keys.user(bob.ID), "suspended").Val() {
		t.Fatalf("the suspension cut short (%v) did not mark the account", err)
	}
	for i, token := range tokens {
		id := hashToken(token)
		known, recent := i%2 == 0, i/2 == 0
		if !known {
			s.sessionUsers.Remove(id)
		}
		s.touches = newTouches(s.touchEvery())
		if recent {
			s.touches.note(bob.ID)
		}
		if _, err := s.Authenticate(ctx, token); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("a session of the suspended account (known %v, noted lately %v): %v, want ErrUnauthenticated", known, recent, err)
		}
		if s.rdb.Exists(ctx, s.keys.session(id)).Val() != 0 {
			t.Errorf("the session refused (known %v, noted lately %v) still stands", known, recent)
		}
	}
}

// An account whose deletion was cut short once marked (its sessions not
// ended) acts no more either.
func TestDeletionCutShortLeavesNoSessionActing(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	ada, token := signUpToken(t, s, "ada")
	authenticate(t, s, token)
	if err := s.rdb.HSet(ctx, s.keys.user(ada.ID), "deleted", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, token); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("a session of an account being deleted: %v, want ErrUnauthenticated", err)
	}
}

// A suspension cut short anywhere after the account is marked (every
// command after its script failing, or the script's own answer lost) is
// finished by a worker, with no retry: the job queued ahead of the mark
// queues the revision's job, which hides the statuses, ends the sessions
// and lists the account for the admins.
func TestSuspendCutShortIsFinishedByAWorker(t *testing.T) {
	t.Parallel()
	for _, lost := range []bool{false, true} {
		t.Run(fmt.Sprint("script's answer lost=", lost), func(t *testing.T) {
			t.Parallel()
			s, h := failingService(t, Options{FanoutPassSize: 2, JobClaimIdle: 500 * time.Millisecond}, nil)
			ctx := ctxT(t)
			bad, token := signUpToken(t, s, "bad")
			var theirs []int64
			for range 3 {
				theirs = append(theirs, post(t, s, bad.ID, "spam").ID)
			}
			if lost {
				// Loaded, so that the script goes by its hash, which the
				// hook knows it by.
				if err := suspendScript.Load(ctx, s.rdb).Err(); err != nil {
					t.Fatal(err)
				}
				h.set(anyOf(suspendScript.Hash()))
				h.lost.Store(true)
				h.on.Store(true)
			} else {
				h.set(anyOf("")) // every command
				s.afterSuspendScript = func() { h.on.Store(true) }
			}
			_, err := s.Suspend(ctx, bad.ID)
			h.on.Store(false)
			if err == nil {
				t.Fatal("the suspension cut short answered no error")
			}
			if !s.rdb.HExists(ctx, s.keys.user(bad.ID), "suspended").Val() {
				t.Fatalf("the suspension cut short (%v) did not mark the account", err)
			}
			startWorker(t, s, "w1")
			testio.Eventually(t, time.Minute, func() string {
				for _, id := range theirs {
					if h := s.rdb.HGet(ctx, s.keys.status(id), "hidden").Val(); h != "1" {
						return fmt.Sprintf("status %d of the suspended account: hidden = %q", id, h)
					}
				}
				if n := s.rdb.Exists(ctx, s.keys.session(hashToken(token))).Val(); n != 0 {
					return "the suspended account's session stands"
				}
				if listed, err := s.Suspended(ctx, Page{Limit: 10}); err != nil || len(listed) != 1 {
					return fmt.Sprintf("the admins list %d suspended accounts (%v), want 1", len(listed), err)
				}
				return ""
			})
			testio.Eventually(t, time.Minute, func() string {
				if n := jobsLeft(t, ctx, s.rdb, s.keys); n != 0 {
					return fmt.Sprintf("%d jobs left", n)
				}
				return ""
			})
		})
	}
}

// A suspension carried out whole leaves no job behind it: the job queued
// ahead of its mark is taken out, not run.
func TestSuspendLeavesNoJobAhead(t *testing.T) {
	t.Parallel()
	s, rdb := newService(t, Options{})
	ctx := ctxT(t)
	bad := signUp(t, s, "bad")
	post(t, s, bad.ID, "spam")
	for _, suspend := range []bool{true, true, false} {
		if _, err := s.setSuspended(ctx, bad.ID, suspend, ""); err != nil {
			t.Fatal(err)
		}
		if n := jobsLeft(t, ctx, rdb, s.keys); n != 0 {
			t.Errorf("suspended %v: %d jobs left once the change answered", suspend, n)
		}
	}
}

// sessionsReadHook runs fn, once armed, as the next read of a user's
// sessions' index (liveSessions) is sent, before it.
type sessionsReadHook struct {
	armed atomic.Bool
	fn    func()
}

func (h *sessionsReadHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *sessionsReadHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *sessionsReadHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() != "zrange" || len(c.Args()) < 2 {
				continue
			}
			if key, _ := c.Args()[1].(string); strings.Contains(key, "sessions:") && h.armed.CompareAndSwap(true, false) {
				h.fn()
				break
			}
		}
		return next(ctx, cmds)
	}
}

// A suspension lifted whole once the account is marked, or while the
// suspension reads the sessions it is to end, ends none of them, those
// opened once it was lifted included, and closes none of the account's
// streams.
func TestSuspensionLiftedMidWayEndsNoSession(t *testing.T) {
	t.Parallel()
	for _, asItReads := range []bool{false, true} {
		t.Run(fmt.Sprint("as it reads the sessions=", asItReads), func(t *testing.T) {
			t.Parallel()
			base, prefix := redistest.Backend(t)
			h := &sessionsReadHook{}
			s := New(redistest.WithHook(t, base, h), Options{Prefix: prefix, BcryptCost: 4})
			ctx := ctxT(t)
			ada, kept := signUpToken(t, s, "ada")
			l := listen(t, s, s.rdb, s.bus.UserChannel(ada.ID))
			var token string
			lift := func() {
				if _, err := s.Unsuspend(ctx, ada.ID); err != nil {
					t.Error(err)
				}
				var err error
				if _, token, err = s.SignIn(ctx, "ada", "password-ada", "192.0.2.1"); err != nil {
					t.Error(err)
				}
			}
			h.fn = lift
			s.afterSuspendScript = func() {
				s.afterSuspendScript = nil
				if asItReads {
					h.armed.Store(true)
				} else {
					lift()
				}
			}
			if _, err := s.Suspend(ctx, ada.ID); err != nil {
				t.Fatal(err)
			}
			if h.armed.Load() {
				t.Fatal("the suspension read no sessions")
			}
			if s.rdb.HExists(ctx, s.keys.user(ada.ID), "suspended").Val() {
				t.Fatal("ada is suspended: her suspension came after its lifting")
			}
			for _, tok := range []string{token, kept} {
				if _, err := s.Authenticate(ctx, tok); err != nil {
					t.Errorf("a session of ada, whose suspension was lifted: %v", err)
				}
			}
			for _, ev := range eventsSoFar(t, l)[s.bus.UserChannel(ada.ID)] {
				if ev.Type == "account_suspended" || ev.Type == "session_ended" {
					t.Errorf("ada, whose suspension was lifted, was sent %s", ev.Type)
				}
			}
		})
	}
}

// A status hidden by its author's suspension while its fan-out is under
// way goes out in no live frame from the pages after (a large account's
// went on framing for minutes), nor does a repost entry of it; each still
// reaches the homes, where it shows should the suspension be lifted.
func TestSuspendedStatusGoesOutInNoFrame(t *testing.T) {
	t.Parallel()
	for _, repost := range []bool{false, true} {
		t.Run(fmt.Sprint("repost=", repost), func(t *testing.T) {
			t.Parallel()
			s, rdb := newService(t, Options{FanoutPassSize: 2})
			ctx := ctxT(t)
			bad, fan := signUp(t, s, "bad"), signUp(t, s, "fan")
			pushed := "bad"
			if repost {
				pushed = "fan"
			}
			fans := followersOf(t, s, pushed, 8)
			st := post(t, s, bad.ID, "spam") // the first page inline, the rest waits for a worker
			if repost {
				if _, err := s.Repost(ctx, fan.ID, st.ID); err != nil {
					t.Fatal(err)
				}
				entries := zsetIDs(t, s, s.keys.profile(fan.ID))
				if len(entries) != 1 {
					t.Fatalf("fan's profile holds %v, want the repost entry", entries)
				}
				st.ID = entries[0]
			}
			var channels []string
			for _, f := range fans {
				channels = append(channels, s.bus.UserChannel(f.ID))
			}
			if fc := s.bus.FramesChannel(); fc != "" {
				channels = append(channels, fc)
			}
			l := listen(t, s, rdb, channels...)
			if _, err := s.Suspend(ctx, bad.ID); err != nil {
				t.Fatal(err)
			}
			startWorker(t, s, "w1")
			testio.Eventually(t, time.Minute, func() string {
				if n := jobsLeft(t, ctx, rdb, s.keys); n != 0 {
					return fmt.Sprintf("%d jobs left", n)
				}
				return ""
			})
			for ch, msgs := range payloadsSoFar(t, l) {
				for _, m := range msgs {
					if strings.Contains(m, `"id":`+itoa(st.ID)+`,`) {
						t.Errorf("after the suspension, %s got %.120q", ch, m)
					}
				}
			}
			for _, f := range fans {
				if rdb.ZScore(ctx, s.keys.home(f.ID), itoa(st.ID)).Err() != nil {
					t.Errorf("the home of %s lacks %d", f.Login, st.ID)
				}
			}
		})
	}
}

// Streams opened in a batch (AuthenticateMany) refuse the sessions of an
// account marked suspended or being deleted whose sessions were not ended,
// and end them, while the batch's other sessions go on.
func TestFallenAccountOpensNoStreamInABatch(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	ada, adaToken := signUpToken(t, s, "ada")
	bob, bobToken := signUpToken(t, s, "bob")
	cy, cyToken := signUpToken(t, s, "cyd")
	for _, token := range []string{adaToken, bobToken, cyToken} {
		authenticate(t, s, token)
	}
	follow(t, s, ada.ID, "cyd")
	follow(t, s, bob.ID, "cyd")
	post(t, s, cy.ID, "for a rebuild to copy")
	for _, uid := range []int64{ada.ID, bob.ID} {
		if err := s.rdb.Del(ctx, s.keys.home(uid)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for uid, field := range map[int64]string{ada.ID: "suspended", bob.ID: "deleted"} {
		if err := s.rdb.HSet(ctx, s.keys.user(uid), field, 1).Err(); err != nil {
			t.Fatal(err)
		}
		lastSeenAgo(t, s, uid, 8*24*time.Hour) // back from long away: a home rebuilt, were they let in
	}
	s.touches = newTouches(s.touchEvery())
	as := []*Authentication{{Token: adaToken}, {Token: bobToken}, {Token: cyToken}}
	s.AuthenticateMany(ctx, as, AuthChecks{})
	for _, uid := range []int64{ada.ID, bob.ID} {
		if n := s.rdb.Exists(ctx, s.keys.job(refillJobID(uid)), s.keys.home(uid)).Val(); n != 0 {
			t.Errorf("the fallen account %d, refused, got its home rebuilt or a job to rebuild it (%d keys)", uid, n)
		}
	}
	for i, token := range []string{adaToken, bobToken} {
		if !errors.Is(as[i].Err, ErrUnauthenticated) || as[i].UID != 0 {
			t.Errorf("stream %d of a fallen account: uid %d, %v; want ErrUnauthenticated", i, as[i].UID, as[i].Err)
		}
		if s.rdb.Exists(ctx, s.keys.session(hashToken(token))).Val() != 0 {
			t.Errorf("stream %d's session, refused, still stands", i)
		}
	}
	if as[2].Err != nil || as[2].UID != cy.ID {
		t.Errorf("cy's stream in the same batch: uid %d, %v; want %d", as[2].UID, as[2].Err, cy.ID)
	}
}

// A suspension whose revision's job fails to be queued, all else going
// through, keeps the job queued ahead of its mark, which a worker then
// runs: the statuses are hidden and the sessions ended with no retry.
func TestSuspendKeepsItsJobAheadWhenTheRevisionsJobFails(t *testing.T) {
	t.Parallel()
	s, h := failingService(t, Options{JobClaimIdle: 500 * time.Millisecond}, nil)
	h.alone.Store(true)
	ctx := ctxT(t)
	bad, token := signUpToken(t, s, "bad")
	spam := post(t, s, bad.ID, "spam")
	h.set(naming(s.keys.job(hideJobID(bad.ID, "1"))))
	h.on.Store(true)
	_, err := s.Suspend(ctx, bad.ID)
	h.on.Store(false)
	if err == nil {
		t.Fatal("the suspension whose job failed to be queued answered no error")
	}
	startWorker(t, s, "w1")
	testio.Eventually(t, time.Minute, func() string {
		if hidden := s.rdb.HGet(ctx, s.keys.status(spam.ID), "hidden").Val(); hidden != "1" {
			return fmt.Sprintf("the suspended account's status: hidden = %q", hidden)
		}
		if n := s.rdb.Exists(ctx, s.keys.session(hashToken(token))).Val(); n != 0 {
			return "the suspended account's session stands"
		}
		return ""
	})
}

// The periodic check of open streams (SessionOwners) finds the sessions of
// an account whose suspension or deletion was cut short once marked ended,
// and ends them; the sessions of others stand.
func TestSessionOwnersRefuseFallenAccounts(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	ann, annToken := signUpToken(t, s, "ann")
	bob, bobToken := signUpToken(t, s, "bob")
	cat, catToken := signUpToken(t, s, "cat")
	// Marked, their sessions not ended: as a change cut short leaves them.
	if err := s.rdb.HSet(ctx, s.keys.user(bob.ID), "suspended", time.Now().UnixMilli()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.HSet(ctx, s.keys.user(cat.ID), "deleted", 1).Err(); err != nil {
		t.Fatal(err)
	}
	ids := []string{SessionID(annToken), SessionID(bobToken), SessionID(catToken), SessionID("no such token")}
	owners, err := s.SessionOwners(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{ann.ID, 0, 0, 0}; !slices.Equal(owners, want) {
		t.Errorf("session owners %v, want %v: the suspended and the deleted ended", owners, want)
	}
	for _, token := range []string{bobToken, catToken} {
		if s.rdb.Exists(ctx, s.keys.session(SessionID(token))).Val() != 0 {
			t.Errorf("a session of a fallen account still stands")
		}
	}
}
