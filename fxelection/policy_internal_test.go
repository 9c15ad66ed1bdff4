package fxelection

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/memory"
)

// policyTestConfig is a valid Config for the seam's tests.
func policyTestConfig() Config {
	return Config{Name: "e", Identity: "me", Timing: Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: time.Second}}
}

// TestPoliciesNoneConfigured: an elector whose Config sets no policy
// shares one policy set with every such elector (no allocation of its
// own), with nothing to consult after a renewal and nothing to start: only
// the grace rule of priorities, which every candidate follows.
func TestPoliciesNoneConfigured(t *testing.T) {
	a, err := New(policyTestConfig(), memory.New())
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(policyTestConfig(), memory.New())
	if err != nil {
		t.Fatal(err)
	}
	if a.pol != b.pol || a.pol != defaultPolicies {
		t.Fatal("electors without policies do not share the default policy set")
	}
	p := a.pol
	if len(p.renewals) != 0 || len(p.lives) != 0 || len(p.refusals) != 0 {
		t.Fatalf("default policies answer after renewals (%d), at Start/Stop (%d) or at refusals (%d); want none", len(p.renewals), len(p.lives), len(p.refusals))
	}
	if len(p.gates) != 1 || len(p.seers) != 1 {
		t.Fatalf("default policies: %d gates, %d seers; want the grace rule's 1 and 1", len(p.gates), len(p.seers))
	}
	if allocs := testing.AllocsPerRun(100, func() { newPolicies(policyTestConfig()) }); allocs != 0 {
		t.Errorf("newPolicies without policies allocates %v times; want 0", allocs)
	}
}

// TestPoliciesConfigured: each Config field adds its policy at the points
// it answers at, in the order they are consulted (health first).
func TestPoliciesConfigured(t *testing.T) {
	cfg := policyTestConfig()
	cfg.Health.Check = func(context.Context) error { return nil }
	cfg.Candidacy.Defer = func() bool { return false }
	cfg.Candidacy.Preempt, cfg.Candidacy.Priority = true, 1
	p := newPolicies(cfg)
	kinds := func(list any) string { return fmt.Sprintf("%T", list) }
	for _, c := range []struct{ got, want string }{
		{kinds(p.gates), "[]fxelection.attemptGate"},
		{fmt.Sprintf("%T %T %T", p.gates[0], p.gates[1], p.gates[2]), "*fxelection.healthPolicy fxelection.deferPolicy fxelection.graceRule"},
		{fmt.Sprintf("%T", p.seers), "[]fxelection.leaderSeer"},
		{fmt.Sprintf("%d %d %d %d", len(p.gates), len(p.seers), len(p.refusals), len(p.renewals)), "3 1 1 1"},
		{fmt.Sprintf("%T %T", p.renewals[0], p.lives[0]), "fxelection.preemptRule *fxelection.healthPolicy"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}

// gateFunc is an attemptGate for the tests.
type gateFunc struct {
	mode  attemptMode
	look  bool
	asked *int
	told  *int
}

func (g gateFunc) beforeAttempt(*Elector) attemptMode { *g.asked++; return g.mode }
func (g gateFunc) afterLook(*Elector, error) bool     { *g.told++; return g.look }

// TestGateMode: the most restrictive answer wins; a skip ends the round
// (later gates are not asked); after a look every gate that asked for it
// is told, and the attempt acquires only if all agree.
func TestGateMode(t *testing.T) {
	var asked, told [3]int
	gate := func(i int, mode attemptMode, look bool) gateFunc {
		return gateFunc{mode: mode, look: look, asked: &asked[i], told: &told[i]}
	}
	reset := func() { asked, told = [3]int{}, [3]int{} }

	ps := newPolicySet(gate(0, modeAcquire, false), gate(1, modeLook, true), gate(2, modeLook, false))
	mode, looked := ps.gateMode(nil)
	if mode != modeLook || looked != 0b110 {
		t.Fatalf("gateMode = %d, %b; want modeLook, 110", mode, looked)
	}
	if ps.lookOver(nil, looked, backendkit.ErrNoLease) {
		t.Error("lookOver acquires though one gate refused")
	}
	if told != [3]int{0, 1, 1} {
		t.Errorf("afterLook calls %v; want [0 1 1] (every gate that asked, none other)", told)
	}

	reset()
	ps = newPolicySet(gate(0, modeSkip, false), gate(1, modeLook, true))
	if mode, _ := ps.gateMode(nil); mode != modeSkip || asked != [3]int{1, 0, 0} {
		t.Errorf("gateMode = %d after asking %v; want modeSkip after asking only the first", mode, asked)
	}

	reset()
	ps = newPolicySet(gate(0, modeLook, true), gate(1, modeLook, true))
	if _, looked := ps.gateMode(nil); !ps.lookOver(nil, looked, backendkit.ErrNoLease) {
		t.Error("lookOver refuses though every gate agreed")
	}
}

// TestSkippedAttempt: a skipped attempt is neither a store failure (no
// backoff) nor an error a TryAcquire reports.
func TestSkippedAttempt(t *testing.T) {
	e, err := New(policyTestConfig(), memory.New())
	if err != nil {
		t.Fatal(err)
	}
	var won Lease
	if _, err := e.attemptAs(modeSkip, 0, &won); !errors.Is(err, errSkipped) || !won.IsZero() {
		t.Fatalf("attemptAs(modeSkip) = %v, %+v; want errSkipped and no lease", err, won)
	}
	if _, failures := e.retryDelay(errSkipped, 3); failures != 0 {
		t.Errorf("a skipped attempt counts as store failure %d", failures)
	}
}

// TestHandOverEventKind: handover.Event, the kind of a hand-over's
// outcome, follows the other kinds and has its name.
func TestHandOverEventKind(t *testing.T) {
	if eventHandOver != EventPanic+1 || eventHandOver.String() != "hand-over" {
		t.Fatalf("handover.Event = %d (%s); want %d (hand-over)", eventHandOver, eventHandOver, EventPanic+1)
	}
}
