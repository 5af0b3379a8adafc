package batch

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestGetGathersKeysAskedDuringACall: keys asked while a call runs go
// together in the next one, each key once, and every caller gets its own
// key's answer.
func TestGetGathersKeysAskedDuringACall(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var calls [][]int
	var b Batcher[int, int]
	b.Do = func(_ context.Context, keys []int) ([]int, error) {
		mu.Lock()
		calls = append(calls, slices.Clone(keys))
		first := len(calls) == 1
		mu.Unlock()
		if first {
			<-release // the others ask while this call runs
		}
		out := make([]int, len(keys))
		for i, k := range keys {
			out[i] = k * 10
		}
		return out, nil
	}
	got := make([]int, 7)
	var wg sync.WaitGroup
	wg.Go(func() { got[0], _ = b.Get(0) })
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(calls) == 1 })
	for i := 1; i < len(got); i++ {
		wg.Go(func() { got[i], _ = b.Get(i % 3) }) // keys 1, 2, 0, 1, 2, 0
	}
	waitFor(t, func() bool { return b.Waiting() == len(got)-1 })
	close(release)
	wg.Wait()
	for i, v := range got {
		if want := (i % 3) * 10; v != want {
			t.Errorf("Get #%d answered %d", i, v)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("calls %v; want 2: the first key alone, then the others together", calls)
	}
	if slices.Sort(calls[1]); !slices.Equal(calls[1], []int{0, 1, 2}) {
		t.Errorf("second call's keys %v; want each key once", calls[1])
	}
}

// TestSpacingGathersASteadyFlow: with Spacing, keys asked one after another
// go in calls that start at least Spacing apart, so a flow of keys makes
// far fewer calls than keys; without it, a key asked after a call ended
// gets a call of its own.
func TestSpacingGathersASteadyFlow(t *testing.T) {
	const keys = 40
	for _, spacing := range []time.Duration{0, 200 * time.Millisecond} {
		var calls atomic.Int64
		var starts []time.Time
		var mu sync.Mutex
		b := Batcher[int, int]{Spacing: spacing}
		b.Do = func(_ context.Context, ks []int) ([]int, error) {
			calls.Add(1)
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			return ks, nil
		}
		var wg sync.WaitGroup
		for i := range keys {
			// One after another, each asked after the last was answered
			// when there is no spacing.
			if spacing == 0 {
				if v, err := b.Get(i); err != nil || v != i {
					t.Fatalf("Get(%d) = %d, %v", i, v, err)
				}
				continue
			}
			wg.Go(func() {
				if v, err := b.Get(i); err != nil || v != i {
					t.Errorf("Get(%d) = %d, %v", i, v, err)
				}
			})
			time.Sleep(time.Millisecond)
		}
		wg.Wait()
		n := calls.Load()
		if spacing == 0 && n != keys {
			t.Errorf("no spacing: %d calls for %d keys asked one after another; want one each", n, keys)
		}
		if spacing > 0 {
			// 40 keys over at least 40 ms: the first alone, the rest
			// gathered while the spacing runs (however slow the machine,
			// calls are at least 200 ms apart).
			if n >= keys/2 {
				t.Errorf("spacing %v: %d calls for %d keys; want them gathered", spacing, n, keys)
			}
			for i := 1; i < len(starts); i++ {
				if gap := starts[i].Sub(starts[i-1]); gap < spacing {
					t.Errorf("calls %d and %d started %v apart; want at least %v", i-1, i, gap, spacing)
				}
			}
		}
	}
}

// TestMaxBoundsACall: no call gets more than Max keys; the rest go next.
func TestMaxBoundsACall(t *testing.T) {
	b := Batcher[int, int]{Max: 3}
	if sizes := behindAFirstCall(t, &b, 7); !slices.Equal(sizes, []int{1, 3, 3, 1}) {
		t.Errorf("call sizes %v; want [1 3 3 1]", sizes)
	}
}

