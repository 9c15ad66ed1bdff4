package natslease

import (
	"context"
	"testing"
	"time"

	"github.com/fxelection/fxelection/internal/electiontesting"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// TestStopDoesNotWaitForTheWatch: stopping an elector ends the shared KV
// watch without waiting for its channel to close (it never does; an earlier
// version drained it for a fixed second, so every Stop took ≥ 1 s). Of three
// Stops, at least one must take well under a second.
func TestStopDoesNotWaitForTheWatch(t *testing.T) {
	srv, _ := newServer(t)
	fastest := time.Hour
	for range 3 {
		b := newBackend(t, srv.URL(), cachelease.Options{})
		c := electiontesting.StartCandidate(t, b, electionName(t), "a", nil)
		electiontesting.WaitLeader(t, []*electiontesting.Candidate{c}, electiontesting.LeaderLimit)
		start := time.Now()
		if err := c.Elector.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		fastest = min(fastest, time.Since(start))
	}
	if fastest >= 500*time.Millisecond {
		t.Fatalf("fastest of three Stops took %v: the watch is waited for", fastest)
	}
	t.Logf("fastest Stop: %v", fastest)
}
