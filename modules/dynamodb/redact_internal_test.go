package ddblease

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/modkit"
	"github.com/fxelection/fxelection/internal/moduletest"
)

// TestModuleSecretsRedacted: a config module's Backend knows the secret
// access key and the session token, and removes both from every error it
// returns (here a service error that quotes them), which stays a store
// failure.
func TestModuleSecretsRedacted(t *testing.T) {
	const key, token = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "FwoGZXIvYXdzEBYaDHxEXAMPLETOKEN"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ValidationException","message":"server said: key ` + key + ` token ` + token + `"}`))
	}))
	defer srv.Close()
	m := &ConfigModule{Region: "us-east-1", Endpoint: srv.URL, Table: "leases", AccessKeyID: "AKIDEXAMPLE",
		SecretAccessKey: modkit.NewSecret(key), SessionToken: modkit.NewSecret(token), SkipCreateTable: true}
	be, cleanup, err := moduletest.Provision(t, context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cleanup() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, getErr := be.Get(ctx, "demo")
	_, renewErr := be.Renew(ctx, fxelection.Lease{Election: "demo", Holder: "a", Term: 1, Duration: time.Second, Version: "1"})
	for op, err := range map[string]error{"Get": getErr, "Renew": renewErr} {
		if err == nil || !backendkit.IsStoreFailure(err) || errors.Is(err, backendkit.ErrLeaseLost) {
			t.Fatalf("%s: %v, want a store failure", op, err)
		}
		if s := err.Error(); strings.Contains(s, key) || strings.Contains(s, token) || !strings.Contains(s, "server said") {
			t.Fatalf("%s: not redacted (or not the server's error): %q", op, s)
		}
	}
}
