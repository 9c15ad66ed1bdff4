package pglease_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/fxelection/fence"
	"github.com/fxelection/fxelection/internal/testtier"
	"github.com/fxelection/fxelection/modules/postgres/pgfence"
)

// pauseTiming is the pause runs' timing: G = LeaseDuration − RenewDeadline
// is 500ms, so a run injects many pauses of every length (the longest, 2 … 3
// leases, 3 … 4.5s).
var pauseTiming = electiontest.Timing{LeaseDuration: 1500 * time.Millisecond, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond}

// pauseChaos runs the pause workload (electiontest.RunChaos with Pauses) on
// the package's private PostgreSQL: five members, each a process of its own
// with its own pool, frozen with SIGSTOP and resumed with SIGCONT; their
// fenced writes are transactions guarded by pgfence.Check that update a
// row of the election. In a member process (electiontest.IsChaosChild) the
// private server is not started (TestMain): the member reaches the test
// process's.
func pauseChaos(t *testing.T, locks *electiontest.LockWorkload, d time.Duration, seed uint64) {
	target := ""
	var pool *pgxpool.Pool
	guard, err := pgfence.New(pgfence.Options{Table: "pausechaos_fence"})
	if err != nil {
		t.Fatal(err)
	}
	if !electiontest.IsChaosChild() {
		srv := server(t)
		target = srv.Addr()
		pool = newPausePool(t, target)
		ctx := context.Background()
		if err := guard.CreateTable(ctx, pool); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS pausechaos_data (election text PRIMARY KEY, term bigint NOT NULL)`); err != nil {
			t.Fatal(err)
		}
	}
	electiontest.RunChaos(t, electiontest.ChaosOptions{
		Target: target,
		Locks:  locks,
		Pauses: &electiontest.PauseWorkload{
			Fence: func(ctx context.Context, tok fence.Token) error {
				ctx = fence.WithToken(ctx, tok)
				return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					if err := guard.Check(ctx, tx); err != nil {
						return err
					}
					_, err := tx.Exec(ctx, `INSERT INTO pausechaos_data (election, term) VALUES ($1, $2)
						ON CONFLICT (election) DO UPDATE SET term = excluded.term`, tok.Election, int64(tok.Term))
					return err
				})
			},
		},
		NewClient: chaosClient,
		Timing:    pauseTiming,
		MeanGap:   100 * time.Millisecond,
		Duration:  d,
		Seed:      seed,
	})
}

func newPausePool(t *testing.T, addr string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@"+addr+"/postgres?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestSoakPauseChaos runs the pause workload on electors for three minutes
// (about 500 pauses; two soak runs make a thousand); FXELECTION_CHAOS_DURATION and
// FXELECTION_CHAOS_SEED make it longer or another schedule.
func TestSoakPauseChaos(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	pauseChaos(t, nil, 3*time.Minute, 22)
}

// TestSoakLockPauseChaos runs the pause workload on lock clients (two
// keys each) for three minutes.
func TestSoakLockPauseChaos(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	pauseChaos(t, &electiontest.LockWorkload{}, 3*time.Minute, 23)
}
