package bloblease_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/testserver"
	bloblease "github.com/fxelection/fxelection/modules/blob"
)

// hookTransport runs before(req) ahead of every request and after(req)
// once each response arrived.
type hookTransport struct {
	rt            http.RoundTripper
	before, after func(*http.Request)
}

func (h hookTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h.before(r)
	resp, err := h.rt.RoundTrip(r)
	if err == nil {
		h.after(r)
	}
	return resp, err
}

// TestNewIncarnationRacingRelease: a new incarnation of the holder's
// identity (or the holder's own incarnation) reads the blob while the old leadership is live, and the old
// leadership is released right after that read. Before each of the new
// incarnation's later requests, another client's Get must not report the
// released leadership: it must see the lease free or the new leadership.
// (Acquiring the shared Azure lease id first would make the released lease
// active again under its old record until the record was rewritten.)
func TestNewIncarnationRacingRelease(t *testing.T) {
	t.Run("NewIncarnation", func(t *testing.T) { racingRelease(t, "i1") })
	// The same leadership's Acquire (a retry whose reply was lost) racing
	// its own Release: after the release it is a new leadership too.
	t.Run("SameIncarnation", func(t *testing.T) { racingRelease(t, "i0") })
}

func racingRelease(t *testing.T, incarnation string) {
	srv := server(t)
	e := "interleave-" + backendkit.NewIncarnation()
	old := newBackend(t, bloblease.Options{})
	observer := newBackend(t, bloblease.Options{})
	first, err := old.Acquire(ctxT(t), reqInc(e, "a", "i0", 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}

	var (
		mu       sync.Mutex
		armed    bool // the first read happened and the release ran
		released bool
		seen     []fxelection.Lease
	)
	look := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if l, err := observer.Get(ctx, e); err == nil {
			seen = append(seen, l)
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	hooks := hookTransport{rt: tr,
		before: func(*http.Request) {
			mu.Lock()
			defer mu.Unlock()
			if armed {
				look()
			}
		},
		after: func(r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			if r.Method == http.MethodHead && !released {
				released = true
				if err := old.Release(ctxT(t), first); err != nil {
					t.Errorf("Release: %v", err)
				}
				armed = true
			}
		},
	}
	next := hookedBackend(t, srv, hooks)
	l, err := next.Acquire(ctxT(t), reqInc(e, "a", incarnation, 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if l.Term <= first.Term {
		t.Fatalf("Acquire after the release got term %d, the released leadership had %d", l.Term, first.Term)
	}
	mu.Lock()
	defer mu.Unlock()
	if !released {
		t.Fatal("the hook never ran: Acquire made no HEAD request")
	}
	for _, s := range seen {
		if s.Term == first.Term {
			t.Errorf("a Get during the new incarnation's Acquire reported the released leadership (%s, term %d)", s.Holder, s.Term)
		}
	}
	t.Logf("%d Gets during Acquire saw a holder", len(seen))
}

// TestRenewAfterExpiryRevivesNothing: Azure renews an expired lease only
// while the blob was neither modified nor leased again since it expired. A
// leader whose renewal comes after its lease expired, just after another
// candidate wrote its record and before that candidate leased the blob,
// therefore gets ErrLeaseLost, and the candidate's Acquire goes through: the
// blob is never left leased under a record that names someone else (which
// Acquire and Get would report as an unknown holder until the lease ended).
func TestRenewAfterExpiryRevivesNothing(t *testing.T) {
	t.Parallel()
	srv := server(t)
	e := "revive-" + backendkit.NewIncarnation()
	old := newBackend(t, bloblease.Options{})
	first, err := old.Acquire(ctxT(t), reqInc(e, "a", "i0", 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(16 * time.Second) // the lease expires (Azure's shortest is 15 s)

	var (
		mu       sync.Mutex
		renewed  bool
		renewErr error
	)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	hooks := hookTransport{rt: tr,
		before: func(r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			if !renewed && r.URL.Query().Get("comp") == "lease" && leaseAction(r) == "acquire" {
				renewed = true // the candidate's record is written; its lease is next
				_, renewErr = old.Renew(ctxT(t), first)
			}
		},
		after: func(*http.Request) {},
	}
	next := hookedBackend(t, srv, hooks)
	l, err := next.Acquire(ctxT(t), reqInc(e, "b", "i1", 15*time.Second))
	mu.Lock()
	defer mu.Unlock()
	if !renewed {
		t.Fatalf("the hook never ran: Acquire sent no lease acquisition (%+v, %v)", l, err)
	}
	if !errors.Is(renewErr, backendkit.ErrLeaseLost) {
		t.Errorf("the late Renew: %v, want ErrLeaseLost", renewErr)
	}
	if err != nil || l.Holder != "b" || l.Term <= first.Term {
		t.Fatalf("the candidate's Acquire: %+v, %v; want b leading with a term above %d", l, err, first.Term)
	}
	if got, err := old.Get(ctxT(t), e); err != nil || got.Holder != "b" {
		t.Fatalf("Get: %+v, %v; want b", got, err)
	}
}

// leaseAction returns r's x-ms-lease-action header (the SDK sets it in
// lower case, which Header.Get's canonical form does not find).
func leaseAction(r *http.Request) string {
	for k, v := range r.Header {
		if strings.EqualFold(k, "x-ms-lease-action") && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// hookedBackend returns a Backend on srv whose requests pass through hooks,
// with the SDK's retries off so that every request is seen once.
func hookedBackend(t *testing.T, srv *testserver.Azurite, hooks hookTransport) *bloblease.Backend {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(srv.AccountName(), srv.AccountKey())
	if err != nil {
		t.Fatal(err)
	}
	c, err := azblob.NewClientWithSharedKeyCredential(srv.ServiceURL(), cred, &azblob.ClientOptions{
		ClientOptions: azcore.ClientOptions{Transport: &http.Client{Transport: hooks}, Retry: policy.RetryOptions{MaxRetries: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := bloblease.New(c, bloblease.Options{Container: container})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
