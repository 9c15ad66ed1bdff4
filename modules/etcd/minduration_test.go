package etcdlease

import (
	"errors"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/pool"
)

// TestMinLeaseDuration: the backend reports etcd's minimum TTL (2s with
// the default election timeout, more once etcd granted more than asked),
// so a pool's member slot is never shorter than what etcd keeps; a pool
// whose LeaseDuration is below it is refused, naming LeaseDuration. A
// duration out of range matches backendkit.ErrDurationRange. No server:
// nothing here reaches one.
func TestMinLeaseDuration(t *testing.T) {
	b := &Backend{}
	if got := backendkit.MinLeaseDuration(b); got != DefaultMinTTL {
		t.Errorf("MinLeaseDuration %v, want %v", got, DefaultMinTTL)
	}
	b.granted(2, 2) // as asked: no news
	b.granted(3, 5) // a cluster whose minimum TTL is 5s
	b.granted(1, 4)
	if got := b.MinLeaseDuration(); got != 5*time.Second {
		t.Errorf("MinLeaseDuration after a 5s grant for 3s: %v, want 5s", got)
	}
	if err := checkDuration(0); !errors.Is(err, backendkit.ErrDurationRange) {
		t.Errorf("checkDuration(0): %v, want backendkit.ErrDurationRange", err)
	}
	_, err := pool.New(pool.Config{Name: "p", Shards: []string{"a"}, Timing: fxelection.Timing{LeaseDuration: 1500 * time.Millisecond, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond}}, &Backend{})
	var ce *fxelection.ConfigError
	if !errors.As(err, &ce) || ce.Field != "LeaseDuration" {
		t.Errorf("pool with LeaseDuration 1.5s on etcd: %v, want a ConfigError naming LeaseDuration", err)
	}
	if _, err := pool.New(pool.Config{Name: "p", Shards: []string{"a"}, Timing: fxelection.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond}}, &Backend{}); err != nil {
		t.Errorf("pool with LeaseDuration 3s on etcd: %v", err)
	}
}
