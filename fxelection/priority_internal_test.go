package fxelection

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/handover"
	"github.com/fxelection/fxelection/fxelection/memory"
)

// TestGraceRule: after seeing a candidate of higher priority, a candidate
// looks instead of acquiring for LeaseDuration + PriorityGrace, and takes
// a free lease only once it has found it free for PriorityGrace; a held
// record restarts that wait. Lower or equal priorities, and its own
// record, change nothing.
func TestGraceRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := policyTestConfig()
		cfg.Candidacy.Priority, cfg.Candidacy.PriorityGrace = 1, 2*time.Second
		e, err := New(cfg, memory.New())
		if err != nil {
			t.Fatal(err)
		}
		g := graceRule{}
		rec := func(holder string, prio int) Lease {
			return Lease{Holder: holder, Metadata: map[string]string{handover.MetaPriority: fmt.Sprint(prio)}}
		}
		g.sawLeader(e, rec("low", 1))
		g.sawLeader(e, rec("me", 5))
		if m := g.beforeAttempt(e); m != modeAcquire || e.prio.Load() != nil {
			t.Fatalf("after equal priorities and its own record: mode %d, state %v; want modeAcquire and none", m, e.prio.Load())
		}
		g.sawLeader(e, rec("high", 2))
		if m := g.beforeAttempt(e); m != modeLook {
			t.Fatalf("after a higher priority: mode %d, want modeLook", m)
		}
		if g.afterLook(e, backendkit.ErrNoLease) {
			t.Fatal("took a lease found free just now")
		}
		time.Sleep(time.Second)
		if g.afterLook(e, &backendkit.HeldError{Holder: rec("high", 2)}) {
			t.Fatal("took a held lease")
		}
		g.afterLook(e, backendkit.ErrNoLease) // free again: the wait restarts here
		time.Sleep(time.Second)
		if g.afterLook(e, backendkit.ErrNoLease) {
			t.Fatal("took the lease after finding it free for less than PriorityGrace")
		}
		time.Sleep(time.Second)
		if !g.afterLook(e, backendkit.ErrNoLease) {
			t.Fatal("did not take the lease after finding it free for PriorityGrace")
		}
		time.Sleep(cfg.LeaseDuration + cfg.Candidacy.PriorityGrace)
		if m := g.beforeAttempt(e); m != modeAcquire {
			t.Fatalf("LeaseDuration + PriorityGrace after the last sight: mode %d, want modeAcquire", m)
		}
	})
}
