package fxelection_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestLeaderRefreshedOnRenewal: on the leader, Leader() and Status().Leader
// show the lease as last renewed (its ExpiresAt moves on), not the one
// acquired: example-app's /leader showed an expiry in the past.
func TestLeaderRefreshedOnRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, cfg("a"), memory.New())
		synctest.Wait()
		first, ok := e.Leader()
		if !ok || first.Holder != "a" {
			t.Fatalf("Leader() = %+v, %v", first, ok)
		}
		time.Sleep(5 * retry)
		synctest.Wait()
		now, ok := e.Leader()
		if !ok || now.Term != first.Term {
			t.Fatalf("Leader() after renewals = %+v, %v", now, ok)
		}
		if !now.ExpiresAt.After(time.Now()) || !now.ExpiresAt.After(first.ExpiresAt) {
			t.Fatalf("Leader().ExpiresAt = %v at %v (acquired with %v): not refreshed on renewal", now.ExpiresAt, time.Now(), first.ExpiresAt)
		}
		if st := e.Status(); !st.Leader.ExpiresAt.Equal(now.ExpiresAt) {
			t.Fatalf("Status().Leader.ExpiresAt = %v, Leader() %v", st.Leader.ExpiresAt, now.ExpiresAt)
		}
		if err := e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
