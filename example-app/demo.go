package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/memory"
)

// Demo timing: short enough to watch a failover in a few seconds.
const (
	demoLease    = 3 * time.Second
	demoDeadline = 2 * time.Second
	demoRetry    = 500 * time.Millisecond
	demoChaos    = 5 * time.Second // time between disruptions
)

// demoCandidate is one of the demo's in-process candidates. Its backend
// goes through a fault injector so the demo can cut it off the store.
type demoCandidate struct {
	id     string
	net    *faultinject.Backend
	e      *fxelection.Elector
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// runDemo runs three candidates on one in-memory store and disrupts the
// leader every few seconds: alternately a graceful stop (the lease is
// released: hand-over at once) and a vanishing (cut off without releasing:
// the others wait for the lease to expire). Until ctx is done or
// --demo-duration passes.
func runDemo(ctx context.Context, o options, log *slog.Logger) error {
	if o.demoDuration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.demoDuration)
		defer cancel()
	}
	store := memory.New()
	log.Info("demo: three candidates, one in-memory lease", "lease", demoLease, "renew_deadline", demoDeadline, "retry", demoRetry)

	cands := make([]*demoCandidate, 3)
	for i := range cands {
		c := &demoCandidate{id: fmt.Sprintf("candidate-%d", i+1), net: faultinject.New(store)}
		if err := c.start(o, log); err != nil {
			return err
		}
		cands[i] = c
	}
	defer func() {
		for _, c := range cands {
			c.stop()
		}
	}()

	tick := time.NewTicker(demoChaos)
	defer tick.Stop()
	for round := 0; ; round++ {
		select {
		case <-ctx.Done():
			log.Info("demo: stopping")
			return nil
		case <-tick.C:
		}
		var leader *demoCandidate
		for _, c := range cands {
			if c.e.IsLeader() {
				leader = c
			}
		}
		if leader == nil {
			log.Info("demo: nobody leads right now (a lease is expiring)")
			continue
		}
		if round%2 == 0 {
			log.Info("demo: stopping the leader gracefully: it releases the lease", "identity", leader.id)
			leader.stop()
			// It comes back as a follower, once another candidate has taken
			// over (push wake-up makes that immediate).
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(2 * demoRetry):
			}
			if err := leader.start(o, log); err != nil {
				return err
			}
			continue
		}
		log.Info("demo: the leader vanishes without releasing (cut off from the store)", "identity", leader.id)
		leader.net.Partition(true)
		go func() { // reconnect it after the others have taken over
			select {
			case <-time.After(demoLease + 2*demoRetry):
			case <-ctx.Done():
			}
			leader.net.Partition(false)
		}()
	}
}

// start builds and starts a fresh elector for c, with its worker.
func (c *demoCandidate) start(o options, log *slog.Logger) error {
	cfg := fxelection.Config{
		Name: "demo", Identity: c.id,
		Timing: fxelection.Timing{
			LeaseDuration: demoLease,
			RenewDeadline: demoDeadline,
			RetryPeriod:   demoRetry,
			MaxBackoff:    4 * demoRetry,
		},
	}
	e, err := fxelection.New(cfg, c.net)
	if err != nil {
		return err
	}
	e.AddObserver(logContract(log))
	ctx, cancel := context.WithCancel(context.Background())
	if err := e.Start(ctx); err != nil {
		cancel()
		return err
	}
	c.e, c.cancel = e, cancel
	c.done.Go(func() { work(ctx, e, o.workInterval, log) })
	return nil
}

// stop stops c's worker and elector gracefully.
func (c *demoCandidate) stop() {
	c.cancel()
	c.done.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.e.Stop(ctx)
}
