package bloblease

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/fxelection/fxelection/fxelection"
)

func init() {
	fxelection.RegisterBackend(fxelection.BackendModule{
		Name: "blob",
		Doc: "Azure Blob Storage (or Azurite), one blob per election on native leases (lease 15s–60s); settings: " +
			"connection_string, or account_url + account_name + account_key; container (required); prefix",
		New: newFromSettings,
	})
}

// registryRetry is the retry policy of registry-built clients: a few quick
// retries, so that one call stays well inside the elector's RenewDeadline
// (the SDK's default backs off for up to a minute).
func registryRetry() policy.RetryOptions {
	return policy.RetryOptions{
		MaxRetries:    2,
		TryTimeout:    5 * time.Second,
		RetryDelay:    200 * time.Millisecond,
		MaxRetryDelay: time.Second,
	}
}

// newFromSettings builds a backend with a client of its own; the backend's
// Close frees the client's idle connections. Its errors, and every error
// the backend returns, pass through fxelection.RedactError with the
// settings' secrets: the account key, and a connection string's AccountKey
// and SharedAccessSignature (whole, and its sig= value in every escaping).
func newFromSettings(_ context.Context, s fxelection.Settings) (fxelection.Backend, error) {
	secrets := settingSecrets(s)
	b, err := buildFromSettings(s)
	if err != nil {
		return nil, fxelection.RedactError(err, secrets...)
	}
	b.secrets = secrets
	return b, nil
}

// settingSecrets returns the secret values in s, longest first (so that a
// secret containing another is replaced whole).
func settingSecrets(s fxelection.Settings) []string {
	var out []string
	add := func(v string) {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	add(s.String("account_key", ""))
	for _, part := range strings.Split(s.String("connection_string", ""), ";") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "accountkey":
			add(v)
		case "sharedaccesssignature":
			add(v)
			q, _ := url.ParseQuery(strings.TrimPrefix(v, "?"))
			for _, sig := range q["sig"] {
				add(sig)
				add(url.QueryEscape(sig))
				add(url.PathEscape(sig))
			}
			// The raw, still-escaped form as written in the string.
			for _, kv := range strings.Split(strings.TrimPrefix(v, "?"), "&") {
				if name, val, ok := strings.Cut(kv, "="); ok && strings.EqualFold(name, "sig") {
					add(val)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

func buildFromSettings(s fxelection.Settings) (*Backend, error) {
	container, err := s.Required("container")
	if err != nil {
		return nil, err
	}
	cs := s.String("connection_string", "")
	accountURL, name, key := s.String("account_url", ""), s.String("account_name", ""), s.String("account_key", "")
	transport := http.DefaultTransport.(*http.Transport).Clone()
	opts := &azblob.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: &http.Client{Transport: transport},
		Retry:     registryRetry(),
	}}
	var client *azblob.Client
	switch {
	case cs != "" && (accountURL != "" || name != "" || key != ""):
		return nil, errors.New(`set either setting "connection_string" or "account_url", "account_name" and "account_key", not both`)
	case cs != "":
		client, err = azblob.NewClientFromConnectionString(cs, opts)
		if err != nil {
			// Not %w: the SDK's message may quote the connection string.
			return nil, fmt.Errorf("setting %q: invalid connection string", "connection_string")
		}
	default:
		for _, k := range []string{"account_url", "account_name", "account_key"} {
			if _, err := s.Required(k); err != nil {
				return nil, fmt.Errorf(`%w (or set "connection_string")`, err)
			}
		}
		u, err := url.Parse(accountURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("setting %q: want an http(s) URL such as https://ACCOUNT.blob.core.windows.net/", "account_url")
		}
		cred, err := azblob.NewSharedKeyCredential(name, key)
		if err != nil {
			return nil, fmt.Errorf("setting %q: invalid key (want base64)", "account_key")
		}
		client, err = azblob.NewClientWithSharedKeyCredential(accountURL, cred, opts)
		if err != nil {
			return nil, fmt.Errorf("setting %q: %w", "account_url", err)
		}
	}
	b, err := New(client, Options{Container: container, Prefix: s.String("prefix", "")})
	if err != nil {
		return nil, err
	}
	b.closer = transport.CloseIdleConnections
	return b, nil
}
