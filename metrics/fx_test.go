package metrics_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/metrics"
)

// TestModule: the module registers on the graph's Registerer, attaches to
// the elector, provides working handlers and deletes the series on stop.
func TestModule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		var h metrics.Handlers
		var m *metrics.Metrics
		app := fx.New(
			fx.NopLogger,
			memory.Module,
			fx.Supply(testConfig("jobs", "a")),
			fxelection.Module,
			metrics.Module,
			fx.Supply(fx.Annotate(reg, fx.As(new(prometheus.Registerer)))),
			fx.Populate(&h, &m),
		)
		if err := app.Err(); err != nil {
			t.Fatal(err)
		}
		if m == nil || h.Liveness == nil || h.Readiness == nil || h.LeaderOnly == nil {
			t.Fatalf("module provided %v, %+v", m, h)
		}
		if n, _ := testutil.GatherAndCount(reg); n != 0 {
			t.Errorf("%d series before start, want none", n)
		}
		ctx := context.Background()
		if err := app.Start(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := series(t, reg, metrics.NameIsLeader); !equal(got, map[string]float64{"election=jobs,identity=a": 1}) {
			t.Errorf("is_leader = %v", got)
		}
		if got := series(t, reg, metrics.NameTransitions); got["direction=gained,election=jobs,identity=a"] != 1 {
			t.Errorf("transitions = %v (the first acquisition must be seen)", got)
		}
		lintClean(t, reg)
		probe(t, "live", h.Liveness, http.StatusOK)
		probe(t, "ready", h.Readiness, http.StatusOK)
		probe(t, "leader", h.LeaderOnly, http.StatusOK)
		if err := app.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if n, _ := testutil.GatherAndCount(reg); n != 0 {
			t.Errorf("%d series after stop, want none", n)
		}
	})
}

// TestModuleNamedElections: every elector in the group is attached, and
// HealthOptions come from the graph.
func TestModuleNamedElections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		var h metrics.Handlers
		cfg := testConfig("", "a")
		app := fx.New(
			fx.NopLogger,
			memory.Module,
			fxelection.Named("billing", cfg),
			fxelection.Named("reports", cfg),
			metrics.Module,
			fx.Supply(metrics.HealthOptions{MaxContactAge: time.Millisecond}),
			fx.Provide(func() prometheus.Registerer { return reg }),
			fx.Populate(&h),
		)
		ctx := context.Background()
		if err := app.Start(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		want := map[string]float64{"election=billing,identity=a": 1, "election=reports,identity=a": 1}
		if got := series(t, reg, metrics.NameIsLeader); !equal(got, want) {
			t.Errorf("is_leader = %v, want %v", got, want)
		}
		if rep := probe(t, "leader", h.LeaderOnly, http.StatusOK); len(rep.Electors) != 2 {
			t.Errorf("leader-only report covers %d electors, want 2", len(rep.Electors))
		}
		// The graph's HealthOptions are used: 2ms after the last renewal
		// the store is "silent" by MaxContactAge.
		probe(t, "ready", h.Readiness, http.StatusOK)
		time.Sleep(2 * time.Millisecond)
		probe(t, "ready, MaxContactAge 1ms", h.Readiness, http.StatusServiceUnavailable)
		if err := app.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if n, _ := testutil.GatherAndCount(reg); n != 0 {
			t.Errorf("%d series after stop", n)
		}
	})
}

// TestTwoAppsDefaultRegistry: two apps in one process, both on the default
// registerer (none in the graph), neither panics nor fails, and each
// elector has its own series.
func TestTwoAppsDefaultRegistry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		newApp := func(identity string) *fx.App {
			return fx.New(
				fx.NopLogger,
				memory.Module,
				fx.Supply(testConfig("default-registry", identity)),
				fxelection.Module,
				metrics.Module,
			)
		}
		ctx := context.Background()
		one, two := newApp("one"), newApp("two")
		for _, app := range []*fx.App{one, two} {
			if err := app.Err(); err != nil {
				t.Fatal(err)
			}
			if err := app.Start(ctx); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		g := prometheus.DefaultGatherer
		want := map[string]float64{"election=default-registry,identity=one": 1, "election=default-registry,identity=two": 1}
		if got := seriesFor(t, g, metrics.NameIsLeader, "default-registry"); !equal(got, want) {
			t.Errorf("is_leader = %v, want %v (separate backends: both lead)", got, want)
		}
		if err := one.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		want = map[string]float64{"election=default-registry,identity=two": 1}
		if got := seriesFor(t, g, metrics.NameIsLeader, "default-registry"); !equal(got, want) {
			t.Errorf("after one stopped is_leader = %v, want %v", got, want)
		}
		if err := two.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if got := seriesFor(t, g, metrics.NameIsLeader, "default-registry"); len(got) != 0 {
			t.Errorf("after both stopped is_leader = %v", got)
		}
	})
}
