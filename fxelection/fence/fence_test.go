package fence_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/fence"
)

func TestFromContext(t *testing.T) {
	ctx := context.Background()
	if _, err := fence.FromContext(ctx); !errors.Is(err, fence.ErrNoToken) {
		t.Fatalf("bare context: %v, want ErrNoToken", err)
	}
	lctx := backendkit.ContextWithLease(ctx, fxelection.Lease{Election: "billing", Holder: "a", Term: 7})
	tok, err := fence.FromContext(lctx)
	if err != nil || tok != (fence.Token{Election: "billing", Term: 7}) {
		t.Fatalf("leader context: %v %v", tok, err)
	}
	over := fence.WithToken(lctx, fence.Token{Election: "billing", Term: 9})
	if tok, err := fence.FromContext(over); err != nil || tok.Term != 9 {
		t.Fatalf("WithToken inside a leader context should take precedence: %v %v", tok, err)
	}
	// The innermost token wins: a leader (or lock) context made inside a
	// WithToken context fences with its own lease.
	inner := backendkit.ContextWithLease(over, fxelection.Lease{Election: "billing", Holder: "b", Term: 3})
	if tok, err := fence.FromContext(inner); err != nil || tok.Term != 3 {
		t.Fatalf("a leader context inside WithToken should take precedence: %v %v", tok, err)
	}
	if l, ok := fxelection.LeaseFromContext(over); !ok || l.Term != 7 || l.Holder != "a" {
		t.Fatalf("WithToken hides the lease: %+v %v", l, ok)
	}
}

func TestValidate(t *testing.T) {
	for name, tok := range map[string]fence.Token{
		"zero term":     {Election: "e", Term: 0},
		"term too big":  {Election: "e", Term: backendkit.MaxTerm + 1},
		"max uint":      {Election: "e", Term: ^uint64(0)},
		"empty":         {Election: "", Term: 1},
		"control":       {Election: "a\x1b[31m", Term: 1},
		"invalid utf-8": {Election: "a\xff", Term: 1},
		"too long":      {Election: strings.Repeat("x", backendkit.MaxNameLen+1), Term: 1},
	} {
		err := tok.Validate()
		if !errors.Is(err, fence.ErrInvalidToken) {
			t.Errorf("%s: %v, want ErrInvalidToken", name, err)
		}
		if _, err := fence.FromContext(fence.WithToken(context.Background(), tok)); !errors.Is(err, fence.ErrInvalidToken) {
			t.Errorf("%s via context: %v", name, err)
		}
	}
	if err := (fence.Token{Election: "e", Term: backendkit.MaxTerm}).Validate(); err != nil {
		t.Errorf("MaxTerm: %v", err)
	}
}

func TestStaleTermError(t *testing.T) {
	var err error = &fence.StaleTermError{Election: "e", Term: 3, Highest: 5}
	if !errors.Is(err, fence.ErrStaleTerm) {
		t.Fatal("StaleTermError must match ErrStaleTerm")
	}
	if !strings.Contains(err.Error(), "highest seen 5") {
		t.Fatal(err)
	}
	var ste *fence.StaleTermError
	if !errors.As(backendkit.RedactError(err), &ste) || ste.Highest != 5 {
		t.Fatal("redacted error must keep the type")
	}
}

// FuzzTokenValidate: an accepted token is always in range and printable,
// and validation never panics.
func FuzzTokenValidate(f *testing.F) {
	f.Add("billing", uint64(1))
	f.Add("", uint64(0))
	f.Add("a\x00b", uint64(backendkit.MaxTerm))
	f.Add("\xff", ^uint64(0))
	f.Fuzz(func(t *testing.T, election string, term uint64) {
		tok := fence.Token{Election: election, Term: term}
		if err := tok.Validate(); err != nil {
			if !errors.Is(err, fence.ErrInvalidToken) {
				t.Fatalf("error %v does not match ErrInvalidToken", err)
			}
			return
		}
		if term == 0 || term > backendkit.MaxTerm || election == "" || len(election) > backendkit.MaxNameLen {
			t.Fatalf("accepted %q %d", election, term)
		}
		if err := (fxelection.Lease{Election: election, Holder: "h", Term: term, Duration: 1}).Validate(); err != nil {
			t.Fatalf("accepted %q %d that the core rejects: %v", election, term, err)
		}
	})
}
