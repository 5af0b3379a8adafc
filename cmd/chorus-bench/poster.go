package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// postSchedule is how the posting went against its schedule.
type postSchedule struct {
	Seconds  float64       // from the first post due to the last answer
	MaxLag   time.Duration // the latest a post was sent after its due time
	Answered []int64       // nanoseconds from send to answer, sorted later
	// AnsweredFromDue are the nanoseconds from each post's due time to its
	// answer: a post held back by -max-in-flight counts the wait too.
	AnsweredFromDue []int64
}

// poster sends post number k of the run as author a, its message carrying
// the run's marker, and returns the status id it got.
type poster func(ctx context.Context, k, a int) (int64, error)

// apiPoster posts through POST /statuses, instance after instance.
func apiPoster(api *apiClient, cfg *config, authors []benchUser, runID string) poster {
	return func(ctx context.Context, k, a int) (int64, error) {
		var out struct {
			Status struct {
				ID int64 `json:"id"`
			} `json:"status"`
		}
		body := map[string]string{"message": marker(runID, k)}
		err := api.do(ctx, http.MethodPost, cfg.URLs[k%len(cfg.URLs)], "/api/v1/statuses", authors[a].Token, body, &out)
		return out.Status.ID, err
	}
}

// warmAuthors has each author read GET /me through every instance of urls
// (-warm-authors), one after another: as a browser's page reads before it
// posts, so that each instance knows the author's session and has noted
// their activity before their first post through it.
func warmAuthors(ctx context.Context, api *apiClient, urls []string, authors []benchUser, log *slog.Logger) error {
	log.Info("warming the authors", "authors", len(authors), "urls", len(urls))
	for _, u := range urls {
		for _, a := range authors {
			if err := api.do(ctx, http.MethodGet, u, "/api/v1/me", a.Token, nil, nil); err != nil {
				return fmt.Errorf("warming %s through %s: %w", a.Login, u, err)
			}
		}
	}
	return nil
}

// runPosts makes cfg.postCount() posts through post at cfg.Rate, author
// after author. A post waits when cfg.MaxInFlight posts await their
// answers. The record of each post has its due time on the schedule and
// its send time, taken just before post is called: while the server
// stalls, the posts held back go out late, in a burst, and only the time
// from their due time counts their wait (coordinated omission).
func runPosts(ctx context.Context, cfg *config, authors int, post poster, log *slog.Logger) ([]postRecord, postSchedule) {
	n := cfg.postCount()
	recs := make([]postRecord, n)
	var sched postSchedule
	if n == 0 {
		return recs, sched
	}
	log.Info("posting", "posts", n, "rate", cfg.Rate, "authors", authors, "floor", cfg.Floor)
	sem := make(chan struct{}, cfg.MaxInFlight)
	var wg sync.WaitGroup
	start := monoNow()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for k := range n {
		due := start + int64(float64(k)/cfg.Rate*float64(time.Second))
		if wait := time.Duration(due - monoNow()); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
			case <-timer.C:
			}
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		a := k % authors
		wg.Go(func() {
			defer func() { <-sem }()
			rec := &recs[k]
			rec.Author, rec.Due = a, due
			rec.Sent = monoNow()
			rec.StatusID, rec.Err = post(ctx, k, a)
			rec.Answered = monoNow()
		})
	}
	wg.Wait()
	sched.Seconds = float64(monoNow()-start) / 1e9
	for _, r := range recs {
		if r.Sent != 0 {
			sched.MaxLag = max(sched.MaxLag, time.Duration(r.Sent-r.Due))
		}
		if r.Sent != 0 && r.Err == nil {
			sched.Answered = append(sched.Answered, r.Answered-r.Sent)
			sched.AnsweredFromDue = append(sched.AnsweredFromDue, r.Answered-r.Due)
		}
	}
	return recs, sched
}
