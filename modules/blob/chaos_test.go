package bloblease_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
	bloblease "github.com/fxelection/fxelection/modules/blob"
)

// TestSoakChaos runs the conformance kit's chaos schedule (electiontest.RunChaos)
// on the package's private Azurite: five candidates, each with its own
// client behind its own fault-injecting proxy, partitions, latency, crashes,
// restarts, resignations, whole-cluster outages and kill -9 of the emulator.
// Azure's minimum lease is 15 s, so the timing (and the schedule, which
// scales with it) is five times the other backends'. Azurite may lose its
// last writes when killed (documented), so overlaps right after its restart
// count as documented. FXELECTION_CHAOS_DURATION and FXELECTION_CHAOS_SEED
// make it a long run.
//
// A killed Azurite may also lose the test container, created just before
// (it saves its state on an interval): the restart hook re-creates it, as
// an operator would, so that the schedule tests the election rather than a
// missing container.
func TestSoakChaos(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	srv := server(t)
	electiontest.RunChaos(t, electiontest.ChaosOptions{
		Target:             srv.Addr(),
		Server:             azuriteChaos{srv},
		RestartLosesLeases: true,
		NewClient: func(addr string) (fxelection.Backend, func(), error) {
			cred, err := azblob.NewSharedKeyCredential(srv.AccountName(), srv.AccountKey())
			if err != nil {
				return nil, nil, err
			}
			tr := http.DefaultTransport.(*http.Transport).Clone()
			c, err := azblob.NewClientWithSharedKeyCredential("http://"+addr+"/"+testserver.AzuriteAccount, cred, &azblob.ClientOptions{
				ClientOptions: azcore.ClientOptions{
					Transport: &http.Client{Transport: tr},
					Retry:     policy.RetryOptions{MaxRetries: 1, RetryDelay: 50 * time.Millisecond, MaxRetryDelay: time.Second},
				},
			})
			if err != nil {
				return nil, nil, err
			}
			b, err := bloblease.New(c, bloblease.Options{Container: container})
			if err != nil {
				tr.CloseIdleConnections()
				return nil, nil, err
			}
			return b, tr.CloseIdleConnections, nil
		},
		Timing:   electiontest.Timing{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second},
		Slack:    3 * time.Second,
		Duration: 100 * time.Second,
		Seed:     4,
	})
}

// azuriteChaos restarts Azurite for RunChaos and re-creates the test
// container if the kill lost it.
type azuriteChaos struct{ *testserver.Azurite }

func (a azuriteChaos) Restart() error {
	if err := a.Azurite.Restart(); err != nil {
		return err
	}
	if err := makeContainer(a.Azurite, container); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		return err
	}
	return nil
}
