package fxelection

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// renewSlots is how many renewal slots a RetryPeriod has when the backend
// batches.
const renewSlots = 64

// renewSlot rounds t down to the grid of p/renewSlots slots (on the wall
// clock's nanoseconds, so every elector of the process shares it), so that
// renewals of elections with the same RetryPeriod that fall due in one slot
// are due at the same instant and can be batched. It never returns a time
// after t.
func renewSlot(t time.Time, p time.Duration) time.Time {
	q := int64(p / renewSlots)
	if q <= 1 {
		return t
	}
	off := t.UnixNano() % q
	if off < 0 {
		off += q
	}
	return t.Add(-time.Duration(off))
}

// batcher sends the renewals, and the acquisitions where the backend
// batches those too (backendkit.BatchAcquirer), of every elector sharing
// one backend in a Group, in batches. Its sender goroutines are started by
// requests that find every sender busy with a batch in flight (at most
// maxSenders at once, so that requests arriving during a slow round trip
// need not wait for it), and end when no request waits: an idle batcher
// costs nothing and needs no stop.
//
// Renewals go first (see acquireTurn): at most maxAcquiring batches of
// acquisitions are in flight at once and the other senders serve renewals,
// so that a renewal never waits for more than the batches already in
// flight, and a store slowed by overload sees a bounded number of requests
// from the process, the renewals that keep leadership ahead of the
// attempts that would change it.
type batcher struct {
	b    backendkit.BatchRenewer
	a    backendkit.BatchAcquirer // nil: acquisitions go to Backend.Acquire, one by one
	kind string                   // BackendName, for errors

	mu        sync.Mutex
	queue     []*renewReq
	acquires  []*acquireReq
	senders   int // sender goroutines running
	sending   int // of which with a batch in flight
	acquiring int // of which with a batch of acquisitions
}

const (
	// maxSenders bounds the batches one backend has in flight at once.
	maxSenders = 4
	// maxAcquiring bounds the batches of acquisitions among them.
	maxAcquiring = maxSenders / 2
)

// waiting is what every request in a batcher has (renewReq, acquireReq):
// its deadline and, guarded by batcher.mu, the batch carrying it once it
// has been sent, whether it is finished (its outcome is set, or it was
// given up) and whether it was given up.
type waiting struct {
	deadline time.Time
	batch    *sentBatch
	finished bool
	gaveUp   bool
}

func (w *waiting) wait() *waiting { return w }

// giveUp marks w given up unless it is finished already (false), and
// returns the cancel of its batch in flight when w was the last request
// in it still waiting. The caller holds batcher.mu.
func (w *waiting) giveUp() (cancel context.CancelFunc, ok bool) {
	if w.finished {
		return nil, false
	}
	w.finished, w.gaveUp = true, true
	if s := w.batch; s != nil {
		if s.waiting--; s.waiting == 0 {
			cancel = s.cancel
		}
	}
	return cancel, true
}

// queued is a request in a batcher's queue.
type queued interface{ wait() *waiting }

