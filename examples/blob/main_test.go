package main

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/doctest"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestBlobRuns runs the program against a private Azurite with the
// container "leases" until it leads, then stops it, which releases the
// lease.
func TestBlobRuns(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewAzurite(t, testserver.AzuriteOptions{})
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	admin, err := azblob.NewClientFromConnectionString(srv.ConnectionString(), &azblob.ClientOptions{
		ClientOptions: policy.ClientOptions{Transport: &http.Client{Transport: tr}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := admin.CreateContainer(ctx, "leases", nil); err != nil {
		t.Fatal(err)
	}

	p := doctest.StartProgram(t, func(ctx context.Context, out io.Writer) error {
		return run(ctx, srv.ConnectionString(), out)
	})
	p.LeadThenStop(t, "billing")
}
