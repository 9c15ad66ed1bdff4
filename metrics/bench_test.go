package metrics

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/memory"
)

func benchAttachment(b *testing.B) *attachment {
	b.Helper()
	e, err := fxelection.New(fxelection.Config{Name: "jobs", Identity: "a"}, memory.New())
	if err != nil {
		b.Fatal(err)
	}
	m, err := New(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	return newAttachment(m.c, e)
}

// BenchmarkObserveOperation is the cost the metrics add to every backend
// call of an elector.
func BenchmarkObserveOperation(b *testing.B) {
	a := benchAttachment(b)
	ev := fxelection.Event{Kind: fxelection.EventOperation, Op: backendkit.OpRenew, Duration: 3 * time.Millisecond, Time: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		a.Observe(ev)
	}
}

// BenchmarkObserveStoreError: an operation that failed (result label from
// errors.Is, plus the error counter).
func BenchmarkObserveStoreError(b *testing.B) {
	a := benchAttachment(b)
	ev := fxelection.Event{Kind: fxelection.EventOperation, Op: backendkit.OpAcquire, Err: faultinject.ErrInjected, Time: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		a.Observe(ev)
	}
}

// BenchmarkObserveRenewed is the per-renewal cost on top of the operation.
func BenchmarkObserveRenewed(b *testing.B) {
	a := benchAttachment(b)
	ev := fxelection.Event{Kind: fxelection.EventRenewed, Lease: fxelection.Lease{Term: 3}, Margin: 13 * time.Second, Time: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		a.Observe(ev)
	}
}

// BenchmarkReadiness serves one readiness probe over one elector.
func BenchmarkReadiness(b *testing.B) {
	e, err := fxelection.New(fxelection.Config{Name: "jobs", Identity: "a"}, memory.New())
	if err != nil {
		b.Fatal(err)
	}
	h := Readiness(e)
	req := httptest.NewRequest(http.MethodGet, "/readyz", nil)
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}
