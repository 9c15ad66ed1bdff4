package s3lease_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/featuretest"
	"github.com/fxelection/fxelection/internal/fencedcounter"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
	s3lease "github.com/fxelection/fxelection/modules/s3"
)

// putGarbage writes an object the backend cannot decode, as a foreign
// program might. S3 cannot expire it (GarbageNeverExpires).
func putGarbage(opts s3lease.Options) func(*testing.T, string, time.Duration) {
	return func(t *testing.T, election string, _ time.Duration) {
		b := newBackend(t, opts)
		body := []byte(`{"not": "a lease", "fxelection_value": [1]}`)
		_, err := newClient(t).PutObject(ctxT(t), b.Bucket(), b.Key(election), bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func runConformance(t *testing.T, opts s3lease.Options, storeDown func(*testing.T) electiontest.DownStore) {
	electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
		return newBackend(t, opts)
	}, electiontest.Options{
		TTL:                 time.Second,
		PutGarbage:          putGarbage(opts),
		GarbageNeverExpires: true,
		DeleteRecord: func(t *testing.T, election string) {
			deleteObject(t, newBackend(t, opts), election)
		},
		Recreate: func(t *testing.T, _ string) {
			recreateBucket(t, opts.Bucket)
		},
		StoreDown: storeDown,
	})
}

// TestConformance runs the suite (contract and smoke) in a bucket of its
// own, which the RecreatedStore case deletes and re-creates.
func TestConformance(t *testing.T) {
	runConformance(t, s3lease.Options{Bucket: newBucket(t)}, storeDown)
}

// recreateBucket deletes name with every object in it and creates it
// again, behind the backends' backs, as an operator might. It retries
// (setup, never an assertion) while MinIO catches up with the deletes.
func recreateBucket(t *testing.T, name string) {
	t.Helper()
	c := newClient(t)
	ctx := ctxT(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := removeBucket(ctx, c, name)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("remove bucket: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := c.MakeBucket(ctx, name, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		t.Fatalf("make bucket again: %v", err)
	}
}

// removeBucket removes every object of name, then name itself.
func removeBucket(ctx context.Context, c *minio.Client, name string) error {
	for obj := range c.ListObjects(ctx, name, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			return obj.Err
		}
		if err := c.RemoveObject(ctx, name, obj.Key, minio.RemoveObjectOptions{}); err != nil {
			return err
		}
	}
	return c.RemoveBucket(ctx, name)
}

// TestConformancePrefix runs the suite in a bucket of its own with a custom
// prefix.
func TestConformancePrefix(t *testing.T) {
	runConformance(t, s3lease.Options{Bucket: newBucket(t), Prefix: "elections/x-"}, nil)
}

// storeDown returns a backend on a MinIO of its own for the suite's
// StoreDown case: the lease object survives a crash, and a renewal after
// the restart writes a new ETag.
func storeDown(t *testing.T) electiontest.DownStore {
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
	return electiontest.DownStore{Backend: b, Kill: srv.Kill, Restart: srv.Restart, RenewWrites: true}
}

// TestConformanceFeatures runs the repository's feature cases (electors,
// locks and semaphores: internal/featuretest) on S3, an observed-time
// store without push, at real timings (e2e tier; they run on the
// in-memory backend under fake time in the default tier). The lock cases'
// holders write through redisfence on a Redis of the test's own.
func TestConformanceFeatures(t *testing.T) {
	testtier.Require(t, testtier.E2E)
	opts := s3lease.Options{Bucket: newBucket(t)}
	featuretest.Run(t, func(t *testing.T) fxelection.Backend {
		return newBackend(t, opts)
	}, featuretest.Options{Counter: fencedcounter.PrivateRedis})
}
