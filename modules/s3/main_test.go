package s3lease_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	s3lease "github.com/fxelection/fxelection/modules/s3"
)

const bucket = "fxelection-test"

var (
	private *testserver.Private[*testserver.MinIO] // the package's own server
	bucketN atomic.Int64
)

// TestMain starts one private MinIO for the package, creates the test
// bucket, and checks for leaked goroutines after closing the server
// (goleak.VerifyTestMain would run before the Close and see the server's
// process waiter).
func TestMain(m *testing.M) {
	testserver.Main(m, func() func() error {
		if electiontest.IsChaosChild() {
			return nil // a member of a pause run: it uses its parent's server
		}
		private = testserver.StartPrivate(func() (*testserver.MinIO, error) {
			return testserver.StartMinIO(testserver.MinIOOptions{})
		}, func(srv *testserver.MinIO) error { return makeBucket(srv, bucket) })
		return private.Close
	})
}

func makeBucket(srv *testserver.MinIO, name string) error {
	c, tr, err := client(srv)
	if err != nil {
		return err
	}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.MakeBucket(ctx, name, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		return fmt.Errorf("make bucket: %w", err)
	}
	return nil
}

// server returns the private server, skipping (failing under CI=true) when
// it could not start.
func server(t testing.TB) *testserver.MinIO { return private.Get(t) }

// client returns a client of its own (own connection pool) on srv.
func client(srv *testserver.MinIO) (*minio.Client, *http.Transport, error) {
	tr, err := minio.DefaultTransport(false)
	if err != nil {
		return nil, nil, err
	}
	c, err := minio.New(srv.Endpoint(), &minio.Options{
		Creds:     credentials.NewStaticV4(srv.AccessKey(), srv.SecretKey(), ""),
		Region:    "us-east-1",
		Transport: tr,
	})
	if err != nil {
		return nil, nil, err
	}
	return c, tr, nil
}

// newClient is client for tests; its connections close at cleanup.
func newClient(t testing.TB) *minio.Client {
	t.Helper()
	c, tr, err := client(server(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return c
}

// newBackend returns a backend on a new client.
func newBackend(t testing.TB, opts s3lease.Options) *s3lease.Backend {
	t.Helper()
	if opts.Bucket == "" {
		opts.Bucket = bucket
	}
	b, err := s3lease.New(newClient(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newBucket creates a fresh bucket for one test.
func newBucket(t testing.TB) string {
	t.Helper()
	srv := server(t)
	name := fmt.Sprintf("fxe-%d-%d", time.Now().UnixNano()%1e9, bucketN.Add(1))
	if err := makeBucket(srv, name); err != nil {
		t.Fatal(err)
	}
	return name
}

var ctxT = electiontesting.Context // shared by every backend's tests
