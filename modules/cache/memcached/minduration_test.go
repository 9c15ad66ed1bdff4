package memcachedlease_test

import (
	"errors"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/pool"
	cachelease "github.com/fxelection/fxelection/modules/cache"
	memcachedlease "github.com/fxelection/fxelection/modules/cache/memcached"
)

// TestMinLeaseDuration: memcached counts TTLs in whole seconds, so the
// backend reports a minimum lease of one second (a pool's member slot is
// never shorter), and a duration it cannot express matches
// backendkit.ErrDurationRange. No server: nothing here reaches one.
func TestMinLeaseDuration(t *testing.T) {
	b, err := memcachedlease.New(memcache.New("127.0.0.1:1"), cachelease.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := backendkit.MinLeaseDuration(b); got != time.Second {
		t.Errorf("MinLeaseDuration %v, want 1s", got)
	}
	if _, err := memcachedlease.Expiration(memcachedlease.MaxLease + time.Second); !errors.Is(err, backendkit.ErrDurationRange) || !errors.Is(err, cachelease.ErrTTLRange) {
		t.Errorf("Expiration beyond MaxLease: %v, want ErrTTLRange and backendkit.ErrDurationRange", err)
	}
	// A pool whose member slot would be shorter than that is still
	// accepted while LeaseDuration covers the second; one below it is not.
	if _, err := pool.New(pool.Config{Name: "p", Shards: []string{"a"}, Timing: fxelection.Timing{LeaseDuration: 1500 * time.Millisecond, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}}, b); err != nil {
		t.Errorf("pool with LeaseDuration 1.5s: %v", err)
	}
	_, err = pool.New(pool.Config{Name: "p", Shards: []string{"a"}, Timing: fxelection.Timing{LeaseDuration: 900 * time.Millisecond, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}}, b)
	var ce *fxelection.ConfigError
	if !errors.As(err, &ce) || ce.Field != "LeaseDuration" {
		t.Errorf("pool with LeaseDuration 900ms on memcached: %v, want a ConfigError naming LeaseDuration", err)
	}
}
