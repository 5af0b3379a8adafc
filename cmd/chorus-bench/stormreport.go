package main

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// writeStormTable prints a storm's result for a person.
func writeStormTable(w io.Writer, r *Result) error {
	s := r.Storm
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) {
		_, _ = fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...)
	}
	row("run", "%s at %s against %s", r.RunID, r.Started.Format(time.RFC3339), strings.Join(r.URLs, ", "))
	row("shape", "storm: %d movers from %s, %d observers on the others, each mover friends with %d of them; spread %.1fs, watch %.1fs; %d workers, %d source IPs",
		r.Params.Conns, first(r.URLs), r.Params.Observers, r.Params.FriendsPerMover, r.Params.SpreadSeconds, r.Params.WatchSeconds, r.Client.Workers, r.Params.SourceIPs)
	writeClientRows(row, r, "besides the movers'")
	if !s.KilledAt.IsZero() {
		row("kill", "%s to pid %d at %s; watched %.1fs", cmp.Or(s.Signal, "SIGKILL"), s.KilledPID, s.KilledAt.Format("15:04:05.000"), s.WatchSeconds)
	}
	m := s.Movers
	row("movers", "%d: %d back on another instance (%d after a retry), %d failed, %d never dropped, %d dropped before the kill; all back %.2fs after the kill",
		m.Total, m.Back, m.Retried, m.Failed, m.NotDropped, m.DroppedBeforeKill, m.AllBackSeconds)
	for _, k := range sortedKeys(m.FailReasons) {
		row("  failed", "%d × %s", m.FailReasons[k], k)
	}
	row("  drop seen", "%s (kill → the socket closing)", m.DropSeen)
	row("  back", "%s (kill → ready frame on another instance)", m.BackAfterKill)
	row("  handshake", "%s (the reconnect that succeeded)", m.Handshake)
	if len(m.PerSecond) > 0 {
		var parts []string
		for i, n := range m.PerSecond {
			parts = append(parts, fmt.Sprintf("%d:%d", i, n))
		}
		row("  per second", "%s (second after the kill: movers back in it)", strings.Join(parts, " "))
	}
	if s.Redis != nil {
		row("redis", "%s", s.Redis)
	}
	p := s.Presence
	row("presence", "%d frames to %d observers from the kill on: %d offline about movers (flickers, about %d movers), %d online about movers, %d about others",
		p.Total, p.ObserversTold, p.MoverOffline, p.FlickeredMovers, p.MoverOnline, p.Other)
	row("  repeated", "%d frames about movers told an observer what it knew already (online, or offline twice)", p.Repeated)
	row("  also", "before the kill (connecting): %d frames to observers, %d to movers; from the kill on: %d to movers, %d of them offline about an observer (flickers)",
		p.ObserversBefore, p.MoversBefore, p.ToMovers, p.MoversToldOffline)
	row("  per user", "at most %d frames to one observer about one user within one second (the server coalesces to 1)", p.MaxPerSecond)
	if p.Closest != "" {
		row("  closest", "%.1f ms between two such frames, as read (%s)", p.ClosestMS, p.Closest)
	}
	for _, f := range p.Flickers {
		row("  flicker", "%s", f)
	}
	for _, f := range p.ObserverFlickers {
		row("  flicker", "%s", f)
	}
	for _, c := range s.Counters {
		var parts []string
		for _, k := range sortedKeys(c.Changed) {
			parts = append(parts, fmt.Sprintf("%s %+.0f", strings.TrimPrefix(k, "chorus_"), c.Changed[k]))
		}
		if len(parts) == 0 {
			parts = append(parts, "none changed")
		}
		row("server counters", "%s: %s (kill to end of watch)", c.URL, strings.Join(parts, ", "))
	}
	writeResultRows(row, r)
	return tw.Flush()
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
