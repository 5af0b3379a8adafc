package main

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// StormMovers is how the movers went from the killed instance to the others.
type StormMovers struct {
	Total             int            `json:"total"`
	DroppedBeforeKill int            `json:"dropped_before_kill"` // their connection dropped before the kill
	Back              int            `json:"back"`                // reconnected: a ready frame from another instance
	Retried           int            `json:"retried"`             // of Back, after more than one attempt
	Failed            int            `json:"failed"`              // every attempt failed, or the run ended first
	FailReasons       map[string]int `json:"fail_reasons,omitempty"`
	NotDropped        int            `json:"not_dropped"` // still on the killed instance at the end
	DropSeen          Latency        `json:"drop_seen"`   // kill → the old connection's read failing
	BackAfterKill     Latency        `json:"back_after_kill"`
	Handshake         Latency        `json:"handshake"` // the successful attempt → its ready frame
	AllBackSeconds    float64        `json:"all_back_seconds"`
	// PerSecond[i] counts the movers back (ready on another instance) in
	// second i after the kill: how a drain spread them.
	PerSecond []int `json:"back_per_second,omitempty"`
}

// StormPresence is what the observers were told about their friends from
// the kill to the end of the run.
type StormPresence struct {
	// Before the kill, from connecting: observers are told of the movers
	// who connect after them, movers of the observers who connect after
	// them; observers connect first.
	ObserversBefore int `json:"observers_before_kill"`
	MoversBefore    int `json:"movers_before_kill"`
	Total           int `json:"total"` // frames from the kill on
	MoverOffline    int `json:"mover_offline"`
	MoverOnline     int `json:"mover_online"`
	// Repeated are frames about a mover that told an observer what it
	// knew already: online when it was not told offline since the kill
	// (every mover is online at the kill), or offline twice.
	Repeated        int `json:"repeated"`
	Other           int `json:"other"`            // about users who are not movers
	FlickeredMovers int `json:"flickered_movers"` // movers some observer was told went offline
	ObserversTold   int `json:"observers_told"`   // observers that got any frame
	MaxPerSecond    int `json:"max_per_user_per_second"`
	// ClosestMS is the shortest time between two frames to one observer
	// about one user, as read: the server sends them a second apart at
	// least, so a little under 1000 is the client's reading, not the server.
	ClosestMS float64  `json:"closest_ms,omitempty"`
	Closest   string   `json:"closest,omitempty"` // who and when
	ToMovers  int      `json:"to_movers"`         // frames the movers got, from the kill on
	Flickers  []string `json:"flicker_examples,omitempty"`
	// MoversToldOffline are frames telling a mover that a friend, an
	// observer, is offline: observers never leave, so each is a flicker too.
	MoversToldOffline int      `json:"movers_told_offline"`
	ObserverFlickers  []string `json:"observer_flicker_examples,omitempty"`
}

// maxFlickerExamples caps the flickers the report describes.
const maxFlickerExamples = 10

// tallyMoves sums up the movers' moves; connections 0..movers-1 are the
// movers, of which connected got connected before the kill.
func tallyMoves(moves []moveEvent, movers, connected int, killAt int64) StormMovers {
	s := StormMovers{Total: movers}
	var seen, back, handshake []int64
	for _, m := range moves {
		early := m.Closed < killAt
		if early {
			s.DroppedBeforeKill++
		} else {
			seen = append(seen, m.Closed-killAt)
		}
		if m.Ready == 0 {
			s.Failed++
			if s.FailReasons == nil {
				s.FailReasons = map[string]int{}
			}
			addReason(s.FailReasons, m.Why)
			continue
		}
		s.Back++
		if m.Attempts > 1 {
			s.Retried++
		}
		if !early {
			back = append(back, m.Ready-killAt)
			sec := int((m.Ready - killAt) / int64(time.Second))
			for len(s.PerSecond) <= sec {
				s.PerSecond = append(s.PerSecond, 0)
			}
			s.PerSecond[sec]++
		}
		handshake = append(handshake, m.Ready-m.Dialed)
	}
	s.NotDropped = connected - len(moves)
	s.DropSeen, s.BackAfterKill, s.Handshake = summarize(seen), summarize(back), summarize(handshake)
	s.AllBackSeconds = s.BackAfterKill.Max / 1e3
	return s
}

