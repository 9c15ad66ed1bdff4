package fxelection_test

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
)

// The package's front-door example: one candidate leads, does its work with
// the fencing term, and releases the lease on Stop.
func Example() {
	ctx := context.Background()
	done := make(chan struct{})
	backend := memory.New()
	e, err := fxelection.New(fxelection.Config{
		Name:     "nightly-report",
		Identity: "worker-1",
		Callbacks: fxelection.Callbacks{
			OnStartedLeading: func(ctx context.Context) {
				lease, _ := fxelection.LeaseFromContext(ctx)
				report(ctx, lease.Term)
				close(done)
				<-ctx.Done() // lead until leadership ends
			},
			OnStoppedLeading: func(lease fxelection.Lease, reason fxelection.StopReason) {
				fmt.Printf("%s stopped leading term %d: %s\n", lease.Holder, lease.Term, reason)
			},
		},
	}, backend)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := e.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	<-done
	if err := e.Stop(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// writing the report with fencing term 1
	// worker-1 stopped leading term 1: stopped
}

// report stands for the leader's work: its writes carry term, so a store
// with a fencing guard refuses them once a later leader has written.
func report(_ context.Context, term uint64) {
	fmt.Printf("writing the report with fencing term %d\n", term)
}

// An fx application on the in-memory backend: the module starts campaigning
// when the app starts and releases the lease when it stops.
func Example_fx() {
	led := make(chan fxelection.Lease, 1)
	app := fx.New(
		fx.NopLogger,
		memory.Module, // or redislease.Module, pglease.Module, …
		fx.Supply(fxelection.Config{
			Name:     "nightly-report",
			Identity: "worker-1",
			Callbacks: fxelection.Callbacks{
				OnStartedLeading: func(ctx context.Context) {
					lease, _ := fxelection.LeaseFromContext(ctx)
					led <- lease
					<-ctx.Done() // lead until leadership ends
				},
			},
		}),
		fxelection.Module,
		fx.Invoke(func(e *fxelection.Elector) {
			fmt.Println("campaigning for", e.Status().Election)
		}),
	)
	if err := app.Start(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	lease := <-led
	fmt.Printf("%s leads with fencing term %d\n", lease.Holder, lease.Term)
	if err := app.Stop(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Println("stopped; lease released")
	// Output:
	// campaigning for nightly-report
	// worker-1 leads with fencing term 1
	// stopped; lease released
}

// Without fx: build an elector, run work only while leading, and guard the
// work's writes with the fencing term.
func ExampleElector_RunIfLeader() {
	backend := memory.New()
	e, err := fxelection.New(fxelection.Config{Name: "billing", Identity: "node-a"}, backend)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if err := e.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)
	for !e.IsLeader() { // a real program would just try again on its next tick
		time.Sleep(time.Millisecond)
	}
	ran, err := e.RunIfLeader(ctx, func(ctx context.Context) error {
		lease, _ := fxelection.LeaseFromContext(ctx)
		fmt.Printf("charging cards as %s, term %d\n", lease.Holder, lease.Term)
		return nil
	})
	fmt.Println(ran, err)
	// Output:
	// charging cards as node-a, term 1
	// true <nil>
}

// Followers know who leads, with the leader's advertised metadata.
func ExampleElector_Leader() {
	backend := memory.New()
	ctx := context.Background()
	leader, _ := fxelection.New(fxelection.Config{Name: "api", Identity: "a", Metadata: map[string]string{"addr": "10.0.0.1:8080"}}, backend)
	_ = leader.Start(ctx)
	defer leader.Stop(ctx)
	for !leader.IsLeader() {
		time.Sleep(time.Millisecond)
	}
	follower, _ := fxelection.New(fxelection.Config{Name: "api", Identity: "b"}, backend)
	_ = follower.Start(ctx)
	defer follower.Stop(ctx)
	for {
		if l, ok := follower.Leader(); ok {
			fmt.Println("leader is", l.Holder, "at", l.Metadata["addr"], "term", l.Term)
			break
		}
		time.Sleep(time.Millisecond)
	}
	// Output:
	// leader is a at 10.0.0.1:8080 term 1
}
