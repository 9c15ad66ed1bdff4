package bloblease_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	bloblease "github.com/fxelection/fxelection/modules/blob"
)

// deleteBlob breaks any lease on election's blob and deletes it, as an
// operator cleaning the container might.
func deleteBlob(t *testing.T, b *bloblease.Backend, election string) {
	t.Helper()
	if err := breakLease(t, b, election); err != nil &&
		!bloberror.HasCode(err, bloberror.LeaseNotPresentWithLeaseOperation, bloberror.BlobNotFound) {
		t.Fatalf("break lease: %v", err)
	}
	bc := newClient(t).ServiceClient().NewContainerClient(b.Container()).NewBlobClient(b.BlobName(election))
	if _, err := bc.Delete(ctxT(t), nil); err != nil && !bloberror.HasCode(err, bloberror.BlobNotFound) {
		t.Fatalf("delete blob: %v", err)
	}
}

// plantMeta writes value as election's record metadata, creating the blob
// if needed; with leaseID it first takes a 60 s lease with that id and
// writes under it, as another program might.
func plantMeta(t *testing.T, b *bloblease.Backend, election, value, leaseID string) {
	t.Helper()
	bb := newClient(t).ServiceClient().NewContainerClient(b.Container()).NewBlockBlobClient(b.BlobName(election))
	if _, err := bb.UploadBuffer(ctxT(t), nil, nil); err != nil {
		t.Fatal(err)
	}
	opts := &blob.SetMetadataOptions{}
	if leaseID != "" {
		lc, err := lease.NewBlobClient(bb, &lease.BlobClientOptions{LeaseID: &leaseID})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lc.AcquireLease(ctxT(t), 60, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = lc.ReleaseLease(context.Background(), nil) })
		opts.AccessConditions = &blob.AccessConditions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: &leaseID}}
	}
	if _, err := bb.SetMetadata(ctxT(t), map[string]*string{bloblease.MetadataKey: &value}, opts); err != nil {
		t.Fatal(err)
	}
}

