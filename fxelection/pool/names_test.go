package pool_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/memory"
	"github.com/fxelection/fxelection/fxelection/pool"
)

// TestNamesRefused: the pool's name and every shard name (not only the
// longest) follow the rule of user-given names: printable, no '#', which
// names the pool's own records. The error names the field and never
// quotes the value.
func TestNamesRefused(t *testing.T) {
	const secret = "s3cr3t"
	for _, tc := range []struct {
		name        string
		cfg         pool.Config
		field, want string
	}{
		{"pool name with '#'", pool.Config{Name: secret + "#p", Shards: []string{"a"}}, "Name", "must not contain '#'"},
		{"shard with '#'", pool.Config{Name: "p", Shards: []string{"a", secret + "#0"}}, "Shards[1]", "must not contain '#'"},
		{"unprintable shard, not the longest", pool.Config{Name: "p", Shards: []string{"a-long-and-valid-" + secret, secret + "\x01"}},
			"Shards[1]", "must be printable"},
	} {
		_, err := pool.New(tc.cfg, memory.New())
		var ce *fxelection.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field || !strings.Contains(ce.Reason, tc.want) {
			t.Errorf("%s: %v, want a ConfigError for %s saying %q", tc.name, err, tc.field, tc.want)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: %q quotes the value", tc.name, err)
		}
	}
}

// TestPoolApartFromElections: a pool's records are names no election can
// have, so an election named as a pool shard used to be ("p/shard/x") is
// another election: it leads, and the pool "p" takes its shard "x" too.
func TestPoolApartFromElections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		timing := fxelection.Config{Timing: fxelection.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}}
		ecfg := timing
		ecfg.Name, ecfg.Identity = "p/shard/x", "election"
		e, err := fxelection.New(ecfg, store)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer e.Stop(context.Background())
		time.Sleep(time.Second)
		if !e.IsLeader() {
			t.Fatal("the election does not lead")
		}
		p, err := pool.New(pool.Config{
			Name: "p", Shards: []string{"x"}, Identity: "worker",
			Timing: fxelection.Timing{
				LeaseDuration: timing.LeaseDuration,
				RenewDeadline: timing.RenewDeadline,
				RetryPeriod:   timing.RetryPeriod,
			},
		}, store)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		st := p.Status()
		if err := p.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if st.Owned != 1 || !e.IsLeader() {
			t.Fatalf("pool status %+v, election leads: %v; want both the shard owned and the election led", st, e.IsLeader())
		}
	})
}
