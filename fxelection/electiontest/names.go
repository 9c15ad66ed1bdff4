package electiontest

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
)

// CheckElectionNames checks that each of names (text a store might read as
// syntax: separators, wildcards, escapes, long multi-byte names) is an
// election of its own: a acquires each for a minute as "a", and b (another
// client on the same store) reads each back with that holder, term and
// name.
func CheckElectionNames(t testing.TB, a, b fxelection.Backend, names []string) {
	t.Helper()
	terms := map[string]uint64{}
	for _, n := range names {
		l, err := a.Acquire(electiontesting.Context(t), backendkit.AcquireRequest{Election: n, Identity: "a", Duration: time.Minute})
		if err != nil {
			t.Fatalf("Acquire(%q): %v", n, err)
		}
		terms[n] = l.Term
	}
	for _, n := range names {
		got, err := b.Get(electiontesting.Context(t), n)
		if err != nil || got.Holder != "a" || got.Term != terms[n] || got.Election != n {
			t.Fatalf("Get(%q) = %+v, %v", n, got, err)
		}
	}
}
