package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/fxelection/lock"
)

// The member side of the pause workload: this test binary, run again by
// the runner with envChild set, runs one elector or one lock client and
// reports what it believes and writes to the runner over a pipe.

// envChild holds a member's childConf (JSON); set, Run is a member.
const envChild = "FXELECTION_CHAOS_CHILD"

// File descriptors of a member's pipes: it reads ctlFD (EOF: stop
// gracefully) and writes events to eventFD.
const (
	ctlFD   = 3
	eventFD = 4
)

// IsChild reports whether this process is a member of a pause run.
func IsChild() bool { return os.Getenv(envChild) != "" }

// childConf is what a member needs to know.
type childConf struct {
	Target   string        `json:"target"`
	Identity string        `json:"identity"`
	Election string        `json:"election,omitempty"` // the election workload
	Keys     []string      `json:"keys,omitempty"`     // the lock workload
	Timing   Timing        `json:"timing"`
	MaxHold  time.Duration `json:"max_hold,omitempty"`
	// InFlight is how long a fenced write takes from its check of the
	// leadership to its arrival at the fence: the window a pause of a
	// write in flight hits.
	InFlight time.Duration `json:"in_flight"`
}

// Event kinds a member sends.
const (
	evReady   = "ready"   // the member is up
	evLead    = "lead"    // it believes it leads (holds Key) with Term
	evUnlead  = "unlead"  // it no longer does
	evWBegin  = "wbegin"  // a fenced write with Term checked the leadership (or lock) live
	evWrite   = "write"   // the write arrives at the fence
	evError   = "error"   // something failed (Err)
	evStopped = "stopped" // the member stopped and is about to exit
)

// childMsg is one event of a member, timestamped with mono.
type childMsg struct {
	K    string `json:"k"`
	Key  int    `json:"key,omitempty"`
	Term uint64 `json:"term,omitempty"`
	ID   uint64 `json:"id,omitempty"`
	At   int64  `json:"at"`
	Err  string `json:"err,omitempty"`
}

// childLink is a member's end of its pipes.
type childLink struct {
	mu  sync.Mutex
	w   *bufio.Writer
	enc *json.Encoder
	ids uint64
}

func (l *childLink) send(m childMsg) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m.At == 0 {
		m.At = mono()
	}
	_ = l.enc.Encode(m)
	_ = l.w.Flush()
}

func (l *childLink) nextID() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids++
	return l.ids
}

// fencedWrite reports a write with term on key k: it begins (the
// leadership was live), it is in flight for InFlight, it arrives.
func (l *childLink) fencedWrite(conf *childConf, k int, term uint64) {
	id := l.nextID()
	l.send(childMsg{K: evWBegin, Key: k, Term: term, ID: id})
	time.Sleep(conf.InFlight)
	l.send(childMsg{K: evWrite, Key: k, Term: term, ID: id})
}

// runChild is Run in a member process. It returns when the runner closes
// the control pipe (or dies), after a graceful stop.
func runChild(newClient func(addr string) (fxelection.Backend, func(), error)) error {
	var conf childConf
	if err := json.Unmarshal([]byte(os.Getenv(envChild)), &conf); err != nil {
		return fmt.Errorf("%s: %w", envChild, err)
	}
	ctl, events := os.NewFile(ctlFD, "chaos-ctl"), os.NewFile(eventFD, "chaos-events")
	if ctl == nil || events == nil {
		return errors.New("chaos member: no pipes")
	}
	defer events.Close()
	w := bufio.NewWriter(events)
	link := &childLink{w: w, enc: json.NewEncoder(w)}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ctlDone := make(chan struct{})
	go func() { // ends when the runner closes the pipe or exits
		defer close(ctlDone)
		_, _ = io.Copy(io.Discard, ctl)
		_ = ctl.Close()
		stop()
	}()
	b, closeClient, err := newClient(conf.Target)
	if err != nil {
		link.send(childMsg{K: evError, Err: "new client: " + err.Error()})
		<-ctlDone
		return nil
	}
	defer closeClient()
	if len(conf.Keys) > 0 {
		err = childLocks(ctx, &conf, link, b)
	} else {
		err = childElector(ctx, &conf, link, b)
	}
	if err != nil {
		link.send(childMsg{K: evError, Err: err.Error()})
	}
	<-ctlDone
	link.send(childMsg{K: evStopped})
	return nil
}

func childTiming(tm Timing) fxelection.Timing {
	return fxelection.Timing{LeaseDuration: tm.LeaseDuration, RenewDeadline: tm.RenewDeadline, RetryPeriod: tm.RetryPeriod, MaxBackoff: 3 * tm.RetryPeriod}
}

