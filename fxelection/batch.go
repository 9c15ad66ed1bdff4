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

// waitContext is what a renewal waits under: the leader context, whose
// cancellation gives the renewal up. Only Err and AfterFunc are needed, so
// that a leader context needs no Done channel for it.
type waitContext interface {
	Err() error
	AfterFunc(f func()) (stop func() bool)
}

// renew queues a copy of *lease for the next batch and waits for its
// result (the renewed lease in *out when it returns nil), or until ctx is
// cancelled, which gives the renewal up (see abandon): the leader context
// is cancelled at the renew deadline at the latest (by its timer), and
// renew then returns context.DeadlineExceeded, or context.Canceled when it
// was cancelled before the deadline (Stop). The batch carrying it is
// bounded by the latest deadline of its renewals. Pointers rather than
// values keep the frames of the many renewals waiting at once small.
func (bt *batcher) renew(ctx waitContext, deadline time.Time, lease, out *Lease) error {
	if ctx.Err() != nil {
		return gaveUpErr(deadline)
	}
	req := &renewReq{deadline: deadline, lease: *lease, done: make(chan struct{})}
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
		if len(batch) == 0 { // all given up
			bt.mu.Unlock()
			continue
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		s := &sentBatch{cancel: cancel, waiting: len(batch)}
		for _, q := range batch {
			q.batch = s
		}
		bt.sending++
		bt.mu.Unlock()
		bt.send(ctx, batch)
		cancel()
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
