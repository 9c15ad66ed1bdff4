package kubelease_test

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fxelection/fxelection/fxelection"
	kubelease "github.com/fxelection/fxelection/modules/kubernetes"
)

// newInCluster makes the Backend of a pod: its service account's
// credentials, a rate limit for many elections, the namespace of the
// Deployment in deploy/.
func newInCluster() (fxelection.Backend, error) {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 50, 100 // client-go's default of 5 starves more than a few elections
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	backend, err := kubelease.New(client, kubelease.Options{Namespace: "billing"})
	return backend, err
}

// Example shows the Backend of a pod (rest.InClusterConfig fails outside
// one).
func Example() {
	if _, err := newInCluster(); err != nil {
		return
	}
	// Output:
}
