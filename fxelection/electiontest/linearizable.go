package electiontest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
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
// end. The history must be linearizable against linModel: every result
// must be explained by one order of the calls, each taking effect at one
// instant within its own call (up to Grace after it for a call without a
// result).
func (s *suite) linearizable(t *testing.T) {
	v := runLinearizable(t, s.newBackend, s.o.Linearizable)
	t.Logf("%d calls (%d without a result) on %d elections in %v; checked in %v: %s; outcomes: %s",
		v.ops, v.ambiguous, v.elections, v.ran.Round(time.Millisecond), v.checked.Round(time.Millisecond), v.result, v.outcomes)
	for _, p := range v.problems {
		t.Errorf("contract: %s", p)
	}
	switch v.result {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Errorf("the linearizability check did not finish within %v (seed %d); make the run smaller", v.o.CheckTimeout, v.o.Seed)
	default:
		t.Errorf("history not linearizable against the Backend contract (seed %d):\n%s", v.o.Seed, v.report)
	}
}

// linVerdict is the outcome of one run.
type linVerdict struct {
	o            LinearizableOptions
	result       porcupine.CheckResult
	problems     []string // results that break the contract on their own
	report       string   // on Illegal: the offending history, readable
	outcomes     string   // how many calls of each kind had each outcome
	ops          int
	ambiguous    int
	elections    int
	ran, checked time.Duration
}

// linRun records one run's history.
type linRun struct {
	o     LinearizableOptions
	start time.Time

	mu        sync.Mutex
	ops       []porcupine.Operation
	problems  []string
	ambiguous int
}

func (r *linRun) now() int64 { return int64(time.Since(r.start)) }

func (r *linRun) problem(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.problems) < 20 {
		r.problems = append(r.problems, fmt.Sprintf(format, args...))
	}
}

// record adds one call to the history. A call without a result may take
// effect up to Grace after it returned; a Get without a result constrains
// nothing and is left out.
func (r *linRun) record(in linInput, out linOutput, call, ret int64, late bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if out.Kind == outUnknown {
		r.ambiguous++
		if in.Op == opGet {
			return
		}
		if late {
			ret += int64(r.o.Grace)
		}
	}
	r.ops = append(r.ops, porcupine.Operation{ClientId: in.Client, Input: in, Output: out, Call: call, Return: ret})
}

