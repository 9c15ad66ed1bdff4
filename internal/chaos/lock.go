package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/fxelection/lock"
)

// lockChaosWeights are the election's weights without Resign (a lock's
// Release is the clients' everyday work).
var lockChaosWeights = []faultWeight{
	{faultPartitionShort, 4}, {faultPartitionMid, 3}, {faultPartitionLong, 2}, {faultLatency, 3},
	{faultRefuse, 1}, {faultReset, 2}, {faultCrash, 3}, {faultStop, 2},
	{faultServerKill, 1}, {faultOutage, 1},
}

// lockChaos is one run of the lock workload. mu (the runner's) guards what
// the clients' workers, observers and late writers record.
type lockChaos struct {
	*runner[*lockClient]

	keys     []string
	keyIndex map[string]int
	quiet    time.Duration

	all          []*lockClient
	logs         []*fencedLog // per key
	timeouts     int
	releaseErrs  int
	releaseSamps []string
}

type lockClient struct {
	memberBase
	locker  *lock.Locker
	ctx     context.Context // ends when the client stops or crashes
	cancel  context.CancelFunc
	crashed atomic.Bool
	workers sync.WaitGroup

	// under lockChaos.mu, per key
	holds    [][]*lockHold
	ends     [][]lockEnd // the Observer's EventRelease and EventLost, in order
	acquired []int       // the Observer's EventAcquire with OutcomeAcquired
	holding  int         // holds in progress, any key
}

// lockHold is one acquisition and its hold.
type lockHold struct {
	cl           *lockClient
	key          int
	term         uint64
	acquired     time.Duration // when Acquire returned
	releaseStart time.Duration // when the client began Release; -1 if it did not
	// set by analyse
	end   time.Duration // when the Context ended
	lost  bool
	cause string
}

// lockEnd is the end of a Lock's Context, as the Observer reported it.
type lockEnd struct {
	at    time.Duration
	lost  bool
	cause string
}

// fencedLog is a key's fenced resource: it refuses terms lower than the
// highest it accepted.
type fencedLog struct {
	highest       uint64
	log           []fencedWrite // accepted, in order
	refusedLive   []fencedWrite
	staleRefused  int
	staleAccepted int
}

type fencedWrite struct {
	at      time.Duration
	term    uint64
	highest uint64 // for a refusal: the highest accepted term then
	late    bool
	hold    *lockHold // nil for a late write
}

type lockObserver func(lock.Event)

func (f lockObserver) ObserveLock(ev lock.Event) { f(ev) }

func newLockChaos(t *testing.T, o Options) *lockChaos {
	lc := &lockChaos{keyIndex: map[string]int{}}
	lc.runner = newRunner[*lockClient](t, o, lc, "lockchaos", lockChaosWeights)
	run := fmt.Sprintf("%d-%d", o.Seed%1_000_000, time.Now().UnixNano()%1_000_000)
	for k := range o.Keys {
		key := fmt.Sprintf("lockchaos-%s-k%d", run, k)
		lc.keys = append(lc.keys, key)
		lc.keyIndex[key] = k
		lc.logs = append(lc.logs, &fencedLog{})
	}
	return lc
}

func newLockClient(base memberBase, keys int) *lockClient {
	cl := &lockClient{
		memberBase: base,
		holds:      make([][]*lockHold, keys), ends: make([][]lockEnd, keys), acquired: make([]int, keys),
	}
	cl.ctx, cl.cancel = context.WithCancel(context.Background())
	return cl
}

// start starts a client in s with a new backend behind a new proxy.
// start starts a client in s on backend b.
func (lc *lockChaos) start(s *slot[*lockClient], base memberBase, b fxelection.Backend) (*lockClient, error) {
	cl := newLockClient(base, lc.o.Keys)
	tm := lc.o.Timing
	locker, err := lock.New(b, lock.Options{
		Identity: cl.identity,
		Timing: fxelection.Timing{
			LeaseDuration: tm.LeaseDuration,
			RenewDeadline: tm.RenewDeadline,
			RetryPeriod:   tm.RetryPeriod,
		},
		Observer: lockObserver(func(ev lock.Event) { lc.observe(cl, ev) }),
	})
	if err != nil {
		_ = cl.proxy.Close()
		cl.closeClient()
		return nil, fmt.Errorf("new locker: %w", err)
	}
	cl.locker = locker
	cl.started = lc.now()
	lc.mu.Lock()
	lc.all = append(lc.all, cl)
	lc.mu.Unlock()
	for k := range lc.keys {
		cl.workers.Add(1)
		go lc.worker(cl, k)
	}
	return cl, nil
}

