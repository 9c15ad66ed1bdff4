package kubelease_test

import (
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
	kubelease "github.com/fxelection/fxelection/modules/kubernetes"
)

// TestSoakChaos runs the conformance kit's chaos schedule (electiontest.RunChaos)
// on a kube-apiserver of its own: five candidates, each with its own client
// behind its own fault-injecting proxy, partitions, latency, crashes,
// restarts, resignations, outages and SIGKILLs and restarts of the API
// server (its etcd keeps every acknowledged write, so no overlap is
// allowed). Failover is bounded as on any observed-time store.
// FXELECTION_CHAOS_DURATION and FXELECTION_CHAOS_SEED make it a long run.
func TestSoakChaos(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	srv := testserver.NewKubeAPIServer(t, testserver.KubeAPIServerOptions{})
	tm := electiontest.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 400 * time.Millisecond}
	electiontest.RunChaos(t, electiontest.ChaosOptions{
		Target: srv.Addr(),
		Server: srv,
		NewClient: func(addr string) (fxelection.Backend, func(), error) {
			cfg := restConfig(srv, srv.AdminToken())
			cfg.Host = "https://" + addr
			cfg.Timeout = 2 * time.Second
			hc, err := restHTTPClient(cfg)
			if err != nil {
				return nil, nil, err
			}
			c, err := kubernetes.NewForConfigAndClient(cfg, hc)
			if err != nil {
				return nil, nil, err
			}
			b, err := kubelease.New(c, kubelease.Options{})
			if err != nil {
				return nil, nil, err
			}
			return b, func() { _ = b.Close(); hc.CloseIdleConnections() }, nil
		},
		Timing:        tm,
		FailoverBound: tm.LeaseDuration + tm.RetryPeriod*24/10,
		Duration:      40 * time.Second,
		Seed:          11,
	})
}
