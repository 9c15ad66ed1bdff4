package ddblease_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/internal/electiontesting"
	"github.com/fxelection/fxelection/internal/testserver"
	ddblease "github.com/fxelection/fxelection/modules/dynamodb"
)

// envelope wraps a record in the value envelope.
func envelope(released bool, record string) string {
	return fmt.Sprintf(`{"fxelection_value":1,"released":%t,"write":"planted","record":%s}`, released, record)
}

// plant writes an item into the shared table and returns it.
func plant(t *testing.T, election, value, version string) map[string]types.AttributeValue {
	t.Helper()
	it := item(election, value, version)
	putItem(t, table, it)
	return it
}

// wantUnchanged fails unless election's item is still want.
func wantUnchanged(t *testing.T, election string, want map[string]types.AttributeValue) {
	t.Helper()
	got := getItem(t, table, election)
	for _, k := range []string{ddblease.ValueAttribute, ddblease.VersionAttribute} {
		if fmt.Sprint(got[k]) != fmt.Sprint(want[k]) {
			t.Fatalf("the planted item was replaced (%s)", k)
		}
	}
}

// TestHugeDurationNeverTakenOver: a record whose duration_ms would wrap to
// a negative duration is an invalid record: never taken over, however
// often and however long a candidate looks.
func TestHugeDurationNeverTakenOver(t *testing.T) {
	b, e := newBackend(t, ddblease.Options{}), electiontesting.Election(t)
	for _, ms := range []string{fmt.Sprint(int64(math.MaxInt64)), fmt.Sprint(int64(math.MaxInt64 / 1000)), "9223372036854"} {
		t.Run(ms, func(t *testing.T) {
			it := plant(t, e, envelope(false, electiontest.RawRecord(e, "x", "5", ms)), "3")
			deadline := time.Now().Add(2 * time.Second)
			for n := 0; time.Now().Before(deadline) || n < 3; n++ {
				if l, err := b.Acquire(ctxT(t), req(e, "a", 100*time.Millisecond)); !errors.Is(err, backendkit.ErrInvalidRecord) {
					t.Fatalf("Acquire over a duration of %s ms (after %d tries): %+v, %v; want ErrInvalidRecord", ms, n, l, err)
				}
				if _, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrInvalidRecord) {
					t.Fatalf("Get: %v, want ErrInvalidRecord", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			wantUnchanged(t, e, it)
		})
	}
}

// TestHostileItems: every field a foreign program could get wrong — in the
// record, the envelope or the item's attributes — gives ErrInvalidRecord
// from Acquire and Get, the item is never replaced, and no stored bytes
// reach the error unescaped.
func TestHostileItems(t *testing.T) {
	b := newBackend(t, ddblease.Options{})
	good := func(e string) string { return envelope(false, electiontest.RawRecord(e, "x", "3", "60000")) }
	for name, it := range map[string]func(e string) map[string]types.AttributeValue{
		// No invalid UTF-8 case: DynamoDB strings are UTF-8 (the SDK's
		// JSON turns invalid bytes into U+FFFD on the way), so it cannot
		// be planted through the API; the fuzz target covers raw bytes.
		"control in holder": func(e string) map[string]types.AttributeValue {
			return item(e, envelope(false, electiontest.RawRecord(e, `a\u001b[31mb`, "3", "60000")), "1")
		},
		"zero term": func(e string) map[string]types.AttributeValue {
			return item(e, envelope(false, electiontest.RawRecord(e, "x", "0", "60000")), "1")
		},
		"term above MaxTerm": func(e string) map[string]types.AttributeValue {
			return item(e, envelope(false, electiontest.RawRecord(e, "x", "9223372036854775808", "60000")), "1")
		},
		"negative duration": func(e string) map[string]types.AttributeValue {
			return item(e, envelope(false, electiontest.RawRecord(e, "x", "3", "-60000")), "1")
		},
		"other election": func(e string) map[string]types.AttributeValue {
			return item(e, envelope(false, electiontest.RawRecord("someone-else", "x", "3", "60000")), "1")
		},
		"not JSON": func(e string) map[string]types.AttributeValue { return item(e, "\x1b[31mnot json", "1") },
		"huge version": func(e string) map[string]types.AttributeValue {
			return item(e, good(e), "99999999999999999999999999999999999999")
		},
		"fractional version": func(e string) map[string]types.AttributeValue { return item(e, good(e), "1.5") },
		"negative version":   func(e string) map[string]types.AttributeValue { return item(e, good(e), "-7") },
		"zero version":       func(e string) map[string]types.AttributeValue { return item(e, good(e), "0") },
		"no version": func(e string) map[string]types.AttributeValue {
			it := item(e, good(e), "1")
			delete(it, ddblease.VersionAttribute)
			return it
		},
		"string version": func(e string) map[string]types.AttributeValue {
			it := item(e, good(e), "1")
			it[ddblease.VersionAttribute] = &types.AttributeValueMemberS{Value: "1"}
			return it
		},
		"binary value": func(e string) map[string]types.AttributeValue {
			it := item(e, good(e), "1")
			it[ddblease.ValueAttribute] = &types.AttributeValueMemberB{Value: []byte(good(e))}
			return it
		},
		"no value": func(e string) map[string]types.AttributeValue {
			it := item(e, good(e), "1")
			delete(it, ddblease.ValueAttribute)
			return it
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := electiontesting.Election(t)
			planted := it(e)
			putItem(t, table, planted)
			for range 2 {
				electiontest.CheckRecordRefused(t, b, req(e, "a", 50*time.Millisecond))
				time.Sleep(60 * time.Millisecond)
			}
			wantUnchanged(t, e, planted)
		})
	}
}

// TestExtraAttributesIgnored: attributes an operator adds (a TTL
// attribute, a note) do not make an item invalid, and the next write
// drops them.
func TestExtraAttributesIgnored(t *testing.T) {
	a, e := newBackend(t, ddblease.Options{}), electiontesting.Election(t)
	la, err := a.Acquire(ctxT(t), req(e, "a", time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	it := getItem(t, table, e)
	it["expires"] = &types.AttributeValueMemberN{Value: "1"}
	putItem(t, table, it)
	if got, err := a.Get(ctxT(t), e); err != nil || got.Term != la.Term {
		t.Fatalf("Get with an extra attribute = %+v, %v", got, err)
	}
	if _, err := a.Renew(ctxT(t), la); err != nil {
		t.Fatalf("Renew with an extra attribute: %v", err)
	}
}

// TestTermExhausted: at MaxTerm no new holder gets a term: Acquire fails
// with ErrTermExhausted and leaves the item alone. The holder at MaxTerm
// itself keeps its term.
func TestTermExhausted(t *testing.T) {
	b, e := newBackend(t, ddblease.Options{}), electiontesting.Election(t)
	maxTerm := fmt.Sprint(uint64(backendkit.MaxTerm))
	it := plant(t, e, envelope(true, electiontest.RawRecord(e, "x", maxTerm, "60000")), "5")
	if _, err := b.Acquire(ctxT(t), req(e, "a", time.Second)); !errors.Is(err, backendkit.ErrTermExhausted) {
		t.Fatalf("Acquire after term MaxTerm was released: %v, want ErrTermExhausted", err)
	}
	wantUnchanged(t, e, it)
	plant(t, e, envelope(false, electiontest.RawRecord(e, "x", maxTerm, "200")), "6")
	lx, err := b.Acquire(ctxT(t), req(e, "x", 200*time.Millisecond))
	if err != nil || lx.Term != backendkit.MaxTerm {
		t.Fatalf("holder's re-acquire at MaxTerm: %+v, %v", lx, err)
	}
}

// TestErrorsRedacted: with an unreachable endpoint or a missing table, no
// error of a config module's backend — nor what a real Elector passes to
// OnError, keeps in Status().LastError or logs — contains the secret
// access key or the session token.
func TestErrorsRedacted(t *testing.T) {
	const secretKey = "s3cret/Key+with=signs&sig=ab"
	const token = "t0ken/Secret+Session=="
	for name, endpoint := range map[string]string{"unreachable": "http://" + testserver.ClosedAddr(t), "missing table": server(t).Endpoint()} {
		t.Run(name, func(t *testing.T) {
			be, err := provision(t, map[string]any{
				"endpoint": endpoint, "region": "us-east-1", "table": newTable(), "skip_create_table": true,
				"access_key_id": "AKIDTEST", "secret_access_key": secretKey, "session_token": token,
			})
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, err error) {
				t.Helper()
				if err == nil {
					t.Fatalf("%s: no error", what)
				}
				if s := err.Error(); strings.Contains(s, "s3cret") || strings.Contains(s, "t0ken") {
					t.Fatalf("%s leaks a secret: %q", what, err)
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
			lease := fxelection.Lease{Election: e, Holder: "a", Term: 1, Version: "1", Duration: time.Minute}
			_, err = be.Renew(ctx, lease)
			check("Renew", err)
			check("Release", be.Release(ctx, lease))
			electiontesting.CheckElectorErrors(t, be, e, check, func(log string) bool {
				return strings.Contains(log, "s3cret") || strings.Contains(log, "t0ken")
			})
		})
	}
}
