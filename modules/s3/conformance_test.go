package s3lease_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testserver"
	s3lease "github.com/fxelection/fxelection/modules/s3"
)

// putGarbage writes an object the backend cannot decode, as a foreign
// program might. S3 cannot expire it (GarbageNeverExpires).
func putGarbage(opts s3lease.Options) func(*testing.T, string, time.Duration) {
	return func(t *testing.T, election string, _ time.Duration) {
		b := newBackend(t, opts)
		body := []byte(`{"not": "a lease", "fxelection_s3": [1]}`)
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
		StoreDown: storeDown,
	})
}

func TestConformance(t *testing.T) {
	server(t)
	runConformance(t, s3lease.Options{}, storeDown)
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
