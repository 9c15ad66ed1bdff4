package fxelection_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// TestEventStoreFailure: an operation's error is a store failure unless it
// is one of the contract's expected outcomes, however wrapped; other kinds
// of event never are.
func TestEventStoreFailure(t *testing.T) {
	op := func(err error) fxelection.Event {
		return fxelection.Event{Kind: fxelection.EventOperation, Op: backendkit.OpRenew, Err: err}
	}
	cases := []struct {
		ev   fxelection.Event
		want bool
	}{
		{op(nil), false},
		{op(&backendkit.HeldError{}), false},
		{op(fmt.Errorf("renew: %w", backendkit.ErrLeaseLost)), false},
		{op(backendkit.ErrNoLease), false},
		{op(errors.New("connection refused")), true},
		{op(fmt.Errorf("decode: %w", backendkit.ErrInvalidRecord)), true},
		{op(context.Canceled), true},
		{fxelection.Event{Kind: fxelection.EventPanic, Err: errors.New("boom")}, false},
	}
	for _, c := range cases {
		if got := c.ev.StoreFailure(); got != c.want {
			t.Errorf("StoreFailure() of %v with %v = %v, want %v", c.ev.Kind, c.ev.Err, got, c.want)
		}
	}
}