// behindAFirstCall asks b one key, then n more while the call for the
// first is held, releases it, and returns the sizes of b's calls once all
// are answered. b.Do, when set, answers the calls.
func behindAFirstCall(t *testing.T, b *Batcher[int, int], n int) []int {
	t.Helper()
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	inner := b.Do
	b.Do = func(ctx context.Context, ks []int) ([]int, error) {
		mu.Lock()
		sizes = append(sizes, len(ks))
		first := len(sizes) == 1
		mu.Unlock()
		if first {
			<-release
		}
		if inner != nil {
			return inner(ctx, ks)
		}
		return ks, nil
	}
	var answered atomic.Int64
	get := func(k int) {
		b.Get(k)
		answered.Add(1)
	}
	go get(-1)
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(sizes) == 1 })
	for i := range n {
		go get(i)
	}
	waitFor(t, func() bool { return b.Waiting() == n })
	close(release)
	waitFor(t, func() bool { return answered.Load() == int64(n+1) })
	mu.Lock()
	defer mu.Unlock()
	return sizes
}

// TestSpacingGrowsUnderACrowd: calls whose requests came at Crowd per
// Spacing or faster double the spacing up to MaxSpacing; slower ones
// halve it down to Spacing, whatever their size; without MaxSpacing and
// Crowd it stays Spacing.
func TestSpacingGrowsUnderACrowd(t *testing.T) {
	const ms = time.Millisecond
	b := Batcher[int, int]{Spacing: 10 * ms, MaxSpacing: 80 * ms, Crowd: 3}
	steps := []struct {
		n    int
		gap  time.Duration
		want time.Duration
	}{
		{1, time.Hour, 10 * ms}, // a lone key after a while
		{3, 10 * ms, 20 * ms},   // 3 per 10 ms
		{6, 20 * ms, 40 * ms},
		{12, 40 * ms, 80 * ms},
		{100, 80 * ms, 80 * ms},
		{3, 80 * ms, 40 * ms}, // a call of 3, but over 80 ms: thin
		{7, 40 * ms, 20 * ms},
		{1, 20 * ms, 10 * ms},
		{1, 10 * ms, 10 * ms},
		{3, 10 * ms, 20 * ms},
	}
	for i, step := range steps {
		if b.adapt(step.n, step.gap); b.spacing != step.want {
			t.Errorf("step %d: after a call of %d over %v, spacing %v; want %v", i, step.n, step.gap, b.spacing, step.want)
		}
	}
	fixed := Batcher[int, int]{Spacing: 10 * ms}
	for _, n := range []int{1, 50, 500} {
		if fixed.adapt(n, ms); fixed.spacing != 10*ms {
			t.Errorf("no crowd rule: after a call of %d, spacing %v; want 10ms", n, fixed.spacing)
		}
	}
}

// TestACrowdGrowsTheSpacingUntilIdle: the call that takes a crowd (50 keys
// asked while the first call ran) starts with the spacing doubled, and the
// spacing is Spacing again once no key waits.
func TestACrowdGrowsTheSpacingUntilIdle(t *testing.T) {
	const ms = time.Millisecond
	b := Batcher[int, int]{Spacing: 10 * ms, MaxSpacing: 80 * ms, Crowd: 1}
	spacing := func() time.Duration {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.spacing
	}
	var mu sync.Mutex
	var seen []time.Duration // the spacing as each call starts
	b.Do = func(_ context.Context, ks []int) ([]int, error) {
		sp := spacing()
		mu.Lock()
		seen = append(seen, sp)
		mu.Unlock()
		return ks, nil
	}
	// 50 keys in well under half a second: at least one per 10 ms.
	if sizes := behindAFirstCall(t, &b, 50); !slices.Equal(sizes, []int{1, 50}) {
		t.Fatalf("call sizes %v; want [1 50]", sizes)
	}
	mu.Lock()
	got := slices.Clone(seen)
	mu.Unlock()
	if !slices.Equal(got, []time.Duration{10 * ms, 20 * ms}) {
		t.Errorf("spacing as the calls started: %v; want [10ms 20ms]", got)
	}
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return !b.running })
	if sp := spacing(); sp != 10*ms {
		t.Errorf("spacing once idle: %v; want 10ms", sp)
	}
}

