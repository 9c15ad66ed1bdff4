package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/memory"
)

// TestLeaderShowsRenewedLease (bug: /leader on the leader showed the
// expires_at of its first acquisition, in the past after one lease): on
// fake time, a leader that has renewed for several lease durations shows
// its current lease, expiring in the future, with its term.
func TestLeaderShowsRenewedLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := fxelection.New(fxelection.Config{
			Name: "web", Identity: "solo", Metadata: map[string]string{"zone": "a"},
			Timing: fxelection.Timing{
				LeaseDuration: 3 * time.Second,
				RenewDeadline: 2 * time.Second,
				RetryPeriod:   500 * time.Millisecond,
			},
		}, memory.New())
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = e.Stop(context.Background()) }()
		h := leaderHandler(func() []*fxelection.Elector { return []*fxelection.Elector{e} })

		time.Sleep(time.Second)
		first := leaderGet(t, h)
		if !first.Leading || first.ExpiresAt == nil {
			t.Fatalf("/leader after a second = %+v, want leading with expires_at", first)
		}
		for range 4 {
			time.Sleep(3 * time.Second) // a full lease: without renewals it would have expired
			synctest.Wait()
			now := time.Now()
			got := leaderGet(t, h)
			if !got.Leading || got.Leader != "solo" || got.Term != first.Term || got.Metadata["zone"] != "a" {
				t.Fatalf("/leader = %+v, want solo leading at term %d", got, first.Term)
			}
			if got.ExpiresAt == nil || !got.ExpiresAt.After(now) {
				t.Fatalf("/leader on the leader: expires_at %v, now %v: want the renewed lease's, in the future", got.ExpiresAt, now)
			}
			l, ok := e.Lease()
			if !ok || !got.ExpiresAt.Equal(l.ExpiresAt) {
				t.Fatalf("/leader expires_at %v, the elector's lease %v (held %v)", got.ExpiresAt, l.ExpiresAt, ok)
			}
		}
	})
}

// leaderGet returns h's one /leader object.
func leaderGet(t *testing.T, h http.Handler) leaderJSON {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/leader", nil))
	var out leaderJSON
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
		t.Fatalf("/leader: %d %q", rec.Code, rec.Body.String())
	}
	return out
}
