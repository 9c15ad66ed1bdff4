package metrics

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// TestHealthRules table-tests the three checks on Status snapshots.
func TestHealthRules(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	base := fxelection.Status{
		Election: "jobs", Identity: "a", Backend: "memory", Running: true, Healthy: true,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		LastContact: ago(time.Second),
	}
	leader := base
	leader.Leading, leader.Holding, leader.LastRenew = true, true, ago(time.Second)
	leader.Lease = fxelection.Lease{Holder: "a", Term: 7}
	with := func(s fxelection.Status, f func(*fxelection.Status)) fxelection.Status { f(&s); return s }

	type want struct{ live, ready, leading bool }
	tests := []struct {
		name string
		opts HealthOptions
		s    fxelection.Status
		want want
	}{
		{"follower", HealthOptions{}, base, want{true, true, false}},
		{"healthy leader", HealthOptions{}, leader, want{true, true, true}},
		{"not started", HealthOptions{}, fxelection.Status{LeaseDuration: 15 * time.Second}, want{true, false, false}},
		{"stopped", HealthOptions{}, with(base, func(s *fxelection.Status) { s.Running = false }), want{true, false, false}},
		{"store never answered", HealthOptions{}, with(base, func(s *fxelection.Status) { s.LastContact = time.Time{} }), want{true, false, false}},
		{"store silent just under lease duration", HealthOptions{}, with(base, func(s *fxelection.Status) { s.LastContact = ago(15 * time.Second) }), want{true, true, false}},
		{"store silent past lease duration", HealthOptions{}, with(base, func(s *fxelection.Status) { s.LastContact = ago(16 * time.Second) }), want{true, false, false}},
		{"store silent past MaxContactAge", HealthOptions{MaxContactAge: 3 * time.Second}, with(base, func(s *fxelection.Status) { s.LastContact = ago(4 * time.Second) }), want{true, false, false}},
		{"leader past renew deadline (about to step down)", HealthOptions{}, with(leader, func(s *fxelection.Status) { s.LastRenew = ago(10 * time.Second) }), want{true, true, false}},
		{"leader at lease duration + grace", HealthOptions{}, with(leader, func(s *fxelection.Status) { s.LastRenew = ago(20 * time.Second) }), want{true, true, false}},
		{"wedged leader", HealthOptions{}, with(leader, func(s *fxelection.Status) {
			s.LastRenew, s.LastContact = ago(20*time.Second+time.Millisecond), ago(20*time.Second)
		}), want{false, false, false}},
		{"wedged leader, longer grace", HealthOptions{Grace: time.Minute}, with(leader, func(s *fxelection.Status) {
			s.LastRenew = ago(21 * time.Second)
		}), want{true, true, false}},
		{"wedged leader, shorter grace", HealthOptions{Grace: time.Second}, with(leader, func(s *fxelection.Status) {
			s.LastRenew = ago(17 * time.Second)
		}), want{false, true, false}},
		{"follower stuck in a backend call", HealthOptions{}, with(base, func(s *fxelection.Status) {
			s.InFlight, s.InFlightSince = backendkit.OpAcquire, ago(20*time.Second+time.Millisecond)
		}), want{false, true, false}},
		{"follower in a slow backend call", HealthOptions{}, with(base, func(s *fxelection.Status) {
			s.InFlight, s.InFlightSince = backendkit.OpAcquire, ago(20*time.Second)
		}), want{true, true, false}},
		{"unhealthy follower", HealthOptions{}, with(base, func(s *fxelection.Status) {
			s.Healthy, s.HealthError = false, errors.New("health command: exit status 1")
		}), want{true, false, false}},
		{"before the first health check passes", HealthOptions{}, with(base, func(s *fxelection.Status) { s.Healthy = false }), want{true, false, false}},
		{"follower long after a store error", HealthOptions{}, with(base, func(s *fxelection.Status) {
			s.LastError, s.LastErrorAt = errors.New("boom"), ago(time.Hour)
		}), want{true, true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live, why := tt.opts.live(tt.s, now)
			if live != tt.want.live {
				t.Errorf("live = %v (%s), want %v", live, why, tt.want.live)
			}
			ready, why := tt.opts.ready(tt.s, now)
			if ready != tt.want.ready {
				t.Errorf("ready = %v (%s), want %v", ready, why, tt.want.ready)
			}
			leading, why := tt.opts.leading(tt.s, now)
			if leading != tt.want.leading {
				t.Errorf("leading = %v (%s), want %v", leading, why, tt.want.leading)
			}
			if !live {
				if _, why := tt.opts.live(tt.s, now); !strings.Contains(why, "no successful renewal") && !strings.Contains(why, "backend acquire call running for 20.001s") {
					t.Errorf("liveness reason = %q", why)
				}
			}
		})
	}
}

// TestReport checks the descriptive fields of a check.
func TestReport(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	follower := report(fxelection.Status{
		Election: "jobs", Identity: "b", Backend: "redis", Running: true,
		Leader: fxelection.Lease{Holder: "a", Term: 4}, LeaderKnown: true,
		LastContact: at, LastError: errors.New("dial tcp: refused"), LastErrorAt: at,
		HealthError: errors.New("health http: status 503"),
	})
	if follower.Leader != "a" || follower.Term != 4 || follower.Leading || follower.LastError != "dial tcp: refused" ||
		follower.Healthy || follower.HealthError != "health http: status 503" {
		t.Errorf("follower report = %+v", follower)
	}
	lead := report(fxelection.Status{Leading: true, Lease: fxelection.Lease{Holder: "a", Term: 5}, LastRenew: at})
	if lead.Leader != "a" || lead.Term != 5 || !lead.LastRenew.Equal(at) {
		t.Errorf("leader report = %+v", lead)
	}
	if unknown := report(fxelection.Status{}); unknown.Leader != "" || unknown.Term != 0 {
		t.Errorf("unknown leader report = %+v", unknown)
	}
}
