package memory_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/doctest"
)

// TestPackageDoc: the package doc names no unexported identifier and its
// failover bound is the core's (the follower's retry is jittered up to
// backoff.JitterFactor); TestFailoverBound checks it on fake time.
func TestPackageDoc(t *testing.T) {
	doctest.CheckPackageDoc(t, doctest.Want{Says: []string{
		fmt.Sprintf("within LeaseDuration + %v × RetryPeriod", backoff.JitterFactor),
	}})
}

// TestFailoverBound: a leader that vanishes without releasing (here: Stop
// with KeepLeaseOnStop) is replaced within LeaseDuration + 1.2 ×
// RetryPeriod of its last renewal, on fake time, over several hand-overs.
func TestFailoverBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		cfg := fxelection.Config{
			Name: "failover", Timing: fxelection.Timing{
				LeaseDuration: 3 * time.Second,
				RenewDeadline: 2 * time.Second,
				RetryPeriod:   500 * time.Millisecond,
			}, KeepLeaseOnStop: true,
		}
		bound := cfg.LeaseDuration + backoff.JitterMax(cfg.RetryPeriod)
		start := func(id string) *fxelection.Elector {
			c := cfg
			c.Identity = id
			e, err := fxelection.New(c, store)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			return e
		}
		leader := start("c0")
		for !leader.IsLeader() {
			time.Sleep(time.Millisecond)
		}
		for i := 1; i <= 5; i++ {
			next := start(fmt.Sprintf("c%d", i))
			time.Sleep(4 * cfg.RetryPeriod) // a few renewals
			last := leader.Status().LastRenew
			if err := leader.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			for !next.IsLeader() {
				time.Sleep(time.Millisecond)
			}
			if took := time.Since(last); took > bound+time.Millisecond {
				t.Errorf("hand-over %d: the follower led %v after the last renewal, the doc says within %v", i, took, bound)
			}
			leader = next
		}
		_ = leader.Stop(context.Background())
	})
}
