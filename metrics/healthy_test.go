package metrics_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/metrics"
)

// TestHealthyGauge: fxelection_healthy follows the elector's health check
// (1, then 0 once it fails, then 1 again), readiness fails while it is
// unhealthy and liveness does not; the series goes when the elector stops.
// Fake time.
func TestHealthyGauge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg, m := newMetrics(t)
		var failing atomic.Bool
		c := testConfig("jobs", "a")
		c.Health.Interval, c.Health.Threshold = 100*time.Millisecond, 1
		c.Health.Check = func(context.Context) error {
			if failing.Load() {
				return errors.New("disk full")
			}
			return nil
		}
		a, err := fxelection.New(c, memory.New())
		if err != nil {
			t.Fatal(err)
		}
		plain := newElector(t, "other", "b", memory.New()) // no Health.Check: always 1
		defer m.Attach(a)()
		defer m.Attach(plain)()
		start(t, a)
		start(t, plain)
		synctest.Wait()

		gauge := func(want string) {
			t.Helper()
			exp := `
# HELP fxelection_healthy Whether this candidate passes its health check (1) or not (0): Status.Healthy, read at each scrape; always 1 without a Config.Health.Check.
# TYPE fxelection_healthy gauge
` + want
			if err := testutil.GatherAndCompare(reg, strings.NewReader(exp), metrics.NameHealthy); err != nil {
				t.Error(err)
			}
		}
		gauge(`fxelection_healthy{election="jobs",identity="a"} 1
fxelection_healthy{election="other",identity="b"} 1
`)
		probe(t, "readiness, healthy", metrics.Readiness(a), http.StatusOK)

		failing.Store(true)
		time.Sleep(c.Health.Interval + time.Millisecond)
		synctest.Wait()
		gauge(`fxelection_healthy{election="jobs",identity="a"} 0
fxelection_healthy{election="other",identity="b"} 1
`)
		rep := probe(t, "readiness, unhealthy", metrics.Readiness(a, plain), http.StatusServiceUnavailable)
		if e := rep.Electors[0]; e.OK || e.Healthy || e.Reason != "health check failing" || e.HealthError != "disk full" {
			t.Errorf("unhealthy elector's report: %+v", e)
		}
		if e := rep.Electors[1]; !e.OK || !e.Healthy {
			t.Errorf("healthy elector's report: %+v", e)
		}
		probe(t, "liveness, unhealthy", metrics.Liveness(a), http.StatusOK)
		if a.IsLeader() {
			t.Error("an unhealthy candidate leads")
		}

		failing.Store(false)
		time.Sleep(c.Health.Interval + time.Millisecond)
		synctest.Wait()
		gauge(`fxelection_healthy{election="jobs",identity="a"} 1
fxelection_healthy{election="other",identity="b"} 1
`)
		probe(t, "readiness, healthy again", metrics.Readiness(a), http.StatusOK)
		lintClean(t, reg)

		stop(t, a)
		gauge(`fxelection_healthy{election="other",identity="b"} 1
`)
		stop(t, plain)
		if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
			t.Errorf("after stop: %d series left (err %v)", n, err)
		}
	})
}
