package electiontest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/linearize"
)

// LinearizableOptions tune the Contract/Linearizable case: several clients
// hammer Acquire, Renew, Release and Get on a few elections at once, some
// calls cut mid-way or their results dropped, and the recorded history is
// checked against a sequential model of the Backend contract. Zero fields
// take the defaults.
type LinearizableOptions struct {
	// Clients is how many clients (each its own newBackend client) run at
	// once. Default: 6.
	Clients int
	// Elections is how many elections they share. Default: 3.
	Elections int
	// Duration bounds the run. Default: 2s; set it longer (with MaxOps)
	// for a soak run.
	Duration time.Duration
	// MaxOps bounds the calls each client makes. Default: 300.
	MaxOps int
	// Grace is how long after a call that ended without a result (its
	// context cancelled, or a store failure) the store may still apply
	// it: the model lets the call take effect at any instant up to its
	// return plus Grace. A store that applies a cancelled write later than
	// that can make a correct history look wrong. Default: 1s, generous:
	// a loaded machine may deschedule a store process for that long.
	Grace time.Duration
	// CheckTimeout bounds the linearizability check. Default: 1m.
	CheckTimeout time.Duration
	// Seed seeds the clients' choices; 0 picks one (printed on failure).
	Seed uint64

	// PartialReadVersions says Get and HeldError report only part of a
	// record's Version (Azure Blob: the lease id alone, without the ETag
	// that Acquire and Renew add). Their versions are then compared only
	// with each other between writes, never with the versions Acquire and
	// Renew return, so the case cannot catch a Get that misreports which
	// write it saw.
	PartialReadVersions bool

	noVisual bool // the checker's own tests: no HTML file
}

func (o LinearizableOptions) withDefaults() LinearizableOptions {
	if o.Clients == 0 {
		o.Clients = 6
	}
	if o.Elections == 0 {
		o.Elections = 3
	}
	if o.Duration == 0 {
		o.Duration = 2 * time.Second
	}
	if o.MaxOps == 0 {
		o.MaxOps = 300
	}
	if o.Grace == 0 {
		o.Grace = time.Second
	}
	if o.CheckTimeout == 0 {
		o.CheckTimeout = time.Minute
	}
	if o.Seed == 0 {
		o.Seed = rand.Uint64() | 1
	}
	return o
}

// linearizable is the Contract/Linearizable case: Clients clients, each
// with its own backend client, call Acquire, Renew, Release and Get at
// random on Elections elections, as identities from a pool of three with
// incarnations from a pool of four (one of them the empty one, the request
// naming none), so that same-identity races, re-acquisitions by the same
// incarnation and new incarnations all happen; they also send leases they
// held earlier, as a delayed call would. Some calls have their context
// cancelled at a random moment, and some run to the end but the client
// drops the result; such calls, and store failures, may or may not have
// taken effect. Leases last a minute, so none expires during the run (the
// expiry cases cover that); every client releases what it holds at the
// end. The history must be linearizable against the contract's sequential
// model (internal/linearize): every result must be explained by one order
// of the calls, each taking effect at one instant within its own call (up
// to Grace after it for a call without a result).
func (s *suite) linearizable(t *testing.T) {
	o, v, ran := runLinearizable(t, s.newBackend, s.o.Linearizable)
	t.Logf("%d calls (%d without a result) on %d elections in %v; checked in %v: %s; outcomes: %s",
		v.Ops, v.Ambiguous, o.Elections, ran.Round(time.Millisecond), v.Checked.Round(time.Millisecond), v.Result, v.Outcomes)
	for _, p := range v.Problems {
		t.Errorf("contract: %s", p)
	}
	switch v.Result {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Errorf("the linearizability check did not finish within %v (seed %d); make the run smaller", o.CheckTimeout, o.Seed)
	default:
		t.Errorf("history not linearizable against the Backend contract (seed %d):\n%s", o.Seed, v.Report)
	}
}