// observe records a Locker's events: acquisitions, and the end of every
// Lock's Context (reported synchronously as it is cancelled, so its time
// is the end's).
func (lc *lockChaos) observe(cl *lockClient, ev lock.Event) {
	at := lc.now()
	k, ok := lc.keyIndex[ev.Key]
	if !ok {
		lc.violate("%s: event for unknown key %q", cl.identity, ev.Key)
		return
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	switch ev.Kind {
	case lock.EventAcquire:
		if ev.Outcome == lock.OutcomeAcquired {
			cl.acquired[k]++
		}
	case lock.EventRelease:
		cl.ends[k] = append(cl.ends[k], lockEnd{at: at})
	case lock.EventLost:
		cause := ""
		if ev.Err != nil {
			cause = ev.Err.Error()
		}
		cl.ends[k] = append(cl.ends[k], lockEnd{at: at, lost: true, cause: cause})
	}
}

// worker locks key k for cl until cl stops.
func (lc *lockChaos) worker(cl *lockClient, k int) {
	defer cl.workers.Done()
	tm := lc.o.Timing
	for cl.ctx.Err() == nil {
		actx, cancel := context.WithTimeout(cl.ctx, 2*tm.LeaseDuration)
		lk, err := cl.locker.Acquire(actx, lc.keys[k])
		at := lc.now()
		cancel()
		if err != nil {
			if cl.ctx.Err() != nil {
				return
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				lc.violate("%s: Acquire %s: %v", cl.identity, lc.keys[k], err)
				return
			}
			lc.mu.Lock()
			lc.timeouts++
			lc.mu.Unlock()
			continue
		}
		h := &lockHold{cl: cl, key: k, term: lk.Term(), acquired: at, releaseStart: -1}
		lc.mu.Lock()
		cl.holds[k] = append(cl.holds[k], h)
		cl.holding++
		lc.mu.Unlock()
		lc.hold(cl, k, lk, h)
		lc.mu.Lock()
		cl.holding--
		lc.mu.Unlock()
		if cl.crashed.Load() {
			// Abandoned: no release. The proxy is cut, so no renewal
			// succeeds and the Context ends at the renew deadline.
			select {
			case <-lk.Context().Done():
			case <-time.After(tm.RenewDeadline + time.Minute):
				lc.violate("%s: the Context of its abandoned lock on %s (term %d) did not end", cl.identity, lc.keys[k], h.term)
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				_ = lk.Release(ctx) // ends the renewals
			}
			return
		}
		rs := lc.now()
		lc.mu.Lock()
		h.releaseStart = rs
		lc.mu.Unlock()
		rctx, rcancel := context.WithTimeout(context.Background(), tm.LeaseDuration)
		if err := lk.Release(rctx); err != nil {
			lc.releaseError(cl, err)
		}
		rcancel()
		pause := time.NewTimer(time.Duration(rand.Int64N(int64(tm.RetryPeriod/2) + 1)))
		select {
		case <-pause.C:
		case <-cl.ctx.Done():
			pause.Stop()
		}
	}
}

// hold holds lk for a random time, or until its Context or the client
// ends, writing the fenced log every RetryPeriod/4.
func (lc *lockChaos) hold(cl *lockClient, k int, lk *lock.Lock, h *lockHold) {
	tm := lc.o.Timing
	d := time.Duration(rand.Int64N(int64(lc.o.MaxHold) + 1))
	if rand.N(4) == 0 && !lc.calm.Load() {
		d = time.Duration(rand.Int64N(int64(2*tm.LeaseDuration) + 1))
	}
	done := time.NewTimer(d)
	defer done.Stop()
	tick := time.NewTicker(tm.RetryPeriod / 4)
	defer tick.Stop()
	for {
		lc.fencedWrite(cl, k, lk, h)
		select {
		case <-lk.Context().Done():
			return
		case <-cl.ctx.Done():
			return
		case <-done.C:
			return
		case <-tick.C:
		}
	}
}

// fencedWrite writes the key's fenced log with the token of lk's Context,
// while that Context is live.
func (lc *lockChaos) fencedWrite(cl *lockClient, k int, lk *lock.Lock, h *lockHold) {
	lctx := lk.Context()
	tok, err := fence.FromContext(lctx)
	if err != nil || tok.Term != h.term || tok.Election != lc.keys[k] {
		lc.violate("%s: the Context of its lock on %s (term %d) carries the token %+v (%v)", cl.identity, lc.keys[k], h.term, tok, err)
		return
	}
	at := lc.now()
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lctx.Err() != nil {
		return // not live: no write
	}
	f := lc.logs[k]
	if tok.Term < f.highest {
		f.refusedLive = append(f.refusedLive, fencedWrite{at: at, term: tok.Term, highest: f.highest, hold: h})
		return
	}
	f.highest = tok.Term
	f.log = append(f.log, fencedWrite{at: at, term: tok.Term, hold: h})
	if rand.N(20) == 0 {
		lc.lateWrite(k, tok.Term)
	}
}

// lateWrite writes term to key k's log after a pause of up to two leases,
// whatever happened meanwhile.
func (lc *lockChaos) lateWrite(k int, term uint64) {
	lc.late(func(at time.Duration) {
		f := lc.logs[k]
		if term < f.highest {
			f.staleRefused++
			return
		}
		f.highest = term
		f.staleAccepted++
		f.log = append(f.log, fencedWrite{at: at, term: term, late: true})
	})
}

func (lc *lockChaos) releaseError(cl *lockClient, err error) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.releaseErrs++
	if len(lc.releaseSamps) < 5 {
		lc.releaseSamps = append(lc.releaseSamps, fmt.Sprintf("%s at %v: %v", cl.identity, lc.now().Round(time.Millisecond), err))
	}
}

