package ddblease

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/modkit"
	"github.com/fxelection/fxelection/internal/moduletest"
)

// TestModuleSecretsRedacted: a config module's Backend knows the secret
// access key and the session token, and removes both from every error it
// returns (an SDK error that quoted them, say), still matching the
// sentinels.
func TestModuleSecretsRedacted(t *testing.T) {
	const key, token = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "FwoGZXIvYXdzEBYaDHxEXAMPLETOKEN"
	m := &ConfigModule{Region: "us-east-1", Table: "leases", AccessKeyID: "AKIDEXAMPLE",
		SecretAccessKey: modkit.NewSecret(key), SessionToken: modkit.NewSecret(token), SkipCreateTable: true}
	be, cleanup, err := moduletest.Provision(t, context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cleanup() }()
	b := be.(*Backend)
	err = b.redact(errors.Join(backendkit.ErrLeaseLost, errors.New("server said: key "+key+" token "+token)))
	if s := err.Error(); strings.Contains(s, key) || strings.Contains(s, token) {
		t.Fatalf("not redacted: %q", s)
	}
	if !errors.Is(err, backendkit.ErrLeaseLost) {
		t.Fatalf("redacted error %v no longer matches ErrLeaseLost", err)
	}
}
