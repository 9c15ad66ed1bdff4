package natslease

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testtier"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// TestSoakChaos runs the conformance kit's chaos schedule (electiontest.RunChaos)
// on a real nats-server with JetStream: five candidates, each with its own
// connection behind its own fault-injecting proxy, partitions, latency,
// crashes, restarts, resignations, whole-cluster outages and kill -9 of the
// server (the file-store bucket survives, so no overlap is allowed). The KV
// store uses observed time, so failover and convergence take up to
// LeaseDuration + 2.4 × RetryPeriod. FXELECTION_CHAOS_DURATION and
// FXELECTION_CHAOS_SEED make it a long run.
func TestSoakChaos(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	srv, _ := newServer(t)
	tm := electiontest.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 400 * time.Millisecond}
	bound := tm.LeaseDuration + 3*tm.RetryPeriod // ≥ LeaseDuration + 2.4 × RetryPeriod
	electiontest.RunChaos(t, electiontest.ChaosOptions{
		Target: srv.Addr(),
		Server: srv,
		NewClient: func(addr string) (fxelection.Backend, func(), error) {
			nc, err := nats.Connect("nats://"+addr,
				nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond),
				nats.Timeout(time.Second), nats.NoCallbacksAfterClientClose(),
				nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
			if err != nil {
				return nil, nil, err
			}
			js, err := jetstream.New(nc)
			if err != nil {
				nc.Close()
				return nil, nil, err
			}
			// The bucket is bound on first use, so that a candidate started
			// behind a partition or while the server is down does not block.
			st, err := NewBucketStore(js, jetstream.KeyValueConfig{Bucket: testBucket})
			if err != nil {
				nc.Close()
				return nil, nil, err
			}
			b, err := backendOn(st, cachelease.Options{})
			if err != nil {
				nc.Close()
				return nil, nil, err
			}
			return b, func() { _ = b.Close(); nc.Close() }, nil
		},
		Timing:           tm,
		FailoverBound:    bound,
		ConvergenceBound: bound,
		Duration:         40 * time.Second,
		Seed:             6,
	})
}
