package fxelection

import (
	"errors"
	"sync"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// Group is the elections of one process that share one backend, in the
// spirit of etcd's concurrency.Session: its electors renew in batches (one
// store round trip for many leases, when the backend implements
// backendkit.BatchRenewer) and take their first campaign step on a few
// shared goroutines instead of one each. A process that runs many elections
// on one store makes one Group and creates every elector with Group.New;
// an elector created with New is on its own and renews lease by lease.
//
// A Group holds no goroutine while none of its electors needs one: it needs
// no Close, and it is safe for concurrent use.
type Group struct {
	backend Backend
	kind    string

	mu    sync.Mutex // guards batch and the start queue, and Elector.startState
	batch *batcher   // made by the first elector that starts on a batching store
	start starter
}

// starter is a group's start queue; its fields are guarded by Group.mu.
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

// NewGroup returns a Group for electors on backend.
func NewGroup(backend Backend) (*Group, error) {
	if backend == nil {
		return nil, errors.New("fxelection: Backend is required")
	}
	return &Group{backend: backend, kind: backendkit.Name(backend)}, nil
}

// batcher returns the group's batcher, or nil when its backend does not
// renew in batches now. It asks backendkit.BatchProber each time (an
// elector asks when it starts): a wrapper knows only once the app started
// whether the store behind it batches. The batcher sends acquisitions in
// batches too when the backend implements backendkit.BatchAcquirer (and,
// if it is a backendkit.AcquireBatchProber, can when the batcher is made).
func (g *Group) batcher() *batcher {
	br, ok := g.backend.(backendkit.BatchRenewer)
	if !ok {
		return nil
	}
	if p, ok := g.backend.(backendkit.BatchProber); ok && !p.CanRenewBatch() {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.batch == nil {
		g.batch = &batcher{b: br, kind: g.kind}
		if ba, ok := g.backend.(backendkit.BatchAcquirer); ok {
			if p, ok := g.backend.(backendkit.AcquireBatchProber); !ok || p.CanAcquireBatch() {
				g.batch.a = ba
			}
		}
	}
	return g.batch
}

// Starting campaigns.
//
// In a group, Start does not start a goroutine per elector: the campaign's
// first step (begin: the first attempt, then parking as leader or handing a
// follower's campaign to a goroutine of its own) and the push subscription
// are tasks queued in the group and run by a few workers. Electors started
// together (many elections in one process) would otherwise have a goroutine
// each at once, and the runtime keeps a goroutine's descriptor for good once
// made. An elector on its own starts a goroutine for each.
//
// At most maxStarters workers run per group, each only while tasks wait. A
// task that blocks (a hung store, a backend ignoring its context) holds its
// worker: while every worker is busy and tasks wait, a check every
// starterStall starts one more worker when none finished a task since the
// previous check, so blocked tasks delay the others by at most two
// starterStall periods each.

// Elector.startState values.
const (
	startNone      uint8 = iota // not queued (or not in a group)
	startQueued                 // first step waiting in the queue
	startTaken                  // first step taken by a worker
	startWithdrawn              // Stop came first: skipped
)

const (
	// maxStarters bounds the workers of one group's start queue.
	maxStarters = 16
	// starterStall is the period of the check that starts another worker
	// when all are busy and none finished a task since the last check.
	starterStall = 50 * time.Millisecond
)

// startCampaign queues e's first step, and its subscription to n when n is
// not nil; an elector on its own gets a goroutine for each.
func startCampaign(e *Elector, n backendkit.Notifier) {
	g := e.group
	if g == nil {
		go e.begin()
		if n != nil {
			go e.subscribe(n)
		}
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s := &g.start
	e.startState = startQueued
	s.queue = append(s.queue, startTask{e: e})
	if n != nil {
		s.queue = append(s.queue, startTask{e: e, n: n})
	}
	for s.workers < maxStarters && s.workers < len(s.queue) {
		s.workers++
		go g.run()
	}
	if s.workers >= maxStarters && s.watch == nil {
		s.seen = s.finished
		s.watch = time.AfterFunc(starterStall, g.check)
	}
}

// withdrawStart takes e's first step out of its group's queue if no worker
// has taken it yet, and reports whether it did: Stop then ends the loop
// itself.
func withdrawStart(e *Elector) bool {
	g := e.group
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if e.startState != startQueued {
		return false
	}
	e.startState = startWithdrawn
	return true
}

// run is one worker: it runs tasks until the queue is empty.
func (g *Group) run() {
	s := &g.start
	done := false
	for {
		g.mu.Lock()
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
			if s.workers == 0 && s.watch != nil {
				s.watch.Stop()
				s.watch = nil
			}
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
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
func (g *Group) check() {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := &g.start
	s.watch = nil
	if len(s.queue) == 0 || s.workers == 0 {
		return
	}
	if s.finished == s.seen {
		s.workers++
		go g.run()
	}
	s.seen = s.finished
	s.watch = time.AfterFunc(starterStall, g.check)
}

// Backend returns the group's backend.
func (g *Group) Backend() Backend { return g.backend }