// stop stops cl in the background: gracefully (its workers release, then
// Locker.Close), or as a crash (the proxy already cut everything; the
// workers abandon their locks and wait for their Contexts to end).
func (lc *lockChaos) stop(cl *lockClient, crash bool) {
	cl.stopAt = lc.now()
	if crash {
		cl.crashed.Store(true)
	}
	cl.cancel()
	lc.wg.Add(1)
	go func() {
		defer lc.wg.Done()
		cl.workers.Wait()
		if !crash {
			ctx, cancel := context.WithTimeout(context.Background(), lc.o.Timing.LeaseDuration)
			if err := cl.locker.Close(ctx); err != nil {
				lc.releaseError(cl, err)
			}
			cancel()
		}
		_ = cl.proxy.Close()
		cl.closeClient()
		close(cl.stopped)
	}()
}

// restartLater starts a new client in s once its previous one stopped, no
// earlier than at.
// favour returns a client holding a lock six times in ten, if any does.
func (lc *lockChaos) favour(cands []*slot[*lockClient]) *slot[*lockClient] {
	var holding []*slot[*lockClient]
	lc.mu.Lock()
	for _, s := range cands {
		if s.inst.holding > 0 {
			holding = append(holding, s)
		}
	}
	lc.mu.Unlock()
	if len(holding) > 0 && lc.rng.IntN(10) < 6 {
		return holding[lc.rng.IntN(len(holding))]
	}
	return nil
}

func (lc *lockChaos) takenDown(string, *lockClient, time.Duration) {}
func (lc *lockChaos) resign(*lockClient, time.Duration)            {}
func (lc *lockChaos) sampling(bool)                                {}

