package realtime

// sentIDs remembers the last sentMemory status ids a connection sent. It
// grows with use: a connection that was sent few statuses holds few ids.
type sentIDs struct {
	ids  []int64
	next int   // where the next id goes once ids is full
	max  int64 // the largest id ever added: none past it was sent
}

// sentMemory is how many status ids a connection remembers having sent, so
// that resume, catch-up and live delivery never send one twice. The
// duplicates it catches are recent statuses (those posted around a resume),
// so a short memory, scanned in a few hundred nanoseconds, is enough; what
// resumes sent in full is remembered as a run of ids besides (sentRange).
const sentMemory = 512

// has reports whether id is among those remembered. A live status is
// most often newer than every one sent before (ids grow with time), and
// is known unsent without a scan.
func (s *sentIDs) has(id int64) bool {
	if id > s.max {
		return false
	}
	for _, x := range s.ids {
		if x == id {
			return true
		}
	}
	return false
}

func (s *sentIDs) add(id int64) {
	s.max = max(s.max, id)
	if len(s.ids) < sentMemory {
		s.ids = append(s.ids, id)
		return
	}
	s.ids[s.next] = id
	s.next = (s.next + 1) % sentMemory
}

// sentRange is a run (lo, hi] of home-timeline ids that a connection's
// resumes sent in full: every status the timeline held in it when read went
// out. A resume from inside it goes on from hi without reading it again.
// Empty when lo == hi.
type sentRange struct{ lo, hi int64 }

// skip is where a resume after `after` has to go on reading.
func (r sentRange) skip(after int64) int64 {
	if r.lo <= after && after < r.hi {
		return r.hi
	}
	return after
}

func (r sentRange) has(id int64) bool { return r.lo < id && id <= r.hi }

func (r sentRange) empty() bool { return r.hi <= r.lo }

// touches reports whether r and o, neither empty, overlap or meet, so that
// their union is one run. An empty r touches every o: it is replaced.
func (r sentRange) touches(o sentRange) bool {
	if o.empty() {
		return false
	}
	return r.empty() || (o.lo <= r.hi && r.lo <= o.hi)
}

// union is the run covering r and o, which touch.
func (r sentRange) union(o sentRange) sentRange {
	if r.empty() {
		return o
	}
	return sentRange{lo: min(r.lo, o.lo), hi: max(r.hi, o.hi)}
}
