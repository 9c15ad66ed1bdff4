package redislease

import (
	"context"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
	"github.com/fxelection/fxelection/modules/redis/redisfence"
)

// pauseTiming is the pause runs' timing: G = LeaseDuration − RenewDeadline
// is 500ms, so a run injects many pauses of every length (the longest, 2 … 3
// leases, 3 … 4.5s).
var pauseTiming = electiontest.Timing{LeaseDuration: 1500 * time.Millisecond, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond}

// pauseChaos runs the pause workload (electiontest.RunChaos with Pauses) on
// a real redis-server: five members, each a process of its own with its own
// client, frozen with SIGSTOP and resumed with SIGCONT; their fenced writes
// go through redisfence (Guard.Set under the member's term) on the same
// server. In a member process (electiontest.IsChaosChild) no server is
// started: the member reaches the test process's.
func pauseChaos(t *testing.T, locks *electiontest.LockWorkload, d time.Duration, seed uint64) {
	target := ""
	var guard *redisfence.Guard
	if !electiontest.IsChaosChild() {
		srv := newServer(t, testserver.RedisOptions{AppendOnly: true})
		target = srv.Addr()
		guard = redisfence.New(newClient(t, target), redisfence.Options{})
	}
	electiontest.RunChaos(t, electiontest.ChaosOptions{
		Target: target,
		Locks:  locks,
		Pauses: &electiontest.PauseWorkload{
			Fence: func(ctx context.Context, tok fence.Token) error {
				ctx = fence.WithToken(ctx, tok)
				return guard.Set(ctx, "pausechaos:"+redisfence.HashTag(tok.Election)+":data", tok.Term, 0)
			},
		},
		NewClient: chaosClient,
		Timing:    pauseTiming,
		MeanGap:   100 * time.Millisecond,
		Duration:  d,
		Seed:      seed,
	})
}

// TestPauseChaos is the pause workload's short budget: electors, a few
// dozen pauses.
func TestPauseChaos(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	pauseChaos(t, nil, 10*time.Second, 11)
}

// TestSoakPauseChaos runs the pause workload on electors for three minutes
// (about 500 pauses; two soak runs make a thousand); FXELECTION_CHAOS_DURATION and
// FXELECTION_CHAOS_SEED make it longer or another schedule.
func TestSoakPauseChaos(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	pauseChaos(t, nil, 3*time.Minute, 12)
}

// TestSoakLockPauseChaos runs the pause workload on lock clients (two
// keys each) for three minutes.
func TestSoakLockPauseChaos(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	pauseChaos(t, &electiontest.LockWorkload{}, 3*time.Minute, 13)
}
