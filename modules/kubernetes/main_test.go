package kubelease_test

import (
	"io"
	"net/http"
	"os"
	"testing"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	kubelease "github.com/fxelection/fxelection/modules/kubernetes"
)

var private *testserver.Private[*testserver.KubeAPIServer] // the package's own API server

// TestMain starts one private kube-apiserver (with its etcd) for the
// package and checks for leaked goroutines after closing it.
func TestMain(m *testing.M) {
	// client-go logs request errors through klog; the tests' faults cause
	// many, and the elector reports each as an event anyway.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	testserver.Main(m, func() func() error {
		if _, child := os.LookupEnv(childEnv); child {
			return func() error { return nil } // TestInteropChild uses its parent's API server
		}
		private = testserver.StartPrivate(func() (*testserver.KubeAPIServer, error) {
			return testserver.StartKubeAPIServer(testserver.KubeAPIServerOptions{})
		}, nil)
		return private.Close
	})
}

// server returns the private API server, skipping (failing under CI=true)
// when it could not start.
func server(t testing.TB) *testserver.KubeAPIServer { return private.Get(t) }

// restConfig is a client configuration for srv as the user of token.
func restConfig(srv *testserver.KubeAPIServer, token string) *rest.Config {
	return &rest.Config{
		Host: srv.URL(), BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: srv.CACert()},
		QPS:             1000, Burst: 2000, // the tests' many electors; the rate limit is the app's choice
	}
}

// newClient returns a clientset of its own (own connections, as another
// process would have) as the admin; its connections close at cleanup.
func newClient(t testing.TB) kubernetes.Interface {
	t.Helper()
	return newClientAs(t, server(t).AdminToken())
}

// restHTTPClient is the HTTP client of cfg, its own connection pool.
func restHTTPClient(cfg *rest.Config) (*http.Client, error) { return rest.HTTPClientFor(cfg) }

func newClientAs(t testing.TB, token string) kubernetes.Interface {
	t.Helper()
	cfg := restConfig(server(t), token)
	hc, err := restHTTPClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.CloseIdleConnections)
	c, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newBackend returns a Backend on a new client, closed at cleanup.
func newBackend(t testing.TB, opts kubelease.Options) *kubelease.Backend {
	t.Helper()
	b, err := kubelease.New(newClient(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// getLease reads election's Lease object as the admin.
func getLease(t testing.TB, ns, election string) *coordv1.Lease {
	t.Helper()
	l, err := newClient(t).CoordinationV1().Leases(ns).Get(ctxT(t), kubelease.LeaseName(election), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var ctxT = electiontesting.Context // shared by every backend's tests