// runLinearizable runs the clients, then checks what they recorded.
func runLinearizable(t *testing.T, newBackend NewBackend, o LinearizableOptions) linVerdict {
	o = o.withDefaults()
	base := electiontesting.Election(t)
	elections := make([]string, o.Elections)
	for i := range elections {
		elections[i] = fmt.Sprintf("%s-%d", base, i)
	}
	r := &linRun{o: o}
	clients := make([]*linClient, o.Clients)
	for i := range clients {
		clients[i] = &linClient{
			id: i, b: newBackend(t), run: r, elections: elections,
			rng:    rand.New(rand.NewPCG(o.Seed, uint64(i))),
			leases: map[string]*fxelection.Lease{}, old: map[string][]fxelection.Lease{},
			ident: map[string]string{}, inc: map[string]string{},
		}
	}
	r.start = time.Now()
	deadline := r.start.Add(o.Duration)
	ctx := electiontesting.Context(t)
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.loop(ctx, deadline)
		}()
	}
	wg.Wait()
	ran := time.Since(r.start)
	defer linCleanup(t, newBackend(t), elections)

	r.mu.Lock()
	ops := append([]porcupine.Operation(nil), r.ops...)
	v := linVerdict{o: o, problems: r.problems, ops: len(ops), ambiguous: r.ambiguous, elections: o.Elections, ran: ran}
	r.mu.Unlock()
	v.outcomes = linOutcomes(ops)
	model := linModel(o.PartialReadVersions)
	began := time.Now()
	v.result = porcupine.CheckOperationsTimeout(model, ops, o.CheckTimeout)
	if v.result == porcupine.Illegal {
		v.report = linReport(model, ops, o, !o.noVisual)
	}
	v.checked = time.Since(began)
	return v
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
	run       *linRun
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
	for n := 0; n < c.run.o.MaxOps && time.Now().Before(deadline) && ctx.Err() == nil; n++ {
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
func (c *linClient) call(ctx context.Context, in linInput, f func(ctx context.Context) (fxelection.Lease, error)) linOutput {
	cctx, cancel, drop := c.ctxFor(ctx)
	start := c.run.now()
	l, err := f(cctx)
	end := c.run.now()
	cancel()
	out := c.classify(in, l, err)
	if drop {
		out = linOutput{Kind: outUnknown, Err: "result dropped"}
	}
	c.run.record(in, out, start, end, !drop)
	return out
}

// classify turns a call's result into the model's output, noting results
// the contract forbids whatever the state.
func (c *linClient) classify(in linInput, l fxelection.Lease, err error) linOutput {
	lease := func(l fxelection.Lease) linLease {
		return linLease{Holder: l.Holder, Incarnation: l.Incarnation, Version: l.Version, Term: l.Term}
	}
	var he *backendkit.HeldError
	switch {
	case err == nil:
		if in.Op != opRelease && l.Election != in.Election {
			c.run.problem("%s on %s returned a lease of election %q", in.Op, in.Election, l.Election)
		}
		return linOutput{Kind: outOK, Lease: lease(l)}
	case errors.As(err, &he) && in.Op == opAcquire:
		return linOutput{Kind: outHeld, Lease: lease(he.Holder)}
	case errors.Is(err, backendkit.ErrLeaseLost) && in.Op == opRenew:
		return linOutput{Kind: outLost}
	case errors.Is(err, backendkit.ErrNoLease) && in.Op == opGet:
		return linOutput{Kind: outNoLease}
	case errors.Is(err, backendkit.ErrLeaseHeld), errors.Is(err, backendkit.ErrLeaseLost), errors.Is(err, backendkit.ErrNoLease):
		c.run.problem("%s returned %v, which the contract does not allow for it", in.Op, err)
	}
	return linOutput{Kind: outUnknown, Err: errText(err)}
}

// errText shortens an error for the history display.
func errText(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	}
	s := err.Error()
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
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
	in := linInput{Op: opAcquire, Client: c.id, Election: e, Identity: id, Inc: inc}
	req := backendkit.AcquireRequest{Election: e, Identity: id, Incarnation: inc, Duration: time.Minute,
		Metadata: map[string]string{"addr": id + ":8080"}}
	var got fxelection.Lease
	out := c.call(ctx, in, func(ctx context.Context) (fxelection.Lease, error) {
		l, err := c.b.Acquire(ctx, req)
		got = l
		return l, err
	})
	if out.Kind == outOK {
		c.keep(e, &got)
	}
}

func (c *linClient) renew(ctx context.Context, e string, l fxelection.Lease) {
	in := linInput{Op: opRenew, Client: c.id, Election: e, Lease: linLease{Holder: l.Holder, Incarnation: l.Incarnation, Version: l.Version, Term: l.Term}}
	var got fxelection.Lease
	out := c.call(ctx, in, func(ctx context.Context) (fxelection.Lease, error) {
		r, err := c.b.Renew(ctx, l)
		got = r
		return r, err
	})
	cur := c.leases[e]
	isCur := cur != nil && cur.Term == l.Term && cur.Version == l.Version && cur.Holder == l.Holder
	switch out.Kind {
	case outOK:
		if got.Term != l.Term || got.Holder != l.Holder {
			c.run.problem("Renew of %s/%d returned %s/%d", l.Holder, l.Term, got.Holder, got.Term)
		}
		if isCur || cur == nil {
			c.keep(e, &got)
		}
	case outLost:
		if isCur {
			c.keep(e, nil)
		}
	}
}

