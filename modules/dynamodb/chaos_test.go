package ddblease_test

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
	ddblease "github.com/fxelection/fxelection/modules/dynamodb"
)

// TestSoakChaos runs the conformance kit's chaos schedule (electiontest.RunChaos)
// on a DynamoDB Local of its own whose tables are in a file, so that they
// survive kill -9 (no overlap is allowed): five candidates, each with its
// own client behind its own fault-injecting proxy, partitions, latency,
// crashes, restarts, resignations, whole-cluster outages and kills of the
// server. DynamoDB is an observed-time store here: a follower first sees
// the record at its next poll and then waits a full lease on its own
// clock, so failover and convergence take up to LeaseDuration + 2.4 ×
// RetryPeriod. FXELECTION_CHAOS_DURATION and FXELECTION_CHAOS_SEED make it
// a long run.
func TestSoakChaos(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	srv := testserver.NewDynamoDB(t, testserver.DynamoDBOptions{})
	if err := ddblease.CreateTable(ctxT(t), clientOn(t, srv.Endpoint(), 0), table); err != nil {
		t.Fatal(err)
	}
	tm := electiontest.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 400 * time.Millisecond}
	bound := tm.LeaseDuration + 3*tm.RetryPeriod // ≥ LeaseDuration + 2.4 × RetryPeriod
	electiontest.RunChaos(t, electiontest.ChaosOptions{
		Target: srv.Addr(),
		Server: srv,
		NewClient: func(addr string) (fxelection.Backend, func(), error) {
			c, tr := client("http://"+addr, 1)
			b, err := ddblease.New(c, ddblease.Options{Table: table, SkipCreateTable: true})
			if err != nil {
				tr.CloseIdleConnections()
				return nil, nil, err
			}
			return b, tr.CloseIdleConnections, nil
		},
		Timing:           tm,
		FailoverBound:    bound,
		ConvergenceBound: bound,
		Duration:         40 * time.Second,
		Seed:             3,
	})
}