// tallyPresence counts the presence frames of a storm from killAt until
// endAt, when the tool began closing its streams (frames after it tell of
// that closing): frames on connections 0..movers-1 are the movers', the
// rest the observers'; moverOf maps a mover's user id to its number. Any
// frame telling an observer that a mover is offline is a flicker: the
// movers reconnect within the online window, so none should ever be told.
func tallyPresence(events []presenceEvent, movers int, moverOf map[int64]int, killAt, endAt int64) StormPresence {
	var p StormPresence
	type about struct {
		conn int
		user int64
	}
	times := map[about][]int64{}
	told := map[about][]presenceEvent{} // about movers
	observers := map[int]bool{}
	flickered := map[int64]bool{}
	for _, e := range events {
		switch {
		case e.At >= endAt:
			continue
		case e.At < killAt && e.Conn < movers:
			p.MoversBefore++
			continue
		case e.At < killAt:
			p.ObserversBefore++
			continue
		case e.Conn < movers:
			p.ToMovers++
			if !e.Online {
				p.MoversToldOffline++
				if len(p.ObserverFlickers) < maxFlickerExamples {
					p.ObserverFlickers = append(p.ObserverFlickers, fmt.Sprintf("mover %d told user %d is offline, %.3fs after the kill",
						e.Conn, e.User, float64(e.At-killAt)/1e9))
				}
			}
			continue
		}
		p.Total++
		observers[e.Conn] = true
		k := about{e.Conn, e.User}
		times[k] = append(times[k], e.At)
		m, isMover := moverOf[e.User]
		if isMover {
			told[k] = append(told[k], e)
		}
		switch {
		case !isMover:
			p.Other++
		case e.Online:
			p.MoverOnline++
		default:
			p.MoverOffline++
			flickered[e.User] = true
			if len(p.Flickers) < maxFlickerExamples {
				p.Flickers = append(p.Flickers, fmt.Sprintf("connection %d told mover %d (user %d) is offline, %.3fs after the kill",
					e.Conn, m, e.User, float64(e.At-killAt)/1e9))
			}
		}
	}
	p.FlickeredMovers, p.ObserversTold = len(flickered), len(observers)
	for _, es := range told {
		slices.SortFunc(es, func(a, b presenceEvent) int { return cmp.Compare(a.At, b.At) })
		online := true
		for _, e := range es {
			if e.Online == online {
				p.Repeated++
			}
			online = e.Online
		}
	}
	closest := int64(-1)
	for k, ts := range times {
		slices.Sort(ts)
		p.MaxPerSecond = max(p.MaxPerSecond, mostWithin(ts, time.Second))
		for i := 1; i < len(ts); i++ {
			if gap := ts[i] - ts[i-1]; closest < 0 || gap < closest {
				closest = gap
				p.Closest = fmt.Sprintf("connection %d about user %d, %.3fs after the kill", k.conn, k.user, float64(ts[i]-killAt)/1e9)
			}
		}
	}
	if closest >= 0 {
		p.ClosestMS = float64(closest) / 1e6
	}
	return p
}

// mostWithin is the most of the times ts (monoNow, in any order) that fall
// within any one window of length w: times less than w apart.
func mostWithin(ts []int64, w time.Duration) int {
	s := slices.Clone(ts)
	slices.Sort(s)
	best, first := 0, 0
	for last := range s {
		for s[last]-s[first] >= int64(w) {
			first++
		}
		best = max(best, last-first+1)
	}
	return best
}
