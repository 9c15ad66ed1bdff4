package pglease_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testtier"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// TestSoakLockChaos runs the chaos kit's lock schedule
// (electiontest.RunChaos with Locks) on the package's private PostgreSQL: five
// clients, each with its own pool and lock.Locker behind its own
// fault-injecting proxy, locking two keys through partitions, latency,
// resets, crashes, restarts, whole-cluster outages and kill -9 of the
// postmaster (committed rows survive, so no overlap is documented); no two
// holds of a key may overlap, terms strictly increase per key, the fenced
// log refuses no live write. FXELECTION_CHAOS_DURATION and
// FXELECTION_CHAOS_SEED make it a long run.
func TestSoakLockChaos(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	srv := server(t)
	electiontest.RunChaos(t, electiontest.ChaosOptions{
		Locks:  &electiontest.LockWorkload{},
		Target: srv.Addr(),
		Server: srv,
		NewClient: func(addr string) (fxelection.Backend, func(), error) {
			cfg, err := pgxpool.ParseConfig("postgres://postgres@" + addr + "/postgres?sslmode=disable&connect_timeout=2")
			if err != nil {
				return nil, nil, err
			}
			cfg.MaxConns = 4
			pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
			if err != nil {
				return nil, nil, err
			}
			b, err := pglease.New(pool, pglease.Options{})
			if err != nil {
				pool.Close()
				return nil, nil, err
			}
			return b, func() { _ = b.Close(); pool.Close() }, nil
		},
		Duration: 40 * time.Second,
		Seed:     4,
	})
}
