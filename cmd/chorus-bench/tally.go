package main

import (
	"fmt"
	"sort"
	"sync"
)

// graph is who follows whom in a run: followers[a] are the connections
// (by number) whose users follow author a.
type graph struct {
	followers [][]int
}

// buildGraph gives each author f followers among conns connections,
// consecutive and wrapping around, so that authors × f ≤ conns makes the
// followers of different authors disjoint.
func buildGraph(authors, conns, f int) graph {
	g := graph{followers: make([][]int, authors)}
	for a := range authors {
		g.followers[a] = make([]int, f)
		for j := range f {
			g.followers[a][j] = (a*f + j) % conns
		}
	}
	return g
}

// edges lists the follows the graph needs, by login: users[a] is author a
// and users[authors+i] holds connection i.
func (g graph) edges(users []benchUser) []edge {
	authors := len(g.followers)
	var out []edge
	for a, fs := range g.followers {
		for _, i := range fs {
			out = append(out, edge{Follower: users[authors+i].Login, Author: users[a].Login})
		}
	}
	return out
}

// postRecord is one post of the run.
type postRecord struct {
	Author   int
	Due      int64 // monoNow when the schedule had it sent
	Sent     int64 // monoNow just before the request; 0 if never sent
	Answered int64
	StatusID int64
	Err      error
}

type pairKey struct {
	conn int
	seq  int64
}

type seenKey struct {
	conn int
	id   int64
}

// collector gathers what the shards report.
type collector struct {
	mu       sync.Mutex
	readyAt  []int64 // by connection, monoNow; 0 if never ready
	closedAt []int64 // by connection, when it closed during the run
	closedBy map[string]int
	first    map[pairKey]int64 // first receipt of post seq on a connection
	seen     map[seenKey]int   // receipts of a status id on a connection
	frames   int64             // status frames
	dupes    int
	foreign  int // status frames not from this run's posts
	dialed   []dialSummary
	finals   []shardFinal
	notify   chan struct{} // a "dialed" or "final" arrived

	presence []presenceEvent // a storm's presence frames
	moves    []moveEvent     // a storm's movers, once each has moved or failed to
}

func newCollector(conns int) *collector {
	return &collector{
		readyAt: make([]int64, conns), closedAt: make([]int64, conns),
		closedBy: map[string]int{}, first: map[pairKey]int64{}, seen: map[seenKey]int{},
		notify: make(chan struct{}, 1),
	}
}

// handle takes one message of a shard. Reports with connection numbers out
// of range are refused rather than trusted.
func (c *collector) handle(m message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.readyAt)
	for _, e := range m.Ready {
		if e.Conn < 0 || e.Conn >= n {
			return fmt.Errorf("report of connection %d, out of range", e.Conn)
		}
		c.readyAt[e.Conn] = e.At
	}
	for _, e := range m.Closed {
		if e.Conn < 0 || e.Conn >= n {
			return fmt.Errorf("report of connection %d, out of range", e.Conn)
		}
		c.closedAt[e.Conn] = e.At
		addReason(c.closedBy, e.Why)
	}
	for _, p := range m.Presence {
		if p.Conn < 0 || p.Conn >= n {
			return fmt.Errorf("report of connection %d, out of range", p.Conn)
		}
	}
	c.presence = append(c.presence, m.Presence...)
	for _, mv := range m.Moves {
		if mv.Conn < 0 || mv.Conn >= n {
			return fmt.Errorf("report of connection %d, out of range", mv.Conn)
		}
	}
	c.moves = append(c.moves, m.Moves...)
	for _, d := range m.Frames {
		if d.Conn < 0 || d.Conn >= n {
			return fmt.Errorf("report of connection %d, out of range", d.Conn)
		}
		c.frames++
		k := seenKey{d.Conn, d.ID}
		c.seen[k]++
		if c.seen[k] > 1 {
			c.dupes++
		}
		if d.Seq < 0 {
			c.foreign++
			continue
		}
		p := pairKey{d.Conn, d.Seq}
		if _, ok := c.first[p]; !ok {
			c.first[p] = d.At
		}
	}
	switch {
	case m.Dialed != nil:
		c.dialed = append(c.dialed, *m.Dialed)
	case m.Final != nil:
		c.finals = append(c.finals, *m.Final)
	default:
		return nil
	}
	select {
	case c.notify <- struct{}{}:
	default:
	}
	return nil
}

