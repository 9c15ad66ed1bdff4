package metrics_test

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/metrics"
)

// TestConfigExtension: a document that lists the metrics extension gets
// every election measured and health handlers over all of them; a setting
// the extension does not have is an error naming its path.
func TestConfigExtension(t *testing.T) {
	opt, err := config.Load([]byte(`{
		"elections": [
			{"name": "a", "identity": "x", "lease_duration": "3s", "renew_deadline": "2s", "retry_period": "500ms",
			 "backend": {"module": "fxelection.backends.memory"}},
			{"name": "b", "identity": "x", "lease_duration": "3s", "renew_deadline": "2s", "retry_period": "500ms",
			 "backend": {"module": "fxelection.backends.memory"}}
		],
		"extensions": [{"module": "fxelection.extensions.metrics"}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	var h metrics.Handlers
	var es []*fxelection.Elector
	app := fxtest.New(t, opt,
		fx.Supply(fx.Annotate(reg, fx.As(new(prometheus.Registerer)))),
		fx.Populate(&h),
		fx.Invoke(fx.Annotate(func(got []*fxelection.Elector) { es = got }, fx.ParamTags(fxelection.GroupTag))),
	)
	app.RequireStart()
	defer app.RequireStop()
	if len(es) != 2 || h.Readiness == nil {
		t.Fatalf("electors %d, handlers %+v", len(es), h)
	}
	// Each election has one candidate on its own in-memory store: it leads
	// at its first attempt, which Start makes at once.
	for deadline := time.Now().Add(time.Minute); !es[0].IsLeader() || !es[1].IsLeader(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no leader in both elections after a minute")
		}
	}
	n, err := testutil.GatherAndCount(reg, metrics.NameIsLeader)
	if err != nil || n != 2 {
		t.Fatalf("%s series = %d, %v; want one per election", metrics.NameIsLeader, n, err)
	}

	_, err = config.Load([]byte(`{"elections": [{"name": "a", "backend": {"module": "fxelection.backends.memory"}}],
		"extensions": [{"module": "fxelection.extensions.metrics", "registry": "x"}]}`))
	var pe *config.PathError
	if !errors.As(err, &pe) || pe.Path != "extensions[0].registry" || !errors.Is(err, config.ErrUnknownKey) {
		t.Fatalf("unknown extension setting: %v", err)
	}
}
