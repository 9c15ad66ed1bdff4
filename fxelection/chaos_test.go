package fxelection_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testtier"
)

// TestChaos runs five candidates on one store for an hour of fake time while
// random faults hit them: partitions, hung stores, slow stores, failing
// renewals, lost leases, resignations, graceful and abrupt restarts. The
// guarantees must hold throughout: no two candidates ever believe they lead
// at the same instant, the term rises with every change of holder, and once the faults stop a leader is elected within a lease and a
// few retries. Each seed is one reproducible schedule. One seed runs in
// the default tier (the core's own check); TestSoakChaos runs six.
func TestChaos(t *testing.T) { chaosSeeds(t, 1, plainFaults) }

// TestSoakChaos is TestChaos with seeds 0 to 5.
func TestSoakChaos(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	chaosSeeds(t, 6, plainFaults)
}

// chaosSeeds runs the schedules of seeds 0 to n-1, each in a synctest
// bubble, with candidates on backends made by wrap.
func chaosSeeds(t *testing.T, n uint64, wrap func(fxelection.Backend) chaosBackend) {
	for seed := range n {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { chaosWith(t, seed, wrap) })
		})
	}
}

// plainFaults wraps a backend in faultinject's faults.
func plainFaults(b fxelection.Backend) chaosBackend { return faultinject.New(b) }

type chaosCandidate struct {
	id string
	f  chaosBackend
	e  *fxelection.Elector
}

// chaosBackend is the fault-injecting backend of one chaos candidate.
type chaosBackend interface {
	fxelection.Backend
	Partition(on bool)
	Hang(on bool)
	Delay(d time.Duration)
	Fail(op string, err error)
}

// chaosWith runs the chaos schedule of seed with candidates on backends
// made by wrap around one store.
func chaosWith(t *testing.T, seed uint64, wrap func(fxelection.Backend) chaosBackend) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	store := memory.New()
	rec := &electiontesting.Recorder{}
	newElector := func(c *chaosCandidate) {
		// A group of its own: with a BatchRenewer (BatchFaulty) every
		// renewal goes through RenewBatch.
		g, err := fxelection.NewGroup(c.f)
		if err != nil {
			t.Fatal(err)
		}
		e, err := g.New(cfg(c.id))
		if err != nil {
			t.Fatal(err)
		}
		e.AddObserver(rec)
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		c.e = e
	}
	cands := make([]*chaosCandidate, 5)
	for i := range cands {
		cands[i] = &chaosCandidate{id: fmt.Sprintf("c%d", i), f: wrap(store)}
		newElector(cands[i])
	}
	heal := func(c *chaosCandidate) {
		c.f.Partition(false)
		c.f.Hang(false)
		c.f.Delay(0)
		c.f.Fail(backendkit.OpRenew, nil)
		c.f.Fail(backendkit.OpAcquire, nil)
	}
	var faults [10]int
	end := time.Now().Add(time.Hour)
	for time.Now().Before(end) {
		time.Sleep(time.Duration(rng.Int64N(int64(3 * time.Second))))
		c := cands[rng.IntN(len(cands))]
		kind := rng.IntN(len(faults))
		faults[kind]++
		switch kind {
		case 0:
			c.f.Partition(true)
		case 1:
			c.f.Hang(true)
		case 2:
			c.f.Delay(time.Duration(rng.Int64N(int64(2 * time.Second))))
		case 3:
			c.f.Fail(backendkit.OpRenew, faultinject.ErrInjected)
		case 4:
			c.f.Fail(backendkit.OpRenew, backendkit.ErrLeaseLost)
		case 5:
			_ = c.e.Resign(context.Background())
		case 6: // graceful restart with the same identity
			_ = c.e.Stop(context.Background())
			newElector(c)
		case 7: // abrupt restart: the old process vanishes without releasing
			c.f.Partition(true)
			_ = c.e.Stop(context.Background())
			heal(c)
			newElector(c)
		default:
			heal(c)
		}
	}
	for _, c := range cands {
		heal(c)
	}
	time.Sleep(lease + 4*retry)
	leaders := 0
	for _, c := range cands {
		if c.e.IsLeader() {
			leaders++
		}
	}
	if leaders != 1 {
		t.Fatalf("%d leaders after the faults stopped, want 1", leaders)
	}
	for _, c := range cands {
		_ = c.e.Stop(context.Background())
	}
	if a, b, found := rec.Overlap(); found {
		t.Fatalf("two candidates believed they led at once: %+v and %+v", a, b)
	}
	var last uint64
	var lastHolder string
	ivs := rec.Intervals()
	for _, iv := range ivs {
		// A holder that stepped down while the store still named it (its
		// renewal failed, not its lease) takes its own lease back with the
		// same term; any change of holder must raise the term.
		if iv.Term < last || iv.Term == last && iv.Identity != lastHolder {
			t.Fatalf("term %d for %s after term %d for %s", iv.Term, iv.Identity, last, lastHolder)
		}
		last, lastHolder = iv.Term, iv.Identity
	}
	if len(ivs) < 20 {
		t.Fatalf("only %d leaderships in an hour of chaos: the schedule is too gentle", len(ivs))
	}
	t.Logf("seed %d: %d leaderships, final term %d, faults by kind %v", seed, len(ivs), last, faults)
}