// settle waits until every client has taken every key (progress).
func (lc *lockChaos) settle() {
	from := lc.now()
	limit := max(time.Minute, 20*lc.o.Timing.LeaseDuration) + lc.o.Slack
	deadline := time.Now().Add(limit)
	for {
		missing := lc.notTakenSince(from)
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			lc.violate("no progress: %s within %v after the faults stopped", missing, limit)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	lc.quiet = lc.now() - from
}

// notTakenSince names a running client that has not taken some key since
// from, or returns "".
func (lc *lockChaos) notTakenSince(from time.Duration) string {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for _, s := range lc.slots {
		for k, hs := range s.inst.holds {
			if len(hs) == 0 || hs[len(hs)-1].acquired < from {
				return fmt.Sprintf("%s had not taken %s", s.inst.identity, lc.keys[k])
			}
		}
	}
	return ""
}

// analyse checks the invariants on what was recorded and fills the report.
// It runs after every client stopped.
func (lc *lockChaos) analyse() *Report {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	tm := lc.o.Timing
	r := lc.report()
	r.LockReport = &LockReport{
		Lockers: len(lc.all), AcquireTimeouts: lc.timeouts,
		ReleaseErrors: lc.releaseErrs, ReleaseErrorSamples: lc.releaseSamps, Quiet: lc.quiet,
	}
	violate := r.violate
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	documented := lc.documented
	// reason names the restart window that documents [lo, hi].
	reason := func(lo, hi time.Duration) string {
		for _, w := range lc.downWindows {
			if inRestartWindow([]window{w}, tm.RenewDeadline+lc.o.Slack, lo, hi) {
				return fmt.Sprintf("the server, killed at %v and back at %v, lost its leases (RestartLosesLeases); the earlier holder's renewals fail within the renew deadline", ms(w.start), ms(w.end))
			}
		}
		return ""
	}

	// Each hold ends when its Context ended: the n-th end the Observer
	// reported for the client's key (one worker per key, so its Locks
	// end in order), or when the client began Release, if earlier.
	perKey := make([][]*lockHold, len(lc.keys))
	for _, cl := range lc.all {
		for k := range lc.keys {
			holds, ends := cl.holds[k], cl.ends[k]
			if len(ends) != len(holds) || cl.acquired[k] != len(holds) {
				violate("%s on %s: %d acquisitions returned, %d reported by the Observer, %d Context ends reported",
					cl.identity, lc.keys[k], len(holds), cl.acquired[k], len(ends))
			}
			for i, h := range holds {
				h.end = -1
				if i < len(ends) {
					h.end, h.lost, h.cause = ends[i].at, ends[i].lost, ends[i].cause
				}
				if h.releaseStart >= 0 && (h.end < 0 || h.releaseStart < h.end) {
					h.end = h.releaseStart
				}
				if h.end < 0 {
					violate("%s: the Context of its lock on %s (term %d, acquired at %v) never ended", cl.identity, lc.keys[k], h.term, ms(h.acquired))
					h.end = h.acquired
				}
				switch {
				case h.lost:
					r.Lost++
					if h.end <= h.acquired {
						r.LostAtReturn++
					}
				case i < len(ends):
					r.Released++
				}
				perKey[k] = append(perKey[k], h)
			}
		}
	}

	for k, hs := range perKey {
		sort.Slice(hs, func(i, j int) bool { return hs[i].acquired < hs[j].acquired })
		ks := KeyStats{Key: lc.keys[k], Acquisitions: len(hs)}
		r.Acquisitions += len(hs)
		// Terms strictly increase in the store's order of acquisition,
		// and no two acquisitions share one.
		byTerm := map[uint64]*lockHold{}
		for i, h := range hs {
			if i == 0 || h.term < ks.FirstTerm {
				ks.FirstTerm = h.term
			}
			ks.LastTerm = max(ks.LastTerm, h.term)
			if o, dup := byTerm[h.term]; dup {
				violate("%s: term %d taken twice: by %s at %v and by %s at %v", lc.keys[k], h.term, o.cl.identity, ms(o.acquired), h.cl.identity, ms(h.acquired))
			}
			byTerm[h.term] = h
			if i > 0 {
				p := hs[i-1]
				if h.term < p.term && !documented(h.acquired, h.acquired) {
					violate("%s: term %d taken by %s at %v after term %d taken by %s at %v",
						lc.keys[k], h.term, h.cl.identity, ms(h.acquired), p.term, p.cl.identity, ms(p.acquired))
				}
			}
		}
		r.Keys = append(r.Keys, ks)

		// No two holds of the key overlap.
		for i, a := range hs {
			if a.end <= a.acquired {
				continue
			}
			for _, b := range hs[i+1:] {
				if b.acquired >= a.end {
					break // sorted by acquisition: no later one overlaps a
				}
				if b.end <= b.acquired {
					continue
				}
				lo, hi := b.acquired, min(a.end, b.end)
				if documented(lo, hi) {
					r.DocumentedOverlaps++
					r.MaxDocumentedOverlap = max(r.MaxDocumentedOverlap, hi-lo)
					if len(r.Documented) < 5 {
						r.Documented = append(r.Documented, fmt.Sprintf("%s held by %s (term %d) and %s (term %d) at once from %v to %v: %s",
							lc.keys[k], a.cl.identity, a.term, b.cl.identity, b.term, ms(lo), ms(hi), reason(lo, hi)))
					}
					continue
				}
				r.Overlaps++
				violate("%s held by %s (term %d, %v…%v%s) and %s (term %d, %v…%v%s) at once from %v to %v; faults on %s: %s; on %s: %s",
					lc.keys[k], a.cl.identity, a.term, ms(a.acquired), ms(a.end), causeOf(a), b.cl.identity, b.term, ms(b.acquired), ms(b.end), causeOf(b),
					ms(lo), ms(hi), a.cl.identity, lc.history(a.cl, hi, nil), b.cl.identity, lc.history(b.cl, hi, nil))
			}
		}
	}

	// The keys are independent: holds of different keys were live at once.
	for k := 1; k < len(perKey); k++ {
		for j := range k {
			r.ConcurrentKeys += concurrent(perKey[j], perKey[k])
		}
	}
	if len(perKey) > 1 && r.ConcurrentKeys == 0 {
		violate("no two keys were ever held at the same instant")
	}

	// The fenced logs.
	for k, f := range lc.logs {
		r.StaleRefused += f.staleRefused
		r.StaleAccepted += f.staleAccepted
		for i, w := range f.log {
			if !w.late {
				r.FencedAccepted++
			}
			if i > 0 && w.term < f.log[i-1].term {
				violate("%s: the fenced log accepted term %d at %v after term %d", lc.keys[k], w.term, ms(w.at), f.log[i-1].term)
			}
		}
		for _, w := range f.refusedLive {
			if documented(w.at, w.at) {
				continue
			}
			r.LiveRefused++
			violate("%s: the fenced log refused term %d of %s at %v while its Context was live (highest %d)",
				lc.keys[k], w.term, w.hold.cl.identity, ms(w.at), w.highest)
		}
	}

	// A holder cut off from the store: its lost lock's Context ends within
	// the renew deadline of its last successful renewal (measured, not
	// checked: the overlap check is what that promise is for).
	var ctxEnds []time.Duration
	for _, f := range lc.faults {
		switch f.kind {
		case faultPartitionMid, faultPartitionLong, faultRefuse, faultCrash, faultServerKill, faultOutage:
		default:
			continue
		}
		for _, hs := range f.inst.holds {
			for _, h := range hs {
				if h.lost && h.acquired <= f.start && h.end > f.start && (f.end < 0 || h.end <= f.end) {
					ctxEnds = append(ctxEnds, h.end-f.start)
				}
			}
		}
	}
	r.ContextEnd = statsOf(ctxEnds)
	return r
}

// concurrent counts the pairs of holds of as and bs (each sorted by
// acquisition) that were live at the same instant.
func concurrent(as, bs []*lockHold) int {
	n := 0
	for _, a := range as {
		if a.end <= a.acquired {
			continue
		}
		for _, b := range bs {
			if b.acquired >= a.end {
				break
			}
			if b.end > b.acquired && b.end > a.acquired {
				n++
			}
		}
	}
	return n
}

func causeOf(h *lockHold) string {
	switch {
	case h.lost:
		return ", lost: " + h.cause
	case h.releaseStart >= 0 && h.end == h.releaseStart:
		return ", released"
	}
	return ""
}