// metaOf returns election's record metadata as stored.
func metaOf(t *testing.T, b *bloblease.Backend, election string) string {
	t.Helper()
	p, err := newClient(t).ServiceClient().NewContainerClient(b.Container()).NewBlobClient(b.BlobName(election)).GetProperties(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range p.Metadata {
		if strings.EqualFold(k, bloblease.MetadataKey) && v != nil {
			return *v
		}
	}
	return ""
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestHostileRecords (issue 9, points 1 and 4): a leased blob whose record
// has a hostile field gives ErrInvalidRecord from Acquire and Get (never a
// holder with invalid text, never a takeover while Azure keeps the lease),
// and once the lease ends a candidate takes the blob over with a term above
// every earlier one, not at term 1.
func TestHostileRecords(t *testing.T) {
	b := newBackend(t, bloblease.Options{})
	for name, value := range map[string]func(e string) string{
		"invalid UTF-8 holder": func(e string) string { return b64(electiontest.RawRecord(e, "\xff\xfe\xfd", "3", "60000")) },
		"control in holder":    func(e string) string { return b64(electiontest.RawRecord(e, `a\u001b[31mb`, "3", "60000")) },
		"zero term":            func(e string) string { return b64(electiontest.RawRecord(e, "x", "0", "60000")) },
		"term above MaxTerm":   func(e string) string { return b64(electiontest.RawRecord(e, "x", "9223372036854775808", "60000")) },
		"max uint64 term":      func(e string) string { return b64(electiontest.RawRecord(e, "x", "18446744073709551615", "60000")) },
		"huge duration": func(e string) string {
			return b64(electiontest.RawRecord(e, "x", "3", fmt.Sprint(int64(math.MaxInt64))))
		},
		"negative duration": func(e string) string { return b64(electiontest.RawRecord(e, "x", "3", "-1")) },
		"other election":    func(string) string { return b64(electiontest.RawRecord("someone-else", "x", "3", "60000")) },
		"not base64":        func(string) string { return "%%% not base64" },
		"control in metadata": func(e string) string {
			return b64(`{"fxelection":1,"election":"` + e + `","holder":"x","metadata":{"k":"\u0007"},"term":3,"duration_ms":60000}`)
		},
		"acquired_at year 10000": func(e string) string {
			return b64(`{"fxelection":1,"election":"` + e + `","holder":"x","term":3,"duration_ms":60000,"acquired_at":"9999-12-31T23:59:59-01:00"}`)
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := electiontesting.Election(t)
			first, err := b.Acquire(ctxT(t), req(e, "a", 15*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Release(ctxT(t), first); err != nil {
				t.Fatal(err)
			}
			// The planted record's holder is the lease holder, as far as
			// lease ids go: only the record is hostile.
			v := value(e)
			leaseHolder := "x"
			if name == "invalid UTF-8 holder" {
				// What encoding/json makes of the bytes: the lease id
				// matches the holder a lax decoder would report.
				leaseHolder = "\ufffd\ufffd\ufffd"
			}
			plantMeta(t, b, e, v, bloblease.LeaseID(leaseHolder))
			for range 2 {
				electiontest.CheckRecordRefused(t, b, req(e, "a", 15*time.Second))
			}
			if got := metaOf(t, b, e); got != v {
				t.Fatal("the planted record was replaced while leased")
			}
			// The foreign lease ends: the election goes on above every
			// earlier term.
			deleteLease(t, b, e)
			l, err := b.Acquire(ctxT(t), req(e, "b", 15*time.Second))
			if err != nil || l.Term <= first.Term {
				t.Fatalf("Acquire after the hostile lease ended: %+v, %v; want term > %d", l, err, first.Term)
			}
		})
	}
}

// deleteLease breaks election's lease at once.
func deleteLease(t *testing.T, b *bloblease.Backend, election string) {
	t.Helper()
	if err := breakLease(t, b, election); err != nil {
		t.Fatal(err)
	}
}

// breakLease breaks election's lease at once.
func breakLease(t *testing.T, b *bloblease.Backend, election string) error {
	t.Helper()
	bc := newClient(t).ServiceClient().NewContainerClient(b.Container()).NewBlobClient(b.BlobName(election))
	lc, err := lease.NewBlobClient(bc, nil)
	if err != nil {
		t.Fatal(err)
	}
	zero := int32(0)
	_, err = lc.BreakLease(ctxT(t), &lease.BlobBreakOptions{BreakPeriod: &zero})
	return err
}

// TestTermExhausted (issue 9, point 5): after a record at MaxTerm no new
// holder gets a term: Acquire fails with ErrTermExhausted and leaves the
// blob alone instead of wrapping.
func TestTermExhausted(t *testing.T) {
	b, e := newBackend(t, bloblease.Options{}), electiontesting.Election(t)
	v := b64(electiontest.RawRecord(e, "x", fmt.Sprint(uint64(backendkit.MaxTerm)), "15000"))
	plantMeta(t, b, e, v, "")
	for _, id := range []string{"a", "x"} {
		if _, err := b.Acquire(ctxT(t), req(e, id, 15*time.Second)); !errors.Is(err, backendkit.ErrTermExhausted) {
			t.Fatalf("Acquire by %s after term MaxTerm: %v, want ErrTermExhausted", id, err)
		}
	}
	if got := metaOf(t, b, e); got != v {
		t.Fatal("the record was rewritten")
	}
	if _, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrNoLease) {
		t.Fatalf("Get: %v, want ErrNoLease", err)
	}
}

// accountSAS returns an account SAS token for the test server, valid for
// an hour, allowing everything the backend does.
func accountSAS(t *testing.T) (token, sig string) {
	t.Helper()
	srv := server(t)
	cred, err := azblob.NewSharedKeyCredential(srv.AccountName(), srv.AccountKey())
	if err != nil {
		t.Fatal(err)
	}
	perms := sas.AccountPermissions{Read: true, Write: true, Delete: true, List: true, Add: true, Create: true, Update: true}
	types := sas.AccountResourceTypes{Service: true, Container: true, Object: true}
	qp, err := sas.AccountSignatureValues{
		Protocol:      sas.ProtocolHTTPSandHTTP,
		StartTime:     time.Now().Add(-time.Hour).UTC(),
		ExpiryTime:    time.Now().Add(time.Hour).UTC(),
		Permissions:   perms.String(),
		ResourceTypes: types.String(),
	}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	return qp.Encode(), qp.Signature()
}

// TestSASNotLeaked (issue 9, point 2): with a connection string that uses
// SharedAccessSignature=…sig=…, the SDK's network errors carry the request
// URL with its query; no error from the backend, nor what a real Elector
// passes to OnError, keeps in Status().LastError or logs, contains the
// signature.
func TestSASNotLeaked(t *testing.T) {
	srv := server(t)
	token, sig := accountSAS(t)
	if sig == "" || !strings.Contains(token, "sig=") {
		t.Fatalf("SAS token %q has no signature", token)
	}
	leaks := func(s string) bool {
		for _, f := range []string{sig, url.QueryEscape(sig), url.PathEscape(sig)} {
			if strings.Contains(s, f) {
				return true
			}
		}
		// Any sig= left must be a redacted one.
		return strings.Contains(strings.ReplaceAll(s, "sig="+backendkit.Redacted, ""), "sig=")
	}
	check := func(t *testing.T, what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		if leaks(err.Error()) {
			t.Fatalf("%s leaks the SAS signature: %q", what, err)
		}
		t.Logf("%s: %v", what, err)
	}
	for name, endpoint := range map[string]string{
		"unreachable": "http://" + testserver.ClosedAddr(t) + "/" + srv.AccountName(),
		"live":        srv.ServiceURL(),
	} {
		t.Run(name, func(t *testing.T) {
			cs := "BlobEndpoint=" + endpoint + ";SharedAccessSignature=" + token
			be, err := provision(t, map[string]any{"connection_string": cs, "container": "no-such-container"})
			if err != nil {
				t.Fatal(err)
			}
			e := electiontesting.Election(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err = be.Acquire(ctx, req(e, "a", 15*time.Second))
			check(t, "Acquire", err)
			_, err = be.Get(ctx, e)
			check(t, "Get", err)
			_, err = be.Renew(ctx, fxelection.Lease{Election: e, Holder: "a", Term: 1, Version: bloblease.LeaseID("a"), Duration: 15 * time.Second})
			check(t, "Renew", err)
			l := fxelection.Lease{Election: e, Holder: "a", Term: 1, Version: bloblease.LeaseID("a"), Duration: 15 * time.Second}
			if err := be.Release(ctx, l); err != nil {
				check(t, "Release", err)
			}
			electiontesting.CheckElectorErrors(t, be, e, func(what string, err error) { check(t, what, err) }, leaks)
		})
	}
	// The SAS works against the live server: an election runs on it.
	t.Run("live election", func(t *testing.T) {
		cs := "BlobEndpoint=" + srv.ServiceURL() + ";SharedAccessSignature=" + token
		be, err := provision(t, map[string]any{"connection_string": cs, "container": container})
		if err != nil {
			t.Fatal(err)
		}
		e := electiontesting.Election(t)
		l, err := be.Acquire(ctxT(t), req(e, "a", 15*time.Second))
		if err != nil {
			t.Fatalf("Acquire with a SAS: %v", err)
		}
		if _, err := be.Renew(ctxT(t), l); err != nil {
			t.Fatalf("Renew with a SAS: %v", err)
		}
		if err := be.Release(ctxT(t), l); err != nil {
			t.Fatalf("Release with a SAS: %v", err)
		}
	})
}