// takeBatch takes the next batch of at most limit requests from *queue,
// skipping those given up, with the context it is sent under (bounded by
// the latest deadline among them), or nil when none waits. The caller
// holds batcher.mu.
func takeBatch[Q queued](queue *[]Q, limit int) ([]Q, context.Context, context.CancelFunc) {
	for len(*queue) > 0 {
		n := min(len(*queue), limit)
		batch := make([]Q, 0, n)
		var deadline time.Time
		for _, q := range (*queue)[:n] {
			if w := q.wait(); !w.gaveUp {
				batch = append(batch, q)
				if w.deadline.After(deadline) {
					deadline = w.deadline
				}
			}
		}
		clear((*queue)[:n])
		*queue = (*queue)[n:]
		if len(*queue) == 0 {
			*queue = nil
		}
		if len(batch) == 0 { // all given up
			continue
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		s := &sentBatch{cancel: cancel, waiting: len(batch)}
		for _, q := range batch {
			q.wait().batch = s
		}
		return batch, ctx, cancel
	}
	return nil, nil, nil
}

// renewReq is one elector's renewal waiting in a batcher. finished is set
// when out and err are, or the elector gave up waiting (gaveUp: the
// context it waits under ended).
type renewReq struct {
	waiting
	lease Lease
	done  chan struct{} // closed when finished
	out   Lease
	err   error
}

// sentBatch is one RenewBatch call: cancelled when every elector in it has
// stopped waiting (all stopped, or all past their deadlines).
type sentBatch struct {
	cancel  context.CancelFunc
	waiting int // guarded by batcher.mu
}

// waitContext is what a renewal waits under: for an elector its
// leadership's keeper.Cut (cut at the renew deadline and by Stop's bound,
// not when Stop begins), for a keeper's renewal a context; its cancellation gives
// the renewal up. Only Err and AfterFunc are needed, so that an elector
// needs no context of its own per renewal.
type waitContext interface {
	Err() error
	AfterFunc(f func()) (stop func() bool)
}

// renew queues a copy of *lease for the next batch and waits for its
// result (the renewed lease in *out when it returns nil), or until ctx is
// cancelled, which gives the renewal up (see abandon): an elector's
// keeper.Cut is cut at the renew deadline at the latest (by its timer), and
// renew then returns context.DeadlineExceeded, or context.Canceled when it
// was cut before the deadline (Stop's bound). The batch carrying it is
// bounded by the latest deadline of its renewals. Pointers rather than
// values keep the frames of the many renewals waiting at once small.
func (bt *batcher) renew(ctx waitContext, deadline time.Time, lease, out *Lease) error {
	if ctx.Err() != nil {
		return gaveUpErr(deadline)
	}
	req := &renewReq{waiting: waiting{deadline: deadline}, lease: *lease, done: make(chan struct{})}
	// Cancelled meanwhile: abandon runs at once and the request is not
	// queued (finished).
	stop := ctx.AfterFunc(func() { bt.abandon(req) })
	defer stop()
	bt.mu.Lock()
	var start bool
	if !req.finished { // not given up already
		bt.queue = append(bt.queue, req)
		start = bt.senders == bt.sending && bt.senders < maxSenders
		if start {
			bt.senders++
		}
	}
	bt.mu.Unlock()
	if start {
		go bt.run()
	}
	<-req.done
	if req.gaveUp {
		return gaveUpErr(deadline)
	}
	*out = req.out
	return req.err
}

// gaveUpErr is the error of a renewal given up because what it waited
// under was cancelled: at the renew deadline, or before it (Stop's bound).
func gaveUpErr(deadline time.Time) error {
	if !time.Now().Before(deadline) {
		return context.DeadlineExceeded
	}
	return context.Canceled
}

// abandon gives up waiting for q, unless it has its result already: a
// renewal not yet sent is dropped from its batch, and a batch in flight is
// cancelled once every renewal in it has been given up. It never blocks.
func (bt *batcher) abandon(q *renewReq) {
	bt.mu.Lock()
	cancel, ok := q.giveUp()
	if ok {
		close(q.done)
	}
	bt.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// run is one sender: it sends batches, renewals first, until no request
// waits that it may send.
func (bt *batcher) run() {
	for {
		// Renewals that fell due in the same slot are waking now: let them
		// join before taking the queue, unless a whole batch waits already
		// (a yield puts the sender behind every runnable goroutine, which
		// under overload are many).
		bt.mu.Lock()
		if len(bt.queue) < backendkit.MaxRenewBatch {
			bt.mu.Unlock()
			runtime.Gosched()
			bt.mu.Lock()
		}
		if !bt.acquireTurn() {
			if batch, ctx, cancel := takeBatch(&bt.queue, backendkit.MaxRenewBatch); batch != nil {
				bt.sending++
				bt.mu.Unlock()
				bt.send(ctx, batch)
				cancel()
				bt.mu.Lock()
				bt.sending--
				bt.mu.Unlock()
				continue
			}
		}
		if batch, ctx, cancel := bt.takeAcquires(); batch != nil {
			bt.sending++
			bt.acquiring++
			// Renewals left waiting get a sender of their own.
			more := len(bt.queue) > 0 && bt.senders == bt.sending && bt.senders < maxSenders
			if more {
				bt.senders++
			}
			bt.mu.Unlock()
			if more {
				go bt.run()
			}
			bt.sendAcquires(ctx, batch)
			cancel()
			bt.mu.Lock()
			bt.sending--
			bt.acquiring--
			bt.mu.Unlock()
			continue
		}
		bt.senders--
		if bt.senders == 0 {
			bt.queue, bt.acquires = nil, nil
		}
		bt.mu.Unlock()
		return
	}
}

// acquireTurn reports whether a free sender takes acquisitions before
// renewals: only when acquisitions wait, fewer than maxAcquiring batches
// of them are in flight, and the renewals waiting are fewer than a full
// batch or already have the senders reserved for them
// (maxSenders−maxAcquiring) busy. So renewals go first under load, but a
// steady trickle of renewals cannot starve acquisitions. The caller holds
// bt.mu.
func (bt *batcher) acquireTurn() bool {
	if len(bt.acquires) == 0 || bt.acquiring >= maxAcquiring {
		return false
	}
	return len(bt.queue) < backendkit.MaxRenewBatch || bt.sending-bt.acquiring >= maxSenders-maxAcquiring
}

// send makes one RenewBatch call and hands each elector its result.
func (bt *batcher) send(ctx context.Context, batch []*renewReq) {
	leases := make([]Lease, len(batch))
	for i, q := range batch {
		leases[i] = q.lease
	}
	res := bt.call(ctx, leases)
	bt.mu.Lock()
	defer bt.mu.Unlock()
	for i, q := range batch {
		if q.finished { // given up meanwhile
			continue
		}
		q.finished = true
		if len(res) != len(batch) {
			q.err = fmt.Errorf("fxelection: %s RenewBatch returned %d results for %d leases", bt.kind, len(res), len(batch))
		} else {
			q.out, q.err = res[i].Lease, res[i].Err
		}
		close(q.done)
	}
}

// call runs RenewBatch, turning a panic in it into a failure of the batch
// (a panicking backend must not take the process down; the electors report
// the error like any store failure).
func (bt *batcher) call(ctx context.Context, leases []Lease) (res []backendkit.RenewResult) {
	defer func() {
		if v := recover(); v != nil {
			err := fmt.Errorf("fxelection: RenewBatch panicked: %v", v)
			res = slices.Repeat([]backendkit.RenewResult{{Err: err}}, len(leases))
		}
	}()
	return bt.b.RenewBatch(ctx, leases)
}

// acquireReq is one elector's acquisition waiting in a batcher.
type acquireReq struct {
	waiting
	req backendkit.AcquireRequest
	// done is called once with the outcome; late with a lease won after
	// the request was given up (nil: nothing to do with it).
	done func(Lease, error)
	late func(Lease)
	// stop unregisters the request from its context's cancellation.
	stop func() bool
}

// acquire queues req for the next batch of acquisitions and returns at
// once. done is called once with the outcome, on a goroutine of the
// batcher's, or, when ctx ends first, with ctx's error, wrapped: the
// request is given up, dropped if not yet sent, and a batch in flight is
// cancelled once every request in it has been given up. A lease that a
// request given up in flight won all the same is passed to late (when not
// nil) instead. The batch carrying req is bounded by the latest deadline
// of its requests.
func (bt *batcher) acquire(ctx context.Context, deadline time.Time, req backendkit.AcquireRequest, done func(Lease, error), late func(Lease)) {
	q := &acquireReq{waiting: waiting{deadline: deadline}, req: req, done: done, late: late}
	// Set before q is queued: only whoever takes q from the queue calls it.
	q.stop = context.AfterFunc(ctx, func() { bt.giveUp(q, ctx.Err()) })
	bt.mu.Lock()
	var start bool
	if !q.finished { // not given up already
		bt.acquires = append(bt.acquires, q)
		start = bt.senders == bt.sending && bt.senders < maxSenders && bt.acquiring < maxAcquiring
		if start {
			bt.senders++
		}
	}
	bt.mu.Unlock()
	if start {
		go bt.run()
	}
}

// giveUp gives up waiting for q, unless it has its outcome already, and
// calls its done with err.
func (bt *batcher) giveUp(q *acquireReq, err error) {
	bt.mu.Lock()
	cancel, ok := q.waiting.giveUp()
	bt.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if ok {
		q.done(Lease{}, fmt.Errorf("acquire lease: %w", err))
	}
}

// takeAcquires takes the next batch of acquisitions, unless
// maxAcquiring batches of them are in flight. The caller holds bt.mu.
func (bt *batcher) takeAcquires() ([]*acquireReq, context.Context, context.CancelFunc) {
	if bt.acquiring >= maxAcquiring {
		return nil, nil, nil
	}
	return takeBatch(&bt.acquires, backendkit.MaxAcquireBatch)
}

// sendAcquires makes one AcquireBatch call and hands each request its
// outcome, on a goroutine of its own, so that the sender goes on at once.
func (bt *batcher) sendAcquires(ctx context.Context, batch []*acquireReq) {
	reqs := make([]backendkit.AcquireRequest, len(batch))
	for i, q := range batch {
		reqs[i] = q.req
	}
	res := bt.callAcquire(ctx, reqs)
	if len(res) != len(batch) {
		err := fmt.Errorf("fxelection: %s AcquireBatch returned %d results for %d requests", bt.kind, len(res), len(batch))
		res = slices.Repeat([]backendkit.AcquireResult{{Err: err}}, len(batch))
	}
	// Outcomes are handed over outside the lock: done for the requests
	// still waiting, late for a lease won by one given up meanwhile.
	type outcome struct {
		q    *acquireReq
		r    backendkit.AcquireResult
		late bool
	}
	outs := make([]outcome, 0, len(batch))
	bt.mu.Lock()
	for i, q := range batch {
		switch {
		case !q.finished:
			q.finished = true
			outs = append(outs, outcome{q: q, r: res[i]})
		case res[i].Err == nil && q.late != nil:
			outs = append(outs, outcome{q: q, r: res[i], late: true})
		}
	}
	bt.mu.Unlock()
	go func() {
		for _, o := range outs {
			if o.late {
				o.q.late(o.r.Lease)
				continue
			}
			o.q.stop()
			o.q.done(o.r.Lease, o.r.Err)
		}
	}()
}

// callAcquire runs AcquireBatch, turning a panic in it into a failure of
// the batch, as call does for RenewBatch.
func (bt *batcher) callAcquire(ctx context.Context, reqs []backendkit.AcquireRequest) (res []backendkit.AcquireResult) {
	defer func() {
		if v := recover(); v != nil {
			err := fmt.Errorf("fxelection: AcquireBatch panicked: %v", v)
			res = slices.Repeat([]backendkit.AcquireResult{{Err: err}}, len(reqs))
		}
	}()
	return bt.a.AcquireBatch(ctx, reqs)
}
