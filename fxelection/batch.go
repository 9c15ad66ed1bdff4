package fxelection

import (
	"context"
	"fmt"
	"reflect"
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

// batcher sends the renewals of every elector sharing one backendkit.BatchRenewer in
// batches. Its sender goroutines are started by renewals that find every
// sender busy with a batch in flight (at most maxSenders at once, so that
// renewals arriving during a slow round trip need not wait for it), and end
// when no renewal waits: an idle batcher costs nothing and needs no stop.
type batcher struct {
	b    backendkit.BatchRenewer
	kind string // BackendName, for errors

	mu      sync.Mutex
	queue   []*renewReq
	senders int // sender goroutines running
	sending int // of which with a batch in flight
	refs    int // electors using it (guarded by batchers.mu)
}

// maxSenders bounds the batches one backend has in flight at once.
const maxSenders = 4

// renewReq is one elector's renewal waiting in a batcher.
type renewReq struct {
	deadline time.Time
	lease    Lease
	done     chan struct{} // closed when finished
	out      Lease
	err      error
	// batch is the batch carrying the request once it has been sent;
	// finished is set when out and err are, or the elector gave up
	// waiting (gaveUp: its leader context was cancelled). All three are
	// guarded by batcher.mu.
	batch    *sentBatch
	finished bool
	gaveUp   bool
}

// sentBatch is one RenewBatch call: cancelled when every elector in it has
// stopped waiting (all stopped, or all past their deadlines).
type sentBatch struct {
	cancel  context.CancelFunc
	waiting int // guarded by batcher.mu
}

// batchers maps each batching backend in use to its batcher.
var batchers struct {
	mu sync.Mutex
	m  map[Backend]*batcher
}

// joinBatcher returns the batcher of b, creating it, or nil when b does not
// implement backendkit.BatchRenewer (or cannot be a map key). Each call is paired with
// leaveBatcher.
func joinBatcher(b Backend) *batcher {
	br, ok := b.(backendkit.BatchRenewer)
	if !ok || !reflect.ValueOf(b).Comparable() {
		return nil
	}
	if p, ok := b.(backendkit.BatchProber); ok && !p.CanRenewBatch() {
		return nil
	}
	batchers.mu.Lock()
	defer batchers.mu.Unlock()
	if batchers.m == nil {
		batchers.m = map[Backend]*batcher{}
	}
	bt := batchers.m[b]
	if bt == nil {
		bt = &batcher{b: br, kind: backendkit.Name(b)}
		batchers.m[b] = bt
	}
	bt.refs++
	return bt
}

// leaveBatcher ends one joinBatcher. The last elector to leave removes the
// batcher from the map; an elector still holding it (a campaign loop Stop
// left to finish) can go on using it.
func leaveBatcher(b Backend, bt *batcher) {
	if bt == nil {
		return
	}
	batchers.mu.Lock()
	defer batchers.mu.Unlock()
	bt.refs--
	if bt.refs == 0 && batchers.m[b] == bt {
		delete(batchers.m, b)
	}
}

// renew queues a copy of *lease for the next batch and waits for its
// result (the renewed lease in *out when it returns nil), or until t's
// leader context is cancelled, which gives the renewal up (see abandon):
// it is cancelled at the renew deadline at the latest (by t's timer), and
// renew then returns context.DeadlineExceeded, or context.Canceled when it
// was cancelled before the deadline (Stop). The batch carrying it is
// bounded by the latest deadline of its renewals. Pointers rather than
// values keep the frames of the many renewals waiting at once small.
func (bt *batcher) renew(t *leaderTerm, deadline time.Time, lease, out *Lease) error {
	req := &renewReq{deadline: deadline, lease: *lease, done: make(chan struct{})}
	t.cmu.Lock()
	if t.cancelled.Load() {
		t.cmu.Unlock()
		return gaveUpErr(deadline)
	}
	t.renewing = req
	t.cmu.Unlock()
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
	t.cmu.Lock()
	if t.renewing == req {
		t.renewing = nil
	}
	t.cmu.Unlock()
	if req.gaveUp {
		return gaveUpErr(deadline)
	}
	*out = req.out
	return req.err
}

// gaveUpErr is the error of a renewal given up because its leader context
// was cancelled: at the renew deadline, or before it (Stop).
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
	if q.finished {
		bt.mu.Unlock()
		return
	}
	q.finished, q.gaveUp = true, true
	var cancel context.CancelFunc
	if s := q.batch; s != nil {
		if s.waiting--; s.waiting == 0 {
			cancel = s.cancel
		}
	}
	close(q.done)
	bt.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// run is one sender: it sends batches until no renewal waits.
func (bt *batcher) run() {
	for {
		// Renewals that fell due in the same slot are waking now: let them
		// join before taking the queue.
		runtime.Gosched()
		bt.mu.Lock()
		n := min(len(bt.queue), backendkit.MaxRenewBatch)
		if n == 0 {
			bt.senders--
			if bt.senders == 0 {
				bt.queue = nil
			}
			bt.mu.Unlock()
			return
		}
		batch := make([]*renewReq, 0, n)
		var deadline time.Time
		for _, q := range bt.queue[:n] {
			if q.gaveUp {
				continue
			}
			batch = append(batch, q)
			if q.deadline.After(deadline) {
				deadline = q.deadline
			}
		}
		clear(bt.queue[:n])
		bt.queue = bt.queue[n:]
		if len(bt.queue) == 0 {
			bt.queue = nil
		}
		var ctx context.Context
		s := &sentBatch{waiting: len(batch)}
		if deadline.IsZero() {
			ctx, s.cancel = context.WithCancel(context.Background())
		} else {
			ctx, s.cancel = context.WithDeadline(context.Background(), deadline)
		}
		for _, q := range batch {
			q.batch = s
		}
		bt.sending++
		bt.mu.Unlock()
		if len(batch) > 0 {
			bt.send(ctx, batch)
		}
		s.cancel()
		bt.mu.Lock()
		bt.sending--
		bt.mu.Unlock()
	}
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

// Starting campaigns.
//
// Start does not start a goroutine per elector: the campaign's first step
// (begin: the first attempt, then parking as leader or handing a follower's
// campaign to a goroutine of its own) and the push subscription are tasks
// queued per backend value and run by a few shared workers. Electors
// started together (many elections in one process) would otherwise have a
// goroutine each at once, and the runtime keeps a goroutine's descriptor
// for good once made.
//
// At most maxStarters workers run per backend, each only while tasks wait.
// A task that blocks (a hung store, a backend ignoring its context) holds
// its worker: while every worker is busy and tasks wait, a check every
// starterStall starts one more worker when none finished a task since the
// previous check, so blocked tasks delay the others by at most two
// starterStall periods each.

// starter is the start queue of one backend; its fields are guarded by
// starters.mu.
type starter struct {
	queue    []startTask
	workers  int         // running
	finished uint64      // tasks done, for the stall check
	watch    *time.Timer // the stall check, while armed
	seen     uint64      // finished when it was armed
}

// startTask is one task: e's first step, or, when n is set, its
// subscription to n.
type startTask struct {
	e *Elector
	n backendkit.Notifier
}

// Elector.startState values.
const (
	startNone      uint8 = iota // not queued (or not through a starter)
	startQueued                 // first step waiting in the queue
	startTaken                  // first step taken by a worker
	startWithdrawn              // Stop came first: skipped
)

const (
	// maxStarters bounds the workers of one backend's start queue.
	maxStarters = 16
	// starterStall is the period of the check that starts another worker
	// when all are busy and none finished a task since the last check.
	starterStall = 50 * time.Millisecond
)

// starters maps backends with queued start tasks to their queue.
var starters struct {
	mu sync.Mutex
	m  map[Backend]*starter
}

// startCampaign queues e's first step, and its subscription to n when n is
// not nil. A backend that cannot be a map key gets a goroutine per task.
func startCampaign(e *Elector, n backendkit.Notifier) {
	b := e.backend
	if !reflect.ValueOf(b).Comparable() {
		go e.begin()
		if n != nil {
			go e.subscribe(n)
		}
		return
	}
	starters.mu.Lock()
	defer starters.mu.Unlock()
	if starters.m == nil {
		starters.m = map[Backend]*starter{}
	}
	s := starters.m[b]
	if s == nil {
		s = &starter{}
		starters.m[b] = s
	}
	e.startState = startQueued
	s.queue = append(s.queue, startTask{e: e})
	if n != nil {
		s.queue = append(s.queue, startTask{e: e, n: n})
	}
	for s.workers < maxStarters && s.workers < len(s.queue) {
		s.workers++
		go s.run(b)
	}
	if s.workers >= maxStarters && s.watch == nil {
		s.seen = s.finished
		s.watch = time.AfterFunc(starterStall, func() { s.check(b) })
	}
}

// withdrawStart takes e's first step out of the queue if no worker has
// taken it yet, and reports whether it did: Stop then ends the loop
// itself.
func withdrawStart(e *Elector) bool {
	starters.mu.Lock()
	defer starters.mu.Unlock()
	if e.startState != startQueued {
		return false
	}
	e.startState = startWithdrawn
	return true
}

// run is one worker: it runs tasks until the queue is empty.
func (s *starter) run(b Backend) {
	done := false
	for {
		starters.mu.Lock()
		if done {
			s.finished++
		}
		var task startTask
		found := false
		for !found && len(s.queue) > 0 {
			task = s.queue[0]
			s.queue[0] = startTask{}
			s.queue = s.queue[1:]
			switch {
			case task.n != nil:
				found = true
			case task.e.startState == startQueued:
				task.e.startState = startTaken
				found = true
			}
		}
		if !found {
			s.queue = nil
			s.workers--
			if s.workers == 0 {
				if s.watch != nil {
					s.watch.Stop()
					s.watch = nil
				}
				if starters.m[b] == s {
					delete(starters.m, b)
				}
			}
			starters.mu.Unlock()
			return
		}
		starters.mu.Unlock()
		if task.n != nil {
			task.e.subscribe(task.n)
		} else {
			task.e.begin()
		}
		done = true
	}
}

// check is the stall check: it starts another worker when tasks wait and
// none finished since it was armed, and re-arms itself while tasks wait.
func (s *starter) check(b Backend) {
	starters.mu.Lock()
	defer starters.mu.Unlock()
	s.watch = nil
	if len(s.queue) == 0 || s.workers == 0 {
		return
	}
	if s.finished == s.seen {
		s.workers++
		go s.run(b)
	}
	s.seen = s.finished
	s.watch = time.AfterFunc(starterStall, func() { s.check(b) })
}
