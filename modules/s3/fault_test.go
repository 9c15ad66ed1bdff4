package s3lease_test

import (
	"errors"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testserver"
	s3lease "github.com/fxelection/fxelection/modules/s3"
)

// TestServerDown: while the store is down every operation is a store
// failure (never ErrLeaseLost or ErrNoLease); the lease object survives a
// crash, and the holder renews after the restart.
func TestServerDown(t *testing.T) {
	srv := testserver.NewMinIO(t, testserver.MinIOOptions{})
	tr, err := minio.DefaultTransport(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := minio.New(srv.Endpoint(), &minio.Options{
		Creds:      credentials.NewStaticV4(srv.AccessKey(), srv.SecretKey(), ""),
		Region:     "us-east-1",
		Transport:  tr,
		MaxRetries: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.MakeBucket(ctxT(t), "faults", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	b, err := s3lease.New(c, s3lease.Options{Bucket: "faults"})
	if err != nil {
		t.Fatal(err)
	}
	e := electiontest.Election(t)
	l, err := b.Acquire(ctxT(t), req(e, "a", time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	storeFailure := func(op string, err error) {
		t.Helper()
		if err == nil || errors.Is(err, fxelection.ErrLeaseLost) || errors.Is(err, fxelection.ErrNoLease) || errors.Is(err, fxelection.ErrLeaseHeld) {
			t.Fatalf("%s with the server down: %v, want a store failure", op, err)
		}
	}
	_, err = b.Renew(ctxT(t), l)
	storeFailure("Renew", err)
	_, err = b.Get(ctxT(t), e)
	storeFailure("Get", err)
	_, err = b.Acquire(ctxT(t), req(e, "b", time.Minute))
	storeFailure("Acquire", err)
	storeFailure("Release", b.Release(ctxT(t), l))

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	l2, err := b.Renew(ctxT(t), l)
	if err != nil {
		t.Fatalf("Renew after restart: %v", err)
	}
	if l2.Term != l.Term || l2.Version == l.Version {
		t.Fatalf("renewed %+v from %+v", l2, l)
	}
}