// counts says how many shards have reported dialed and final.
func (c *collector) counts() (dialed, finals int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.dialed), len(c.finals)
}

// heldAt counts the connections ready at time t and not closed by then.
func (c *collector) heldAt(t int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for i, r := range c.readyAt {
		if r != 0 && r <= t && (c.closedAt[i] == 0 || c.closedAt[i] > t) {
			n++
		}
	}
	return n
}

// readyAmong counts the connections lo..hi-1 that got ready.
func (c *collector) readyAmong(lo, hi int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.readyAt[lo:hi] {
		if r != 0 {
			n++
		}
	}
	return n
}

// stormProgress says how many movers are back on another instance, how
// many failed to get there, and how many presence frames came in all.
func (c *collector) stormProgress() (back, failed, presence int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.moves {
		if m.Ready != 0 {
			back++
		} else {
			failed++
		}
	}
	return back, failed, len(c.presence)
}

// missing counts the expected receipts not in yet, more cheaply than
// outcome: it is polled while waiting for the last deliveries.
func (c *collector) missing(posts []postRecord, g graph) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	c.eachExpected(posts, g, func(seq, conn int, _ postRecord) {
		if _, ok := c.first[pairKey{conn, int64(seq)}]; !ok {
			n++
		}
	})
	return n
}

// eachExpected calls f for each delivery the run expects: each post on each
// connection of a follower of its author that was ready before the post was
// sent and not closed by then. The caller holds c.mu.
func (c *collector) eachExpected(posts []postRecord, g graph, f func(seq, conn int, p postRecord)) {
	for seq, p := range posts {
		if p.Sent == 0 || p.Err != nil {
			continue
		}
		for _, conn := range g.followers[p.Author] {
			r, cl := c.readyAt[conn], c.closedAt[conn]
			if r == 0 || r > p.Sent || (cl != 0 && cl <= p.Sent) {
				continue
			}
			f(seq, conn, p)
		}
	}
}

// outcome is what the deliveries of a run came to.
type outcome struct {
	Expected, Delivered, Lost int
	LostOnClosed              int     // of Lost, on connections that closed during the run
	Early                     int     // receipts on followers' connections that got ready after the post was sent
	Unexpected                int     // receipts of this run's posts on connections of users not following the author
	Latencies                 []int64 // nanoseconds from the send, one per delivered expected receipt
	LatenciesFromDue          []int64 // the same from the post's due time
	LostExamples              []string
}

// outcome matches the posts against the receipts: a post is expected on
// each connection of a follower of its author that was ready before the
// post was sent and not closed by then.
func (c *collector) outcome(posts []postRecord, g graph) outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	var o outcome
	expected := map[pairKey]bool{}
	c.eachExpected(posts, g, func(seq, conn int, p postRecord) {
		k := pairKey{conn, int64(seq)}
		expected[k] = true
		o.Expected++
		if at, ok := c.first[k]; ok {
			o.Delivered++
			o.Latencies = append(o.Latencies, at-p.Sent)
			o.LatenciesFromDue = append(o.LatenciesFromDue, at-p.Due)
			return
		}
		o.Lost++
		if c.closedAt[conn] != 0 {
			o.LostOnClosed++
		}
		if len(o.LostExamples) < 10 {
			o.LostExamples = append(o.LostExamples, fmt.Sprintf("post %d (status %d) on connection %d", seq, p.StatusID, conn))
		}
	})
	follows := make([]map[int]bool, len(g.followers))
	for a, fs := range g.followers {
		follows[a] = make(map[int]bool, len(fs))
		for _, conn := range fs {
			follows[a][conn] = true
		}
	}
	for k := range c.first {
		switch {
		case expected[k]:
		case k.seq < int64(len(posts)) && follows[posts[k.seq].Author][k.conn]:
			o.Early++
		default:
			o.Unexpected++
		}
	}
	sort.Slice(o.Latencies, func(i, j int) bool { return o.Latencies[i] < o.Latencies[j] })
	return o
}
