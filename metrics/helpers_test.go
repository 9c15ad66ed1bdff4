package metrics_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/metrics"
)

// Test timings: small, and on fake time (testing/synctest) anyway.
const (
	leaseDuration = 1500 * time.Millisecond
	renewDeadline = time.Second
	retryPeriod   = 200 * time.Millisecond
)

func testConfig(name, identity string) fxelection.Config {
	return fxelection.Config{
		Name: name, Identity: identity,
		Timing: fxelection.Timing{
			LeaseDuration: leaseDuration,
			RenewDeadline: renewDeadline,
			RetryPeriod:   retryPeriod,
		},
	}
}

// newElector builds an elector with the test timings; the test starts and
// stops it (inside its synctest bubble).
func newElector(t *testing.T, name, identity string, b fxelection.Backend) *fxelection.Elector {
	t.Helper()
	e, err := fxelection.New(testConfig(name, identity), b)
	if err != nil {
		t.Fatalf("new elector: %v", err)
	}
	return e
}

func start(t *testing.T, e *fxelection.Elector) {
	t.Helper()
	if err := e.Start(context.Background()); err != nil {
		t.Fatalf("start %s/%s: %v", e.Status().Election, e.Status().Identity, err)
	}
}

func stop(t *testing.T, e *fxelection.Elector) {
	t.Helper()
	if err := e.Stop(context.Background()); err != nil {
		t.Errorf("stop %s/%s: %v", e.Status().Election, e.Status().Identity, err)
	}
}

// series returns every series of family name in g as "labels → value",
// labels rendered k=v sorted, e.g. "election=jobs,identity=a" → 1.
func series(t *testing.T, g prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[labelString(m)] = value(mf.GetType(), m)
		}
	}
	return out
}

// seriesFor keeps the series of one election.
func seriesFor(t *testing.T, g prometheus.Gatherer, name, election string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for k, v := range series(t, g, name) {
		if strings.Contains(k, "election="+election+",") || strings.HasSuffix(k, "election="+election) {
			out[k] = v
		}
	}
	return out
}

func labelString(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() { // already sorted by name
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	return strings.Join(parts, ",")
}

func value(typ dto.MetricType, m *dto.Metric) float64 {
	switch typ {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_HISTOGRAM:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return m.GetUntyped().GetValue()
}

// histogram renders the text exposition of one histogram series with the
// given bucket bounds and observations.
func histogram(name, labels string, buckets []float64, obs ...float64) string {
	var b strings.Builder
	sum := 0.0
	for _, o := range obs {
		sum += o
	}
	for _, le := range buckets {
		n := 0
		for _, o := range obs {
			if o <= le {
				n++
			}
		}
		fmt.Fprintf(&b, "%s_bucket{%s,le=%q} %d\n", name, labels, strconv.FormatFloat(le, 'g', -1, 64), n)
	}
	fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %d\n", name, labels, len(obs))
	fmt.Fprintf(&b, "%s_sum{%s} %s\n", name, labels, strconv.FormatFloat(sum, 'g', -1, 64))
	fmt.Fprintf(&b, "%s_count{%s} %d\n", name, labels, len(obs))
	return b.String()
}

// after sleeps (on the bubble's fake clock) until origin+d, then waits for
// every other goroutine in the bubble to block.
func after(origin time.Time, d time.Duration) {
	time.Sleep(time.Until(origin.Add(d)))
	synctest.Wait()
}

func unixSeconds(t time.Time) float64 {
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}

// newMetrics returns a pedantic registry and Metrics registered on it.
func newMetrics(t *testing.T) (*prometheus.Registry, *metrics.Metrics) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return reg, m
}
