package metrics_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest/faultinject"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/metrics"
)

// probe serves one request and checks the status code and the body's
// shape; it returns the decoded body.
func probe(t *testing.T, what string, h http.Handler, wantCode int) metrics.HealthReport {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	var rep metrics.HealthReport
	if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
		t.Fatalf("%s: body %q: %v", what, rec.Body.String(), err)
	}
	if rec.Code != wantCode {
		t.Errorf("%s: status %d, want %d; body %s", what, rec.Code, wantCode, strings.TrimSpace(rec.Body.String()))
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q", what, ct)
	}
	wantStatus := "ok"
	if wantCode != http.StatusOK {
		wantStatus = "failing"
	}
	if rep.Status != wantStatus {
		t.Errorf("%s: status field %q, want %q", what, rep.Status, wantStatus)
	}
	return rep
}

// TestHealthHandlers runs the handlers against real electors on fake time:
// before start, leader and follower, a store outage, a wedged leader, and
// after stop.
func TestHealthHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		fb := faultinject.New(mem)
		a := newElector(t, "jobs", "a", mem)
		b := newElector(t, "jobs", "b", fb)

		// An observer that, once armed, blocks a's loop in its next renewal:
		// a wedged leader that still believes it leads.
		unblock := make(chan struct{})
		var armed atomic.Bool
		a.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
			if ev.Kind == fxelection.EventRenewed && armed.CompareAndSwap(true, false) {
				<-unblock
			}
		}))
		var unblocked bool
		release := func() {
			if !unblocked {
				unblocked = true
				close(unblock)
			}
		}
		defer stop(t, b)
		defer stop(t, a)
		defer release()

		// Before start.
		probe(t, "live before start", metrics.Liveness(a), http.StatusOK)
		rep := probe(t, "ready before start", metrics.Readiness(a), http.StatusServiceUnavailable)
		if len(rep.Electors) != 1 || rep.Electors[0].Reason != "elector not running" || rep.Check != "readiness" {
			t.Errorf("ready before start: %+v", rep)
		}
		probe(t, "leader before start", metrics.LeaderOnly(a), http.StatusServiceUnavailable)

		// a leads, b follows.
		start(t, a)
		synctest.Wait()
		start(t, b)
		synctest.Wait()
		probe(t, "live", metrics.Liveness(a, b), http.StatusOK)
		rep = probe(t, "ready", metrics.Readiness(a, b), http.StatusOK)
		if len(rep.Electors) != 2 {
			t.Fatalf("ready report: %+v", rep)
		}
		ea, eb := rep.Electors[0], rep.Electors[1]
		if ea.Election != "jobs" || ea.Identity != "a" || ea.Backend != "memory" || !ea.OK || !ea.Running ||
			!ea.Leading || ea.Leader != "a" || ea.Term != 1 || ea.LastRenew.IsZero() || ea.LastError != "" {
			t.Errorf("leader's report: %+v", ea)
		}
		if eb.Identity != "b" || eb.Leading || eb.Leader != "a" || eb.Term != 1 || !eb.LastRenew.IsZero() {
			t.Errorf("follower's report: %+v", eb)
		}
		probe(t, "leader a", metrics.LeaderOnly(a), http.StatusOK)
		probe(t, "leader b", metrics.LeaderOnly(b), http.StatusServiceUnavailable)
		probe(t, "leader a+b", metrics.LeaderOnly(a, b), http.StatusServiceUnavailable)
		probe(t, "leader of none", metrics.LeaderOnly(), http.StatusServiceUnavailable)
		probe(t, "ready of none", metrics.Readiness(), http.StatusOK)

		// b's store goes away: b stays live but is not ready once the store
		// has been silent for a lease duration.
		fb.Partition(true)
		time.Sleep(leaseDuration + 2*retryPeriod)
		synctest.Wait()
		probe(t, "live b in outage", metrics.Liveness(b), http.StatusOK)
		rep = probe(t, "ready b in outage", metrics.Readiness(b), http.StatusServiceUnavailable)
		if e := rep.Electors[0]; !strings.Contains(e.LastError, faultinject.ErrInjected.Error()) || e.LastErrorAt.IsZero() ||
			!strings.Contains(e.Reason, "store has not answered") {
			t.Errorf("b's report in outage: %+v", e)
		}
		probe(t, "ready b, patient", metrics.HealthOptions{MaxContactAge: time.Hour}.Readiness(b), http.StatusOK)
		fb.Partition(false)
		for i := 0; ; i++ { // b backs off; poll until it has asked again
			time.Sleep(retryPeriod)
			if b.Status().LastContact.After(time.Now().Add(-retryPeriod)) {
				break
			}
			if i > 1000 {
				t.Fatal("b never reached the store again")
			}
		}
		probe(t, "ready b after outage", metrics.Readiness(b), http.StatusOK)

		// Wedge a's loop in its next renewal.
		armed.Store(true)
		time.Sleep(2 * retryPeriod)
		synctest.Wait()
		if armed.Load() {
			t.Fatal("a did not renew")
		}
		renewed := a.Status().LastRenew
		time.Sleep(time.Until(renewed.Add(2 * renewDeadline)))
		// Past the renew deadline, within lease duration + grace: not yet
		// dead, but no longer a leader to send traffic to (Status.Leading
		// agrees with IsLeader although the loop has not stepped down).
		probe(t, "live a, overdue", metrics.Liveness(a), http.StatusOK)
		rep = probe(t, "leader a, overdue", metrics.LeaderOnly(a), http.StatusServiceUnavailable)
		if e := rep.Electors[0]; e.Leading || a.IsLeader() || !a.Status().Holding || e.Reason != "not leading" {
			t.Errorf("overdue leader's report: %+v", e)
		}
		time.Sleep(time.Until(renewed.Add(leaseDuration + metrics.DefaultGrace + time.Millisecond)))
		rep = probe(t, "live a, wedged", metrics.Liveness(a), http.StatusServiceUnavailable)
		if e := rep.Electors[0]; e.Leading || e.OK || !strings.Contains(e.Reason, "no successful renewal") {
			t.Errorf("wedged leader's report: %+v", e)
		}
		probe(t, "live a+b, wedged", metrics.Liveness(a, b), http.StatusServiceUnavailable)
		probe(t, "live a, wedged, long grace", metrics.HealthOptions{Grace: time.Minute}.Liveness(a), http.StatusOK)
		probe(t, "ready a, wedged", metrics.Readiness(a), http.StatusServiceUnavailable)

		// Unwedged, a steps down (deadline long passed) and is live again.
		release()
		synctest.Wait()
		probe(t, "live a, unwedged", metrics.Liveness(a), http.StatusOK)
		probe(t, "leader a, unwedged", metrics.LeaderOnly(a), http.StatusServiceUnavailable)

		// Stopped electors are live but not ready.
		stop(t, a)
		stop(t, b)
		probe(t, "live after stop", metrics.Liveness(a, b), http.StatusOK)
		probe(t, "ready after stop", metrics.Readiness(a, b), http.StatusServiceUnavailable)
	})
}

// TestHandlersNewHandlers checks the Handlers bundle and HEAD requests.
func TestHandlersNewHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newElector(t, "jobs", "a", memory.New())
		start(t, e)
		defer stop(t, e)
		synctest.Wait()
		h := metrics.HealthOptions{}.NewHandlers(e, nil)
		probe(t, "live", h.Liveness, http.StatusOK)
		probe(t, "ready", h.Readiness, http.StatusOK)
		rep := probe(t, "leader", h.LeaderOnly, http.StatusOK)
		if len(rep.Electors) != 1 {
			t.Errorf("nil elector not skipped: %+v", rep)
		}
		rec := httptest.NewRecorder()
		h.Readiness.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/", nil))
		if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("HEAD: %d %v", rec.Code, rec.Header())
		}
	})
}
