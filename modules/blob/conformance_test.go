package bloblease_test

import (
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/testserver"
	bloblease "github.com/fxelection/fxelection/modules/blob"
)

// foreignLeaseID is a lease id no fxelection identity maps to (it is not a
// version-5 UUID).
const foreignLeaseID = "0badf00d-0000-4000-8000-000000000001"

// putGarbage leases the election's blob with a foreign lease id for ttl and
// writes undecodable metadata under it, as a foreign program might.
func putGarbage(opts bloblease.Options) func(*testing.T, string, time.Duration) {
	return func(t *testing.T, election string, ttl time.Duration) {
		b := newBackend(t, opts)
		bb := newClient(t).ServiceClient().NewContainerClient(b.Container()).NewBlockBlobClient(b.BlobName(election))
		if _, err := bb.UploadBuffer(ctxT(t), []byte("not a lease"), nil); err != nil {
			t.Fatal(err)
		}
		id := foreignLeaseID
		lc, err := lease.NewBlobClient(bb, &lease.BlobClientOptions{LeaseID: &id})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lc.AcquireLease(ctxT(t), int32(ttl/time.Second), nil); err != nil {
			t.Fatal(err)
		}
		junk := "%%% not base64 {"
		_, err = bb.SetMetadata(ctxT(t), map[string]*string{bloblease.MetadataKey: &junk}, &blob.SetMetadataOptions{
			AccessConditions: &blob.AccessConditions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: &id}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestConformance(t *testing.T) {
	server(t)
	opts := bloblease.Options{}
	electiontest.RunBackendTests(t, func(t *testing.T) fxelection.Backend {
		return newBackend(t, opts)
	}, electiontest.Options{
		TTL:        15 * time.Second,
		PutGarbage: putGarbage(opts),
		DeleteRecord: func(t *testing.T, election string) {
			deleteBlob(t, newBackend(t, opts), election)
		},
		Timing:     electiontest.Timing{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second},
		Candidates: 50,
		StoreDown:  storeDown,
		// Get and HeldError report the lease id alone; Acquire and Renew
		// add the ETag (see the package doc on Version).
		Linearizable: electiontest.LinearizableOptions{PartialReadVersions: true},
	})
}

// storeDown returns a backend on an Azurite of its own for the suite's
// StoreDown case. It is not restarted: what Azurite keeps of a lease
// across a restart is not checked.
func storeDown(t *testing.T) electiontest.DownStore {
	srv := testserver.NewAzurite(t, testserver.AzuriteOptions{})
	c := newClientOn(t, srv)
	if _, err := c.CreateContainer(ctxT(t), "faults", nil); err != nil {
		t.Fatal(err)
	}
	b, err := bloblease.New(c, bloblease.Options{Container: "faults"})
	if err != nil {
		t.Fatal(err)
	}
	return electiontest.DownStore{Backend: b, Kill: srv.Kill}
}