// runLinearizable runs the clients, then checks what they recorded.
func runLinearizable(t *testing.T, newBackend NewBackend, o LinearizableOptions) (LinearizableOptions, linearize.Verdict, time.Duration) {
	o = o.withDefaults()
	base := electiontesting.Election(t)
	elections := make([]string, o.Elections)
	for i := range elections {
		elections[i] = fmt.Sprintf("%s-%d", base, i)
	}
	h := linearize.NewHistory(o.Grace)
	clients := make([]*linClient, o.Clients)
	for i := range clients {
		clients[i] = &linClient{
			id: i, b: newBackend(t), h: h, maxOps: o.MaxOps, elections: elections,
			rng:    rand.New(rand.NewPCG(o.Seed, uint64(i))),
			leases: map[string]*fxelection.Lease{}, old: map[string][]fxelection.Lease{},
			ident: map[string]string{}, inc: map[string]string{},
		}
	}
	start := time.Now()
	deadline := start.Add(o.Duration)
	ctx := electiontesting.Context(t)
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() { c.loop(ctx, deadline) })
	}
	wg.Wait()
	ran := time.Since(start)
	defer linCleanup(t, newBackend(t), elections)
	return o, h.Check(o.PartialReadVersions, o.CheckTimeout, !o.noVisual), ran
}

// linCleanup releases every lease left behind, as a candidate of the
// holder's identity: take it over with a fresh incarnation, then release.
func linCleanup(t *testing.T, b fxelection.Backend, elections []string) {
	ctx := electiontesting.Context(t)
	for _, e := range elections {
		for range 5 {
			cur, err := b.Get(ctx, e)
			if errors.Is(err, backendkit.ErrNoLease) {
				break
			}
			if err != nil {
				t.Logf("cleanup: get %s: %v", e, err)
				continue
			}
			l, err := b.Acquire(ctx, backendkit.AcquireRequest{Election: e, Identity: cur.Holder, Duration: time.Minute, Incarnation: backendkit.NewIncarnation()})
			if err != nil {
				t.Logf("cleanup: acquire %s: %v", e, err)
				continue
			}
			if err := b.Release(ctx, l); err != nil {
				t.Logf("cleanup: release %s: %v", e, err)
			}
		}
	}
}

// linClient is one client of the run: its own backend client, its own
// leases, and faults of its own.
type linClient struct {
	id        int
	b         fxelection.Backend
	h         *linearize.History
	maxOps    int
	rng       *rand.Rand
	elections []string
	leases    map[string]*fxelection.Lease // the lease last granted, per election
	old       map[string][]fxelection.Lease
	ident     map[string]string // the identity it campaigns as, per election
	inc       map[string]string // its current incarnation, per election
}

// The small pools that make same-identity races and new incarnations
// common. The empty incarnation is the request that names none.
var (
	linIdentities   = []string{"a", "b", "c"}
	linIncarnations = []string{"i1", "i2", "i3", ""}
)

func (c *linClient) loop(ctx context.Context, deadline time.Time) {
	for n := 0; n < c.maxOps && time.Now().Before(deadline) && ctx.Err() == nil; n++ {
		e := c.elections[c.rng.IntN(len(c.elections))]
		c.step(ctx, e)
		time.Sleep(time.Duration(c.rng.IntN(3000)) * time.Microsecond)
	}
	// Give back what it holds.
	for _, e := range c.elections {
		if l := c.leases[e]; l != nil {
			c.release(ctx, e, *l)
		}
	}
}

func (c *linClient) step(ctx context.Context, e string) {
	p := c.rng.IntN(100)
	l := c.leases[e]
	switch {
	case p < 10 && len(c.old[e]) > 0: // a delayed call with a lease from before
		old := c.old[e][c.rng.IntN(len(c.old[e]))]
		if c.rng.IntN(2) == 0 {
			c.renew(ctx, e, old)
		} else {
			c.release(ctx, e, old)
		}
	case l != nil && p < 45:
		c.renew(ctx, e, *l)
	case l != nil && p < 60:
		c.release(ctx, e, *l)
	case l != nil && p < 75, l == nil && p < 45:
		c.get(ctx, e)
	default:
		c.acquire(ctx, e)
	}
}

