package s3lease_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
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

func runConformance(t *testing.T, opts s3lease.Options) {
	electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
		return newBackend(t, opts)
	}, electiontest.Options{
		TTL:                 time.Second,
		PutGarbage:          putGarbage(opts),
		GarbageNeverExpires: true,
		DeleteRecord: func(t *testing.T, election string) {
			deleteObject(t, newBackend(t, opts), election)
		},
	})
}

func TestConformance(t *testing.T) {
	server(t)
	runConformance(t, s3lease.Options{})
}

// TestConformancePrefix runs the suite in a bucket of its own with a custom
// prefix.
func TestConformancePrefix(t *testing.T) {
	runConformance(t, s3lease.Options{Bucket: newBucket(t), Prefix: "elections/x-"})
}