// TestFullBacklogDoesNotWait: while Max keys or more wait, the next call
// starts at once, whatever the spacing.
func TestFullBacklogDoesNotWait(t *testing.T) {
	// Two more calls of two after the first, none waiting out the hour
	// (waitFor gives up after 30 s).
	b := Batcher[int, int]{Max: 2, Spacing: time.Hour}
	if sizes := behindAFirstCall(t, &b, 4); !slices.Equal(sizes, []int{1, 2, 2}) {
		t.Errorf("call sizes %v; want [1 2 2]", sizes)
	}
}

// TestFullBacklogEndsTheWait: keys that come to fill a call while the
// runner waits out its spacing end the wait.
func TestFullBacklogEndsTheWait(t *testing.T) {
	asleep := make(chan struct{}, 2)
	b := Batcher[int, int]{Max: 3, Spacing: time.Hour, onSleep: func() { asleep <- struct{}{} }}
	var mu sync.Mutex
	var sizes []int
	b.Do = func(_ context.Context, ks []int) ([]int, error) {
		mu.Lock()
		sizes = append(sizes, len(ks))
		mu.Unlock()
		return ks, nil
	}
	b.Get(-1) // alone, at once: the next call is due in an hour
	var answered atomic.Int64
	get := func(k int) {
		b.Get(k)
		answered.Add(1)
	}
	<-asleep // after the first call, with none waiting
	go get(0)
	waitFor(t, func() bool { return b.Waiting() == 1 })
	go get(1)
	go get(2)
	// waitFor gives up after 30 s, long before the hour.
	waitFor(t, func() bool { return answered.Load() == 3 })
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(sizes, []int{1, 3}) {
		t.Errorf("call sizes %v; want [1 3]", sizes)
	}
}

// TestGetAll: keys asked together go in one call, but for Max, and each is
// answered in its place; a failed call fails GetAll, the other calls'
// answers kept.
func TestGetAll(t *testing.T) {
	boom := errors.New("boom")
	var mu sync.Mutex
	var calls [][]int
	b := Batcher[int, int]{Max: 3}
	b.Do = func(_ context.Context, ks []int) ([]int, error) {
		mu.Lock()
		calls = append(calls, slices.Clone(ks))
		mu.Unlock()
		if slices.Contains(ks, -1) {
			return nil, boom
		}
		out := make([]int, len(ks))
		for i, k := range ks {
			out[i] = k * 10
		}
		return out, nil
	}
	got, err := b.GetAll([]int{3, 1, 2, 1, 4})
	if err != nil || !slices.Equal(got, []int{30, 10, 20, 10, 40}) {
		t.Errorf("GetAll: %v, %v; want [30 10 20 10 40]", got, err)
	}
	if want := [][]int{{3, 1, 2}, {1, 4}}; !slices.EqualFunc(calls, want, slices.Equal) {
		t.Errorf("calls %v; want %v", calls, want)
	}
	got, err = b.GetAll([]int{5, 6, 7, -1})
	if !errors.Is(err, boom) || !slices.Equal(got, []int{50, 60, 70, 0}) {
		t.Errorf("GetAll with a failed call: %v, %v; want [50 60 70 0], boom", got, err)
	}
	calls = nil
	got, err = b.GetAll([]int{2, 2, 1})
	if err != nil || !slices.Equal(got, []int{20, 20, 10}) || !slices.EqualFunc(calls, [][]int{{2, 1}}, slices.Equal) {
		t.Errorf("GetAll of a key twice: %v, %v in calls %v; want [20 20 10] in one call of [2 1]", got, err, calls)
	}
	if got, err := b.GetAll(nil); err != nil || len(got) != 0 {
		t.Errorf("GetAll of none: %v, %v", got, err)
	}
}

// TestErrorsReachEveryCaller: a failed call fails each of its keys, and a
// call answering the wrong number of values is a failure too.
func TestErrorsReachEveryCaller(t *testing.T) {
	boom := errors.New("boom")
	var b Batcher[string, int]
	b.Do = func(_ context.Context, ks []string) ([]int, error) {
		if ks[0] == "short" {
			return nil, nil
		}
		return nil, boom
	}
	if _, err := b.Get("x"); !errors.Is(err, boom) {
		t.Errorf("Get after a failed call: %v; want boom", err)
	}
	if _, err := b.Get("short"); err == nil {
		t.Error("Get answered by a call with no values: no error")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 30 s")
		}
		time.Sleep(time.Millisecond)
	}
}