// ctxFor returns the context for one call and whether its result is to be
// dropped: some calls are cut at a random moment mid-call, and some run
// to the end but the client never sees what they returned, as when a
// connection breaks just after the store answered.
func (c *linClient) ctxFor(ctx context.Context) (context.Context, context.CancelFunc, bool) {
	switch p := c.rng.IntN(100); {
	case p < 6:
		cctx, cancel := context.WithCancel(ctx)
		timer := time.AfterFunc(time.Duration(c.rng.IntN(3000))*time.Microsecond, cancel)
		return cctx, func() { timer.Stop(); cancel() }, false
	case p < 12:
		return ctx, func() {}, true
	}
	return ctx, func() {}, false
}

// call runs f as one recorded call.
func (c *linClient) call(ctx context.Context, in linearize.Input, f func(ctx context.Context) (fxelection.Lease, error)) linearize.Output {
	cctx, cancel, drop := c.ctxFor(ctx)
	start := c.h.Now()
	l, err := f(cctx)
	end := c.h.Now()
	cancel()
	out := c.h.Classify(in, l, err)
	if drop {
		out = linearize.Output{Kind: linearize.Unknown, Err: "result dropped"}
	}
	c.h.Record(in, out, start, end, !drop)
	return out
}

func (c *linClient) acquire(ctx context.Context, e string) {
	id, ok := c.ident[e]
	if !ok || c.leases[e] == nil && c.rng.IntN(4) == 0 {
		id = linIdentities[c.rng.IntN(len(linIdentities))]
		c.ident[e] = id
	}
	inc, ok := c.inc[e]
	if !ok || c.rng.IntN(5) == 0 {
		inc = linIncarnations[c.rng.IntN(len(linIncarnations))]
		c.inc[e] = inc
	}
	in := linearize.Input{Op: linearize.OpAcquire, Client: c.id, Election: e, Identity: id, Inc: inc}
	req := backendkit.AcquireRequest{Election: e, Identity: id, Incarnation: inc, Duration: time.Minute,
		Metadata: map[string]string{"addr": id + ":8080"}}
	var got fxelection.Lease
	out := c.call(ctx, in, func(ctx context.Context) (fxelection.Lease, error) {
		l, err := c.b.Acquire(ctx, req)
		got = l
		return l, err
	})
	if out.Kind == linearize.OK {
		c.keep(e, &got)
	}
}

func (c *linClient) renew(ctx context.Context, e string, l fxelection.Lease) {
	in := linearize.Input{Op: linearize.OpRenew, Client: c.id, Election: e, Lease: linearize.LeaseOf(l)}
	var got fxelection.Lease
	out := c.call(ctx, in, func(ctx context.Context) (fxelection.Lease, error) {
		r, err := c.b.Renew(ctx, l)
		got = r
		return r, err
	})
	cur := c.leases[e]
	isCur := cur != nil && cur.Term == l.Term && cur.Version == l.Version && cur.Holder == l.Holder
	switch out.Kind {
	case linearize.OK:
		if got.Term != l.Term || got.Holder != l.Holder {
			c.h.Problem("Renew of %s/%d returned %s/%d", l.Holder, l.Term, got.Holder, got.Term)
		}
		if isCur || cur == nil {
			c.keep(e, &got)
		}
	case linearize.Lost:
		if isCur {
			c.keep(e, nil)
		}
	}
}

func (c *linClient) release(ctx context.Context, e string, l fxelection.Lease) {
	in := linearize.Input{Op: linearize.OpRelease, Client: c.id, Election: e, Lease: linearize.LeaseOf(l)}
	c.call(ctx, in, func(ctx context.Context) (fxelection.Lease, error) {
		return fxelection.Lease{}, c.b.Release(ctx, l)
	})
	if cur := c.leases[e]; cur != nil && cur.Term == l.Term && cur.Version == l.Version {
		c.keep(e, nil)
	}
}

func (c *linClient) get(ctx context.Context, e string) {
	in := linearize.Input{Op: linearize.OpGet, Client: c.id, Election: e}
	c.call(ctx, in, func(ctx context.Context) (fxelection.Lease, error) { return c.b.Get(ctx, e) })
}

// keep makes l (nil: none) the client's lease of e, keeping a few earlier
// ones for delayed calls.
func (c *linClient) keep(e string, l *fxelection.Lease) {
	if prev := c.leases[e]; prev != nil {
		c.old[e] = append(c.old[e], *prev)
		if len(c.old[e]) > 4 {
			c.old[e] = c.old[e][1:]
		}
	}
	c.leases[e] = l
}
