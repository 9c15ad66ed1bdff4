package s3lease_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	s3lease "github.com/fxelection/fxelection/modules/s3"
)

// plant writes body as election's object, as another program might, and
// returns its ETag.
func plant(t *testing.T, b *s3lease.Backend, election string, body []byte) string {
	t.Helper()
	info, err := newClient(t).PutObject(ctxT(t), b.Bucket(), b.Key(election), bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return info.ETag
}

// envelopeBody wraps a record in the object envelope.
func envelopeBody(released bool, record string) []byte {
	return []byte(fmt.Sprintf(`{"fxelection_value":1,"released":%t,"write":"planted","record":%s}`, released, record))
}

// objectETag returns the ETag of election's object.
func objectETag(t *testing.T, b *s3lease.Backend, election string) string {
	t.Helper()
	info, err := newClient(t).StatObject(ctxT(t), b.Bucket(), b.Key(election), minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return info.ETag
}

// TestHugeDurationNeverTakenOver (issue 9, point 4): a record whose
// duration_ms is near MaxInt64 used to wrap to a negative duration, so a
// candidate's tracker saw it as expired and took the live lease over at its
// second read. It is an invalid record: never taken over, however often and
// however long a candidate looks.
func TestHugeDurationNeverTakenOver(t *testing.T) {
	b, e := newBackend(t, s3lease.Options{}), electiontesting.Election(t)
	for _, ms := range []string{fmt.Sprint(int64(math.MaxInt64)), fmt.Sprint(int64(math.MaxInt64 - 1)), fmt.Sprint(int64(math.MaxInt64 / 1000)), "9223372036854"} {
		t.Run(ms, func(t *testing.T) {
			etag := plant(t, b, e, envelopeBody(false, electiontest.RawRecord(e, "x", "5", ms)))
			deadline := time.Now().Add(3 * time.Second)
			for n := 0; time.Now().Before(deadline) || n < 3; n++ {
				if l, err := b.Acquire(ctxT(t), req(e, "a", 100*time.Millisecond)); !errors.Is(err, backendkit.ErrInvalidRecord) {
					t.Fatalf("Acquire over a duration of %s ms (after %d tries): %+v, %v; want ErrInvalidRecord", ms, n, l, err)
				}
				if _, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrInvalidRecord) {
					t.Fatalf("Get: %v, want ErrInvalidRecord", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if got := objectETag(t, b, e); got != etag {
				t.Fatalf("the planted object was replaced (ETag %s, planted %s)", got, etag)
			}
		})
	}
}

// TestHostileRecords: every field a foreign program could get wrong gives
// ErrInvalidRecord from Acquire and Get, the object is never replaced, and
// no stored bytes reach the error unescaped.
func TestHostileRecords(t *testing.T) {
	b := newBackend(t, s3lease.Options{})
	for name, rec := range map[string]func(e string) string{
		"invalid UTF-8 holder": func(e string) string { return electiontest.RawRecord(e, "\xff\xfe\xfd", "3", "60000") },
		"control in holder":    func(e string) string { return electiontest.RawRecord(e, `a\u001b[31mb`, "3", "60000") },
		"newline in holder":    func(e string) string { return electiontest.RawRecord(e, `a\nb`, "3", "60000") },
		"empty holder":         func(e string) string { return electiontest.RawRecord(e, "", "3", "60000") },
		"zero term":            func(e string) string { return electiontest.RawRecord(e, "x", "0", "60000") },
		"term above MaxTerm":   func(e string) string { return electiontest.RawRecord(e, "x", "9223372036854775808", "60000") },
		"max uint64 term":      func(e string) string { return electiontest.RawRecord(e, "x", "18446744073709551615", "60000") },
		"negative term":        func(e string) string { return electiontest.RawRecord(e, "x", "-1", "60000") },
		"fractional term":      func(e string) string { return electiontest.RawRecord(e, "x", "1.5", "60000") },
		"zero duration":        func(e string) string { return electiontest.RawRecord(e, "x", "3", "0") },
		"negative duration":    func(e string) string { return electiontest.RawRecord(e, "x", "3", "-60000") },
		"other election":       func(string) string { return electiontest.RawRecord("someone-else", "x", "3", "60000") },
		"control in metadata": func(e string) string {
			return `{"fxelection":1,"election":"` + e + `","holder":"x","metadata":{"k":"\u0007"},"term":3,"duration_ms":60000}`
		},
		"invalid UTF-8 metadata": func(e string) string {
			return `{"fxelection":1,"election":"` + e + `","holder":"x","metadata":{"k":"` + "\xc3\x28" + `"},"term":3,"duration_ms":60000}`
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := electiontesting.Election(t)
			etag := plant(t, b, e, envelopeBody(false, rec(e)))
			for range 2 {
				electiontest.CheckRecordRefused(t, b, req(e, "a", 50*time.Millisecond))
				time.Sleep(60 * time.Millisecond)
			}
			if got := objectETag(t, b, e); got != etag {
				t.Fatal("the planted object was replaced")
			}
		})
	}
	// The same holder with invalid UTF-8 in a released object: not taken
	// either (a released record is decoded like any other).
	e := electiontesting.Election(t)
	plant(t, b, e, envelopeBody(true, electiontest.RawRecord(e, "\xff", "3", "60000")))
	if _, err := b.Acquire(ctxT(t), req(e, "a", time.Second)); !errors.Is(err, backendkit.ErrInvalidRecord) {
		t.Fatalf("Acquire over a released hostile record: %v", err)
	}
}

// TestTermExhausted (issue 9, point 5): at MaxTerm no new holder gets a term:
// Acquire fails with ErrTermExhausted and leaves the object alone, instead
// of writing a term that wraps or that no store can represent. The holder
// at MaxTerm itself keeps its term.
func TestTermExhausted(t *testing.T) {
	b, e := newBackend(t, s3lease.Options{}), electiontesting.Election(t)
	maxTerm := fmt.Sprint(uint64(backendkit.MaxTerm))
	etag := plant(t, b, e, envelopeBody(true, electiontest.RawRecord(e, "x", maxTerm, "60000")))
	if _, err := b.Acquire(ctxT(t), req(e, "a", time.Second)); !errors.Is(err, backendkit.ErrTermExhausted) {
		t.Fatalf("Acquire after term MaxTerm was released: %v, want ErrTermExhausted", err)
	}
	if got := objectETag(t, b, e); got != etag {
		t.Fatal("the object was rewritten")
	}
	// Held at MaxTerm: the holder re-acquires at the same term; a takeover
	// after expiry is refused like the release.
	plant(t, b, e, envelopeBody(false, electiontest.RawRecord(e, "x", maxTerm, "200")))
	lx, err := b.Acquire(ctxT(t), req(e, "x", 200*time.Millisecond))
	if err != nil || lx.Term != backendkit.MaxTerm {
		t.Fatalf("holder's re-acquire at MaxTerm: %+v, %v", lx, err)
	}
	c := newBackend(t, s3lease.Options{})
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := c.Acquire(ctxT(t), req(e, "c", time.Second))
		if errors.Is(err, backendkit.ErrTermExhausted) {
			break
		}
		if !errors.Is(err, backendkit.ErrLeaseHeld) || time.Now().After(deadline) {
			t.Fatalf("takeover at MaxTerm: %v, want ErrLeaseHeld then ErrTermExhausted", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func deleteObject(t *testing.T, b *s3lease.Backend, election string) {
	t.Helper()
	if err := newClient(t).RemoveObject(ctxT(t), b.Bucket(), b.Key(election), minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestErrorsRedacted (issue 9, secrets): with a wrong endpoint or wrong
// credentials, no error of the backend — nor what a real Elector passes to
// OnError, keeps in Status().LastError or logs — contains the secret key.
func TestErrorsRedacted(t *testing.T) {
	srv := server(t)
	const secretKey = "s3cret/Key+with=signs&sig=ab"
	for name, endpoint := range map[string]string{"unreachable": testserver.ClosedAddr(t), "wrong credentials": srv.Endpoint()} {
		t.Run(name, func(t *testing.T) {
			be, err := provision(t, map[string]any{
				"endpoint": endpoint, "bucket": bucket, "access_key": "AKIAwrong", "secret_key": secretKey,
				"secure": false, "region": "us-east-1",
			})
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, err error) {
				t.Helper()
				if err == nil {
					t.Fatalf("%s: no error", what)
				}
				if strings.Contains(err.Error(), secretKey) || strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("%s leaks the secret key: %q", what, err)
				}
				t.Logf("%s: %v", what, err)
			}
			e := electiontesting.Election(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err = be.Acquire(ctx, req(e, "a", time.Minute))
			check("Acquire", err)
			_, err = be.Get(ctx, e)
			check("Get", err)
			_, err = be.Renew(ctx, fxelection.Lease{Election: e, Holder: "a", Term: 1, Version: "x", Duration: time.Minute})
			check("Renew", err)
			check("Release", be.Release(ctx, fxelection.Lease{Election: e, Holder: "a", Term: 1, Version: "x", Duration: time.Minute}))
			electiontesting.CheckElectorErrors(t, be, e, check, func(log string) bool { return strings.Contains(log, "s3cret") })
		})
	}
}