// childElector campaigns until ctx ends: a sampler reports Lease() every
// millisecond, a writer writes from RunIfLeader every RetryPeriod/4.
func childElector(ctx context.Context, conf *childConf, link *childLink, b fxelection.Backend) error {
	e, err := fxelection.New(fxelection.Config{Name: conf.Election, Identity: conf.Identity, Timing: childTiming(conf.Timing)}, b)
	if err != nil {
		return fmt.Errorf("new elector: %w", err)
	}
	e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
		if ev.Kind == fxelection.EventPanic {
			link.send(childMsg{K: evError, Err: fmt.Sprintf("panic reported: %v", ev.Err)})
		}
	}))
	if err := e.Start(context.Background()); err != nil {
		return fmt.Errorf("start elector: %w", err)
	}
	link.send(childMsg{K: evReady})
	var wg sync.WaitGroup
	quit := make(chan struct{})
	sampleOnce := func(lead *uint64) {
		l, ok := e.Lease()
		switch {
		case ok && *lead != l.Term:
			if *lead != 0 {
				link.send(childMsg{K: evUnlead, Term: *lead})
			}
			*lead = l.Term
			link.send(childMsg{K: evLead, Term: l.Term})
		case !ok && *lead != 0:
			link.send(childMsg{K: evUnlead, Term: *lead})
			*lead = 0
		}
	}
	var lead uint64
	wg.Add(2)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			sampleOnce(&lead)
		}
	}()
	go func() {
		defer wg.Done()
		tick := time.NewTicker(conf.Timing.RetryPeriod / 4)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			_, _ = e.RunIfLeader(context.Background(), func(ctx context.Context) error {
				l, _ := fxelection.LeaseFromContext(ctx)
				link.fencedWrite(conf, 0, l.Term)
				return nil
			})
		}
	}()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err = e.Stop(sctx)
	cancel()
	close(quit)
	wg.Wait()
	sampleOnce(&lead) // the last belief ended with Stop
	if err != nil {
		return fmt.Errorf("stop elector: %w", err)
	}
	return nil
}

// childLocks locks every key from a goroutine of its own until ctx ends:
// Acquire, hold for up to MaxHold (one hold in four up to two leases)
// writing every RetryPeriod/4 with the Lock's token, Release.
func childLocks(ctx context.Context, conf *childConf, link *childLink, b fxelection.Backend) error {
	locker, err := lock.New(b, lock.Options{Identity: conf.Identity, Timing: childTiming(conf.Timing)})
	if err != nil {
		return fmt.Errorf("new locker: %w", err)
	}
	link.send(childMsg{K: evReady})
	tm := conf.Timing
	var wg sync.WaitGroup
	for k, key := range conf.Keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				actx, cancel := context.WithTimeout(ctx, 2*tm.LeaseDuration)
				lk, err := locker.Acquire(actx, key)
				cancel()
				if err != nil {
					if ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
						link.send(childMsg{K: evError, Err: fmt.Sprintf("acquire %s: %v", key, err)})
						return
					}
					continue
				}
				// A Lock whose Context already ended when Acquire returned
				// (its renew deadline passed meanwhile) was never held.
				if term := lk.Term(); lk.Context().Err() == nil {
					link.send(childMsg{K: evLead, Key: k, Term: term})
					childHold(ctx, conf, link, k, lk)
					link.send(childMsg{K: evUnlead, Key: k, Term: term})
				}
				rctx, rcancel := context.WithTimeout(context.Background(), tm.LeaseDuration)
				_ = lk.Release(rctx) // an error: the lease expires
				rcancel()
				select {
				case <-ctx.Done():
				case <-time.After(time.Duration(rand.Int64N(int64(tm.RetryPeriod/2) + 1))):
				}
			}
		}()
	}
	wg.Wait()
	cctx, cancel := context.WithTimeout(context.Background(), tm.LeaseDuration)
	defer cancel()
	if err := locker.Close(cctx); err != nil {
		return fmt.Errorf("close locker: %w", err)
	}
	return nil
}

// childHold holds lk, writing with its token, until the hold time is up,
// its Context ends or ctx does.
func childHold(ctx context.Context, conf *childConf, link *childLink, k int, lk *lock.Lock) {
	tm := conf.Timing
	d := time.Duration(rand.Int64N(int64(conf.MaxHold) + 1))
	if rand.N(4) == 0 {
		d = time.Duration(rand.Int64N(int64(2*tm.LeaseDuration) + 1))
	}
	done := time.NewTimer(d)
	defer done.Stop()
	tick := time.NewTicker(tm.RetryPeriod / 4)
	defer tick.Stop()
	for {
		lctx := lk.Context()
		if lctx.Err() != nil {
			return
		}
		tok, err := fence.FromContext(lctx)
		if err != nil || tok.Term != lk.Term() {
			link.send(childMsg{K: evError, Err: fmt.Sprintf("the Context of lock %s (term %d) carries token %+v (%v)", lk.Key(), lk.Term(), tok, err)})
			return
		}
		link.fencedWrite(conf, k, tok.Term)
		select {
		case <-lctx.Done():
			return
		case <-ctx.Done():
			return
		case <-done.C:
			return
		case <-tick.C:
		}
	}
}
