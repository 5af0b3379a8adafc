package web

import (
	"context"
	"net/http"

	"chorus/internal/batch"
	"chorus/social"

	"github.com/redis/go-redis/v9"
)

// streamAdmission admits the streams asked for at once together: their
// sessions, the stream-open limit per client address, then the one per
// user, in two round trips for the whole batch (social.AuthenticateMany),
// where one stream alone would cost three, each limit in one script call
// for the batch (one per slot on a Redis Cluster). The limits bound how
// often streams are opened per user and per address
// (Limits.StreamOpensPerUser, StreamOpensPerAddress), counted with the
// limiter's algorithm on its keys.
type streamAdmission struct {
	s                 *Server
	byAddress, byUser *queuedLimit
	batch             batch.Batcher[*streamAsk, streamAdmitted]
}

// streamAsk is one request's ask: its token and client address. Each ask
// is its own key, so two streams of one client are counted twice.
type streamAsk struct {
	token string
	addr  limitClient // the client's address, as byAddress counts it
}

type streamAdmitted struct {
	uid int64
	err error
}

// streamAdmitBatch bounds the streams one admission call checks.
const streamAdmitBatch = 500

func (s *Server) newStreamAdmission() *streamAdmission {
	a := &streamAdmission{
		s: s,
		byAddress: s.newQueuedLimit(rateLimit{
			name: "streamaddr", limit: s.limits.StreamOpensPerAddress, refused: &s.limitStats.streamOpensAddress,
			visitor: s.addrClient, perAddress: true, message: "Too many streams opened from your address.",
		}),
		byUser: s.newQueuedLimit(rateLimit{
			name: "stream", limit: s.limits.StreamOpensPerUser, refused: &s.limitStats.streamOpens, user: byUser,
			message: "You are opening streams too fast.",
		}),
	}
	a.batch.Do = func(ctx context.Context, asks []*streamAsk) ([]streamAdmitted, error) {
		auths := make([]*social.Authentication, len(asks))
		for i, ask := range asks {
			auths[i] = &social.Authentication{Token: ask.token}
		}
		var checks social.AuthChecks
		if a.byAddress != nil {
			checks.Before = func(ctx context.Context, pipe redis.Pipeliner, sent []int) []func() error {
				addrs := make([]limitClient, len(sent))
				for j, i := range sent {
					addrs[j] = asks[i].addr
				}
				return a.byAddress.queueMany(ctx, pipe, addrs)
			}
		}
		if a.byUser != nil {
			checks.Admit = func(ctx context.Context, pipe redis.Pipeliner, uids []int64) []func() error {
				clients := make([]limitClient, len(uids))
				for i, uid := range uids {
					clients[i] = limitClient{who: a.byUser.l.user(uid)}
				}
				return a.byUser.queueMany(ctx, pipe, clients)
			}
		}
		s.social.AuthenticateMany(ctx, auths, checks)
		out := make([]streamAdmitted, len(asks))
		for i, auth := range auths {
			out[i] = streamAdmitted{uid: auth.UID, err: auth.Err}
		}
		return out, nil
	}
	a.batch.OpenSpaced()
	a.batch.Max = streamAdmitBatch
	return a
}

// addressOf is whom byAddress counts r for; none without the limit.
func (a *streamAdmission) addressOf(r *http.Request) limitClient {
	if a.byAddress == nil {
		return limitClient{}
	}
	return a.byAddress.l.client(r)
}

// admit answers whether the request, carrying token, may open a stream, and
// whose: it answers the request itself when not, and then returns false.
// The limits' gates are checked first, before anything costs Redis.
func (a *streamAdmission) admit(w http.ResponseWriter, r *http.Request, token string, byCookie bool) (int64, bool) {
	s := a.s
	if !a.byAddress.passGate(w, r) || !a.byUser.passGate(w, r) || !s.passEnded(w, r) {
		return 0, false
	}
	res, err := a.batch.Get(&streamAsk{token: token, addr: a.addressOf(r)})
	if err == nil {
		err = res.err
	}
	return s.sessionChecked(w, r, byCookie, res.uid, err)
}
