package realtime

import (
	"bufio"
	"fmt"
	"net"
	"testing"
	"time"
)

// While a resume or a catch-up writes, each status's event carries its own
// id, under which every status was sent, and the newest is told once it
// ended whole; one cut short leaves the id where it was, whatever comes
// live after it, until one ends whole.
func TestEventStreamIDsOfAFill(t *testing.T) {
	e, lines := pipedEventStream(t)
	deadline := time.Now().Add(time.Minute)
	status := func(id int64) func() error {
		return func() error {
			return e.write(deadline, fmt.Appendf(nil, `{"type":"status","status":{"id":%d}}`, id), id)
		}
	}
	// event is the lines of status's event, with id as its event id.
	event := func(status, id int64) []string {
		return []string{fmt.Sprint("id: ", id), "event: status", fmt.Sprintf(`data: {"type":"status","status":{"id":%d}}`, status), ""}
	}
	steps := []struct {
		name  string
		write func() error
		want  []string
	}{
		{"live", status(7), event(7, 7)},
		{"a resume begins", func() error { e.fill(); return nil }, nil},
		{"resumed", status(3), event(3, 3)},
		{"resumed too", status(4), event(4, 4)},
		{"the resume ends", func() error { return e.filled(deadline, true) }, []string{"id: 7", ""}},
		{"live again", status(8), event(8, 8)},
		{"a catch-up begins", func() error { e.fill(); return nil }, nil},
		{"caught up", status(5), event(5, 5)},
		{"the catch-up is cut short", func() error { return e.filled(deadline, false) }, nil},
		{"live, still owed", status(9), event(9, 5)},
		{"a resume begins again", func() error { e.fill(); return nil }, nil},
		{"resumed again", status(6), event(6, 6)},
		{"the resume ends again", func() error { return e.filled(deadline, true) }, []string{"id: 9", ""}},
		{"nothing new resumed", func() error { e.fill(); return e.filled(deadline, true) }, nil},
		{"live at last", status(10), event(10, 10)},
	}
	for _, step := range steps {
		errc := make(chan error, 1)
		go func() { errc <- step.write() }()
		for _, want := range step.want {
			if got := <-lines; got != want {
				t.Fatalf("%s: line %q, want %q", step.name, got, want)
			}
		}
		if err := <-errc; err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
	}
}

// pipedEventStream is an event stream on one end of a pipe, and the lines
// read from the other end, closed when the stream closes.
func pipedEventStream(tb testing.TB) (*eventStream, <-chan string) {
	tb.Helper()
	server, client := net.Pipe()
	tb.Cleanup(func() { client.Close() })
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(client)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return &eventStream{conn: server, timeout: 5 * time.Second}, lines
}
