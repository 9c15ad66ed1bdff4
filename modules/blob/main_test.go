package bloblease_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	bloblease "github.com/fxelection/fxelection/modules/blob"
)

const container = "fxelection-test"

var private *testserver.Private[*testserver.Azurite] // the package's own server

// TestMain starts one private Azurite for the package, creates the test
// container, and checks for leaked goroutines after closing the server.
func TestMain(m *testing.M) {
	testserver.Main(m, func() func() error {
		private = testserver.StartPrivate(func() (*testserver.Azurite, error) {
			return testserver.StartAzurite(testserver.AzuriteOptions{})
		}, func(srv *testserver.Azurite) error { return makeContainer(srv, container) })
		return private.Close
	})
}

func makeContainer(srv *testserver.Azurite, name string) error {
	c, tr, err := client(srv)
	if err != nil {
		return err
	}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.CreateContainer(ctx, name, nil); err != nil {
		return fmt.Errorf("create container: %w", err)
	}
	return nil
}

// server returns the private server, skipping (failing under CI=true) when
// it could not start.
func server(t testing.TB) *testserver.Azurite { return private.Get(t) }

// client returns a client of its own (own connection pool) on srv.
func client(srv *testserver.Azurite) (*azblob.Client, *http.Transport, error) {
	cred, err := azblob.NewSharedKeyCredential(srv.AccountName(), srv.AccountKey())
	if err != nil {
		return nil, nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	c, err := azblob.NewClientWithSharedKeyCredential(srv.ServiceURL(), cred, &azblob.ClientOptions{
		ClientOptions: azcore.ClientOptions{
			Transport: &http.Client{Transport: tr},
			Retry:     policy.RetryOptions{MaxRetries: 2, RetryDelay: 50 * time.Millisecond, MaxRetryDelay: time.Second},
		},
	})
	if err != nil {
		return nil, nil, err
	}
	return c, tr, nil
}

// newClient is client on the private server for tests; its connections
// close at cleanup.
func newClient(t testing.TB) *azblob.Client {
	t.Helper()
	return newClientOn(t, server(t))
}

// newClientOn is client on srv; its connections close at cleanup.
func newClientOn(t testing.TB, srv *testserver.Azurite) *azblob.Client {
	t.Helper()
	c, tr, err := client(srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return c
}

// newBackend returns a backend on a new client.
func newBackend(t testing.TB, opts bloblease.Options) *bloblease.Backend {
	t.Helper()
	if opts.Container == "" {
		opts.Container = container
	}
	b, err := bloblease.New(newClient(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var ctxT = electiontesting.Context // shared by every backend's tests

func req(election, id string, d time.Duration) backendkit.AcquireRequest {
	return backendkit.AcquireRequest{Election: election, Identity: id, Metadata: map[string]string{"addr": id + ":8080"}, Duration: d}
}
