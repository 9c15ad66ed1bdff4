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

// TestSoakChaos runs the conformance kit's chaos schedule (electiontest.RunChaos)
// on the package's private PostgreSQL: five candidates, each with its own
// pool behind its own fault-injecting proxy, partitions, latency, crashes,
// restarts, resignations, whole-cluster outages and kill -9 of the
// postmaster (committed rows survive, so no overlap is allowed).
// FXELECTION_CHAOS_DURATION and FXELECTION_CHAOS_SEED make it a long run.
func TestSoakChaos(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	srv := server(t)
	electiontest.RunChaos(t, electiontest.ChaosOptions{
		Target:    srv.Addr(),
		Server:    srv,
		NewClient: chaosClient,
		Duration:  40 * time.Second,
		Seed:      2,
	})
}

// chaosClient is a chaos member's backend: a client of its own on addr
// (the member's proxy).
func chaosClient(addr string) (fxelection.Backend, func(), error) {
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
}
