package s3lease_test

import (
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testtier"
	s3lease "github.com/fxelection/fxelection/modules/s3"
)

// TestSoakChaos runs the conformance kit's chaos schedule (electiontest.RunChaos)
// on the package's private MinIO: five candidates, each with its own client
// behind its own fault-injecting proxy, partitions, latency, crashes,
// restarts, resignations, whole-cluster outages and kill -9 of the server
// (objects survive, so no overlap is allowed). S3 is an observed-time store:
// a follower first sees the record at its next poll and then waits a full
// lease on its own clock, so failover and convergence take up to
// LeaseDuration + 2.4 × RetryPeriod. FXELECTION_CHAOS_DURATION and
// FXELECTION_CHAOS_SEED make it a long run.
func TestSoakChaos(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	srv := server(t)
	tm := electiontest.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 400 * time.Millisecond}
	bound := tm.LeaseDuration + 3*tm.RetryPeriod // ≥ LeaseDuration + 2.4 × RetryPeriod
	electiontest.RunChaos(t, electiontest.ChaosOptions{
		Target: srv.Addr(),
		Server: srv,
		NewClient: func(addr string) (fxelection.Backend, func(), error) {
			return chaosClient(addr, srv.AccessKey(), srv.SecretKey())
		},
		Timing:           tm,
		FailoverBound:    bound,
		ConvergenceBound: bound,
		Duration:         40 * time.Second,
		Seed:             3,
	})
}

// chaosClient is a chaos member's backend: a client of its own on addr
// (the member's proxy) with the server's credentials.
func chaosClient(addr, user, password string) (fxelection.Backend, func(), error) {
	tr, err := minio.DefaultTransport(false)
	if err != nil {
		return nil, nil, err
	}
	c, err := minio.New(addr, &minio.Options{
		Creds:      credentials.NewStaticV4(user, password, ""),
		Region:     "us-east-1",
		Transport:  tr,
		MaxRetries: 1,
	})
	if err != nil {
		return nil, nil, err
	}
	b, err := s3lease.New(c, s3lease.Options{Bucket: bucket})
	if err != nil {
		tr.CloseIdleConnections()
		return nil, nil, err
	}
	return b, tr.CloseIdleConnections, nil
}
