package bloblease_test

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	bloblease "github.com/fxelection/fxelection/modules/blob"
)

// TestLargestMetadata: on Azurite, a candidate whose Config (accepted by
// Config.Validate) carries the largest worst-case Metadata — all '<', all
// multibyte, all '"' and '\', thousands of tiny entries — takes and renews
// the lease, and a follower reads that Metadata back unchanged, from Get
// and from the lease held against it. (Before, 4,095 '<' came back from
// Azurite as HTTP 431: the record was six times its metadata.)
func TestLargestMetadata(t *testing.T) {
	leader, follower := newBackend(t, bloblease.Options{}), newBackend(t, bloblease.Options{})
	for name, md := range bloblease.WorstCaseMetadata() {
		t.Run(strings.NewReplacer(`"`, "quote", `\`, "backslash").Replace(name), func(t *testing.T) {
			e := electiontesting.Election(t)
			id := strings.Repeat(`"\`, backendkit.MaxIdentityLen/2)
			cfg := fxelection.Config{Name: e, Identity: id, Metadata: md}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("Config does not accept the metadata: %v", err)
			}
			r := backendkit.AcquireRequest{Election: e, Identity: id, Incarnation: "inc-1", Metadata: md, Duration: 15 * time.Second}
			l, err := leader.Acquire(ctxT(t), r)
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			if l, err = leader.Renew(ctxT(t), l); err != nil {
				t.Fatalf("Renew: %v", err)
			}
			// Azurite takes up to 16 KiB of headers; Azure only 8 KiB of
			// metadata, names and values together.
			props, err := newClient(t).ServiceClient().NewContainerClient(container).NewBlobClient(leader.BlobName(e)).GetProperties(ctxT(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			size := 0
			for k, v := range props.Metadata {
				size += len(k) + len(*v)
			}
			if size > 8<<10 {
				t.Errorf("the blob's metadata takes %d bytes, more than Azure's 8 KiB", size)
			}
			got, err := follower.Get(ctxT(t), e)
			if err != nil || got.Holder != id || got.Term != l.Term || !maps.Equal(got.Metadata, md) {
				t.Fatalf("Get: holder %q term %d, %d metadata entries (want %d), %v", got.Holder, got.Term, len(got.Metadata), len(md), err)
			}
			_, err = follower.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "follower", Duration: 15 * time.Second})
			var held *backendkit.HeldError
			if !errors.As(err, &held) || held.Holder.Holder != id || !maps.Equal(held.Holder.Metadata, md) {
				t.Fatalf("follower's Acquire: %v", err)
			}
			if err := leader.Release(ctxT(t), l); err != nil {
				t.Fatalf("Release: %v", err)
			}
		})
	}
}
