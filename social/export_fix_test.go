package social

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// exportOf runs uid's export and decodes it.
func exportOf(t *testing.T, s *Service, uid int64, into any) {
	t.Helper()
	var buf bytes.Buffer
	if err := s.Export(ctxT(t), uid, &buf); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(buf.Bytes(), into); err != nil {
		t.Fatalf("the export does not read back: %v", err)
	}
}

// A like taken out while the export pages through the likes (an unlike, a
// liked status deleted) shifts no other one past a page's edge: every other
// like is exported once, however many share a time, a page's worth and more
// included.
func TestExportLikesSurviveARemovalMidway(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		likes int
		tied  int // likes that share each time
	}{
		{"threes", 1500, 3},
		{"all at once", 1200, 1200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, rdb := newService(t, Options{})
			ctx := ctxT(t)
			ada := signUp(t, s, "ada")
			key := s.keys.liked(ada.ID)
			const at = 1_700_000_000_000
			likes := make([]redis.Z, tc.likes)
			for i := range likes {
				likes[i] = redis.Z{Score: float64(at + i/tc.tied), Member: itoa(int64(1000 + i))}
			}
			if err := rdb.ZAdd(ctx, key, likes...).Err(); err != nil {
				t.Fatal(err)
			}
			// Redis orders members of one score by their bytes: the tenth
			// in its order is the one taken out.
			early, err := rdb.ZRange(ctx, key, 9, 9).Result()
			if err != nil || len(early) != 1 {
				t.Fatal(early, err)
			}
			var reads atomic.Int64
			hook := &beforeOnce{
				match: func(c redis.Cmder) bool {
					args := c.Args()
					return len(args) > 1 && args[1] == key && reads.Add(1) == 2
				},
				do: func() {
					// What an unlike does to the liker's index.
					if err := rdb.ZRem(ctx, key, early[0]).Err(); err != nil {
						t.Error(err)
					}
				},
			}
			rdb.AddHook(hook)
			var ex struct {
				Likes []struct {
					StatusID int64 `json:"status_id"`
				}
			}
			exportOf(t, s, ada.ID, &ex)
			if !hook.fired.Load() {
				t.Fatal("the export read the likes in one page")
			}
			// The like taken out was read, or not, as it went.
			var got, want []string
			for _, l := range ex.Likes {
				if id := itoa(l.StatusID); id != early[0] {
					got = append(got, id)
				}
			}
			for _, l := range likes {
				if l.Member != early[0] {
					want = append(want, l.Member.(string))
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("exported %d likes, want the %d not taken out, each once (missing %v)",
					len(got), len(want), missing(want, got))
			}
		})
	}
}

// missing are the elements of want (sorted) not in got (sorted), the first
// few.
func missing(want, got []string) []string {
	var out []string
	for _, w := range want {
		if _, found := slices.BinarySearch(got, w); !found && len(out) < 5 {
			out = append(out, w)
		}
	}
	return out
}

// An exported repost names its original by id alone: not as a status whose
// other fields are zero values (a null "mentions", a time of year 1).
func TestExportRepostNamesItsOriginalByID(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	ctx := ctxT(t)
	ada, bob := signUp(t, s, "ada"), signUp(t, s, "bob")
	orig := post(t, s, ada.ID, "worth sharing")
	own := post(t, s, bob.ID, "mine, @ada")
	// Repost answers the original; the repost is bob's other status.
	if _, err := s.Repost(ctx, bob.ID, orig.ID); err != nil {
		t.Fatal(err)
	}
	var ex struct{ Statuses []map[string]json.RawMessage }
	exportOf(t, s, bob.ID, &ex)
	if len(ex.Statuses) != 2 {
		t.Fatalf("exported %d statuses, want 2", len(ex.Statuses))
	}
	for _, st := range ex.Statuses {
		if m := string(st["mentions"]); m == "" || m == "null" {
			t.Errorf("status %s: mentions %q, want a list", st["id"], m)
		}
		if string(st["id"]) == itoa(own.ID) {
			if _, ok := st["repost_of"]; ok {
				t.Errorf("a status of bob's own has repost_of %s", st["repost_of"])
			}
			continue
		}
		if got, want := string(st["repost_of"]), fmt.Sprintf(`{"id":%d}`, orig.ID); got != want {
			t.Errorf("the repost's repost_of = %s, want %s", got, want)
		}
	}
}
