package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"go.uber.org/goleak"

	"github.com/fxelection/fxelection/internal/doctest"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestS3Runs runs the program against a private MinIO with the bucket
// "leases" until it leads, then stops it, which releases the lease.
func TestS3Runs(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	srv := testserver.NewMinIO(t, testserver.MinIOOptions{})
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey())
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey())
	tr, err := minio.DefaultTransport(false)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.CloseIdleConnections()
	admin, err := minio.New(srv.Endpoint(), &minio.Options{Creds: credentials.NewEnvAWS(), Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := admin.MakeBucket(ctx, "leases", minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		t.Fatal(err)
	}

	p := doctest.StartProgram(t, func(ctx context.Context, out io.Writer) error {
		return run(ctx, srv.Endpoint(), false, out)
	})
	p.LeadThenStop(t, "billing")
	obj, err := admin.GetObject(ctx, "leases", "fxelection/billing.json", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	if _, err := io.ReadAll(obj); err != nil {
		t.Fatalf("the lease object: %v", err)
	}
}
