package s3lease_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testtier"
)

// envPauseKeys hands the private MinIO's root credentials
// ("user:password") to the members of a pause run.
const envPauseKeys = "S3LEASE_TEST_PAUSE_KEYS"

// pauseChaos runs the pause workload (electiontest.RunChaos with Pauses) on
// the package's private MinIO, an observed-time store: five members, each a
// process of its own with its own client, frozen with SIGSTOP and resumed
// with SIGCONT; S3 has no fence guard, so their fenced writes go to the
// runner's resource that refuses lower terms. In a member process
// (electiontest.IsChaosChild) the private server is not started (TestMain):
// the member reaches the test process's with the credentials in
// envPauseKeys.
func pauseChaos(t *testing.T, locks *electiontest.LockWorkload, d time.Duration, seed uint64) {
	target := ""
	if !electiontest.IsChaosChild() {
		srv := server(t)
		target = srv.Addr()
		t.Setenv(envPauseKeys, srv.AccessKey()+":"+srv.SecretKey())
	}
	tm := electiontest.Timing{LeaseDuration: 1500 * time.Millisecond, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond}
	bound := tm.LeaseDuration + 3*tm.RetryPeriod // ≥ LeaseDuration + 2.4 × RetryPeriod
	electiontest.RunChaos(t, electiontest.ChaosOptions{
		Target: target,
		Locks:  locks,
		Pauses: &electiontest.PauseWorkload{},
		NewClient: func(addr string) (fxelection.Backend, func(), error) {
			user, password, _ := strings.Cut(os.Getenv(envPauseKeys), ":")
			return chaosClient(addr, user, password)
		},
		Timing:           tm,
		ConvergenceBound: bound,
		MeanGap:          100 * time.Millisecond,
		Duration:         d,
		Seed:             seed,
	})
}

// TestSoakPauseChaos runs the pause workload on electors for three minutes
// (about 500 pauses; two soak runs make a thousand); FXELECTION_CHAOS_DURATION and
// FXELECTION_CHAOS_SEED make it longer or another schedule.
func TestSoakPauseChaos(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	pauseChaos(t, nil, 3*time.Minute, 32)
}

// TestSoakLockPauseChaos runs the pause workload on lock clients (two
// keys each) for three minutes.
func TestSoakLockPauseChaos(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	pauseChaos(t, &electiontest.LockWorkload{}, 3*time.Minute, 33)
}