func (c *linClient) release(ctx context.Context, e string, l fxelection.Lease) {
	in := linInput{Op: opRelease, Client: c.id, Election: e, Lease: linLease{Holder: l.Holder, Incarnation: l.Incarnation, Version: l.Version, Term: l.Term}}
	c.call(ctx, in, func(ctx context.Context) (fxelection.Lease, error) {
		return fxelection.Lease{}, c.b.Release(ctx, l)
	})
	if cur := c.leases[e]; cur != nil && cur.Term == l.Term && cur.Version == l.Version {
		c.keep(e, nil)
	}
}

func (c *linClient) get(ctx context.Context, e string) {
	in := linInput{Op: opGet, Client: c.id, Election: e}
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

// linReport renders an illegal history readably: for the first election
// whose history is not linearizable, the longest sequence of calls the
// model could explain, the state it reached, and the calls that could not
// come next. It also writes porcupine's HTML visualisation to a file and
// names it.
func linReport(model porcupine.Model, ops []porcupine.Operation, o LinearizableOptions, visualise bool) string {
	timeout := o.CheckTimeout
	var b strings.Builder
	for _, part := range model.Partition(ops) {
		if porcupine.CheckOperationsTimeout(model, part, timeout) != porcupine.Illegal {
			continue
		}
		res, info := porcupine.CheckOperationsVerbose(model, part, timeout)
		if res != porcupine.Illegal {
			continue
		}
		e := part[0].Input.(linInput).Election
		fmt.Fprintf(&b, "election %s: %d calls\n", e, len(part))
		var longest []porcupine.Operation
		for _, partials := range info.PartialLinearizationsOperations() {
			for _, p := range partials {
				if len(p) > len(longest) {
					longest = p
				}
			}
		}
		state := model.Init()
		var lines []string
		for _, op := range longest {
			_, state = model.Step(state, op.Input, op.Output)
			lines = append(lines, fmt.Sprintf("  [%8.3fms … %8.3fms] %s\n      ⇒ %s", ms(op.Call), ms(op.Return), model.DescribeOperation(op.Input, op.Output), model.DescribeState(state)))
		}
		const keep = 12
		if len(lines) > keep {
			fmt.Fprintf(&b, "  … %d earlier calls explained\n", len(lines)-keep)
			lines = lines[len(lines)-keep:]
		}
		b.WriteString("longest explainable order ends:\n")
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
		// The calls left over that began first: one of them is the call no
		// state of the model allows.
		done := map[int64]bool{}
		for _, op := range longest {
			done[op.Call<<8|int64(op.ClientId)] = true
		}
		var rest []porcupine.Operation
		for _, op := range part {
			if !done[op.Call<<8|int64(op.ClientId)] {
				rest = append(rest, op)
			}
		}
		sort.Slice(rest, func(i, j int) bool { return rest[i].Call < rest[j].Call })
		b.WriteString("calls that cannot follow (first few by start):\n")
		for i, op := range rest {
			if i == 6 {
				break
			}
			fmt.Fprintf(&b, "  [%8.3fms … %8.3fms] %s\n", ms(op.Call), ms(op.Return), model.DescribeOperation(op.Input, op.Output))
			if states, ok := state.([]any); ok && len(states) > 0 {
				if why := linWhy(states[0].(linState), op.Input.(linInput), op.Output.(linOutput), o.PartialReadVersions); why != "" {
					fmt.Fprintf(&b, "      ✗ %s\n", why)
				}
			}
		}
		if !visualise {
			break
		}
		if f, err := os.CreateTemp("", "fxelection-linearizable-*.html"); err == nil {
			if err := porcupine.Visualize(model, info, f); err == nil {
				fmt.Fprintf(&b, "visualisation: %s\n", f.Name())
			}
			_ = f.Close()
		}
		break
	}
	return b.String()
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// linOutcomes counts the recorded calls by operation and outcome.
func linOutcomes(ops []porcupine.Operation) string {
	n := map[string]int{}
	for _, op := range ops {
		in, out := op.Input.(linInput), op.Output.(linOutput)
		n[fmt.Sprintf("%s %s", in.Op, [...]string{"ok", "held", "lost", "none", "unknown"}[out.Kind])]++
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, n[k])
	}
	return strings.Join(parts, ", ")
}
