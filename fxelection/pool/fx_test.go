package pool_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/fxelection/pool"
)

// TestModule: a pool provided by Module starts with the app, takes every
// shard while alone, and releases them on the app's stop.
func TestModule(t *testing.T) {
	var p *pool.Pool
	var store *memory.Backend
	app := fxtest.New(t,
		memory.Module,
		pool.Named("jobs", pool.Config{
			Shards: []string{"a", "b", "c"},
			Timing: fxelection.Timing{
				LeaseDuration: 3 * time.Second,
				RenewDeadline: 2 * time.Second,
				RetryPeriod:   100 * time.Millisecond,
			},
		}),
		fx.Populate(fx.Annotate(&p, fx.ParamTags(`name:"jobs"`)), &store),
	)
	app.RequireStart()
	deadline := time.Now().Add(30 * time.Second)
	for len(p.Owned()) != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("owned %d shards after 30s, want 3", len(p.Owned()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := p.Status(); st.Target != 3 || st.Owned != 3 {
		t.Errorf("Status = %+v, want 3 owned of a target of 3", st)
	}
	app.RequireStop()
	for _, s := range []string{"a", "b", "c"} {
		if l, err := store.Get(context.Background(), "jobs#shard/"+s); err == nil {
			t.Errorf("shard %s still held after the app stopped: %+v", s, l)
		}
	}
}
