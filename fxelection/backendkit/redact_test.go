package backendkit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

func TestRedactText(t *testing.T) {
	const secret = "hunter2secret"
	for _, in := range []string{
		"host=db password=" + secret + " user=x",
		"host=db password = " + secret + " user=x",
		"host=db password= '" + secret + "' user=x",
		"host=db password\t=\t" + secret,
		"host=db PASSWORD='hunter2 secret with spaces' user=x",
		"host=db sslpassword=" + secret,
		"postgres://user:" + secret + "@db:5432/x",
		"redis://:" + secret + "@localhost:6379/0",
		`Get "https://acct.blob.core.windows.net/c/b?sv=2020&sig=` + secret + `&se=1": dial tcp: refused`,
		"DefaultEndpointsProtocol=https;AccountName=a;AccountKey=" + secret + ";EndpointSuffix=x",
		"BlobEndpoint=https://a/;SharedAccessSignature=sv=2020&sig=" + secret,
		"sv=2020&ss=b&sig=" + secret,
		// Ambiguous quoting: each reading is redacted (found by CI's fuzz run).
		"pAss=' password = '" + secret + "'",
		"pass= password = '" + secret + "'",
		`token="a password=` + secret + `"`,
	} {
		out := backendkit.RedactText(in)
		if strings.Contains(out, "hunter2") || strings.Contains(out, "secret with") {
			t.Errorf("RedactText(%q) = %q: secret leaked", in, out)
		}
	}
	if got := backendkit.RedactText("dial tcp 127.0.0.1:6379: connection refused"); got != "dial tcp 127.0.0.1:6379: connection refused" {
		t.Errorf("harmless text changed: %q", got)
	}
	if got := backendkit.RedactText("auth failed for abc", "abc"); strings.Contains(got, "abc") {
		t.Errorf("short secret leaked: %q", got)
	}
	if got := backendkit.RedactText("auth failed for s3cr3tpw", "s3cr3tpw"); strings.Contains(got, "s3cr3tpw") {
		t.Errorf("secret leaked: %q", got)
	}
}

func TestRedactErrorKeepsSentinels(t *testing.T) {
	if backendkit.RedactError(nil) != nil {
		t.Fatal("RedactError(nil) != nil")
	}
	plain := errors.New("connection refused")
	if backendkit.RedactError(plain) != plain {
		t.Fatal("an error without secrets should pass unchanged")
	}
	inner := fmt.Errorf("get https://a/b?sig=topsecret: %w", context.DeadlineExceeded)
	err := backendkit.RedactError(fmt.Errorf("%w: %w", backendkit.ErrInvalidRecord, inner))
	if strings.Contains(err.Error(), "topsecret") {
		t.Fatalf("leaked: %v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, backendkit.ErrInvalidRecord) {
		t.Fatalf("sentinels lost: %v", err)
	}
	if errors.Unwrap(err) != nil {
		t.Fatal("a redacted error must not unwrap to the original")
	}
	held := &backendkit.HeldError{Holder: fxelection.Lease{Holder: "x"}}
	var h *backendkit.HeldError
	if !errors.As(backendkit.RedactError(fmt.Errorf("password=abcdef: %w", held)), &h) || h.Holder.Holder != "x" {
		t.Fatal("HeldError not reachable through RedactError")
	}
}

func TestCredentials(t *testing.T) {
	for _, tc := range []struct {
		user    string
		secrets []string
		want    []string
	}{
		{"", nil, nil},
		{"bob", []string{"pw"}, []string{"pw"}},
		{"alice", []string{"", "s3cret", "tok"}, []string{"s3cret", "tok", "alice"}},
	} {
		if got := backendkit.Credentials(tc.user, tc.secrets...); !slices.Equal(got, tc.want) {
			t.Errorf("Credentials(%q, %q) = %q, want %q", tc.user, tc.secrets, got, tc.want)
		}
	}
}
