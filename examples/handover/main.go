// Command handover chooses who leads: candidate a hands the lease to b by
// name (ResignTo), then c, started with a higher priority and preemption
// on, takes it from b once b has led for MinTenure. All three share an
// in-memory backend here; in production each is a process on the same
// store.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/memory"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	backend := memory.New()
	start := func(id string, priority int) (*fxelection.Elector, error) {
		e, err := fxelection.New(fxelection.Config{
			Name: "billing", Identity: id,
			Timing: fxelection.Timing{
				LeaseDuration: 3 * time.Second,
				RenewDeadline: 2 * time.Second,
				RetryPeriod:   500 * time.Millisecond,
			}, Candidacy: fxelection.Candidacy{
				Priority:  priority,
				Preempt:   true,
				MinTenure: 2 * time.Second,
			}, // higher is preferred; advertised in the lease record
		}, backend)
		if err != nil {
			return nil, err
		}
		return e, e.Start(ctx)
	}
	a, err := start("a", 0)
	if err != nil {
		return err
	}
	defer a.Stop(ctx)
	waitLeader(a)
	b, err := start("b", 0)
	if err != nil {
		return err
	}
	defer b.Stop(ctx)

	// Move leadership off a (before draining its node, say): b leads next,
	// with a higher term. Nobody else may take the lease meanwhile.
	if err := a.ResignTo(ctx, "b"); err != nil {
		return err
	}
	l := waitLeader(b)
	fmt.Fprintf(out, "a handed over to %s (term %d)\n", l.Holder, l.Term)

	// A new version rolls out with a higher priority: it takes over once
	// b has led MinTenure, and leadership never moves back to priority 0.
	c, err := start("c", 1)
	if err != nil {
		return err
	}
	defer c.Stop(ctx)
	l = waitLeader(c)
	fmt.Fprintf(out, "c (priority 1) took over from b (term %d)\n", l.Term)
	return nil
}

// waitLeader waits until e leads and returns its lease.
func waitLeader(e *fxelection.Elector) fxelection.Lease {
	for {
		if l, ok := e.Lease(); ok {
			return l
		}
		time.Sleep(10 * time.Millisecond)
	}
}
