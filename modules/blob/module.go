package bloblease

import (
	"encoding/base64"
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

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

func init() { modkit.RegisterModule(ConfigModule{}) }

// ConfigModule is the configuration-document module
// fxelection.backends.blob: a Backend with an Azure Blob client of its own,
// created by Provision; Cleanup frees its idle connections. Its exported
// fields are its settings, named by their JSON keys:
//
//	{"module": "fxelection.backends.blob",
//	 "connection_string": "{env.AZURE_STORAGE_CONNECTION_STRING}", "container": "leases"}
//
// Set connection_string, or account_url, account_name and account_key. Its
// errors, and every error the Backend returns, pass through
// backendkit.RedactError with the secrets: the account key, and a
// connection string's AccountKey and SharedAccessSignature (whole, and its
// sig= value in every escaping).
type ConfigModule struct {
	// ConnectionString is an Azure Storage connection string (it embeds
	// the account key or a SAS). Default: none; then account_url,
	// account_name and account_key are required.
	ConnectionString modkit.Secret `json:"connection_string,omitempty"`
	// AccountURL is the service URL, such as
	// https://ACCOUNT.blob.core.windows.net/. Default: none.
	AccountURL string `json:"account_url,omitempty"`
	// AccountName is the storage account's name. Default: none.
	AccountName string `json:"account_name,omitempty"`
	// AccountKey is the account's shared key (base64). Default: none.
	AccountKey modkit.Secret `json:"account_key,omitempty"`
	// Container is Options.Container; it must exist. Required.
	Container string `json:"container" config:"required"`
	// Prefix is Options.Prefix. Default: "fxelection/".
	Prefix string `json:"prefix,omitempty"`

	// The Backend, from Provision, and its client: the module owns that
	// client, as every backend module owns what it built, and Cleanup
	// frees its idle connections.
	modkit.Provisioned[ConfigModule]
}

var _ modkit.ClientBackendModule = (*ConfigModule)(nil)

// ElectionModule returns the module's ModuleInfo.
func (ConfigModule) ElectionModule() modkit.ModuleInfo {
	return modkit.NewModuleInfo[ConfigModule]("fxelection.backends.blob",
		"Azure Blob Storage (or Azurite), one blob per election on native leases (15s to 60s)")
}

// moduleRetry is the retry policy of the module's clients: a few quick
// retries, so that one call stays well inside the elector's RenewDeadline
// (the SDK's default backs off for up to a minute).
func moduleRetry() policy.RetryOptions {
	return policy.RetryOptions{
		MaxRetries:    2,
		TryTimeout:    5 * time.Second,
		RetryDelay:    200 * time.Millisecond,
		MaxRetryDelay: time.Second,
	}
}

func (m *ConfigModule) options() Options { return Options{Container: m.Container, Prefix: m.Prefix} }

// Validate checks the settings without I/O: one way to authenticate, an
// http(s) account_url, a base64 account_key, and the Options through
// Options.Validate (the check New runs). It never quotes a value.
func (m *ConfigModule) Validate() error {
	if !m.ConnectionString.IsZero() {
		if m.AccountURL != "" || m.AccountName != "" || !m.AccountKey.IsZero() {
			return errors.New("connection_string: set either connection_string or account_url, account_name and account_key, not both")
		}
		return m.options().Validate()
	}
	switch {
	case m.AccountURL == "":
		return fmt.Errorf("account_url: %w (or set connection_string)", modkit.ErrRequired)
	case m.AccountName == "":
		return fmt.Errorf("account_name: %w (or set connection_string)", modkit.ErrRequired)
	case m.AccountKey.IsZero():
		return fmt.Errorf("account_key: %w (or set connection_string)", modkit.ErrRequired)
	}
	if u, err := url.Parse(m.AccountURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("account_url: want an http(s) URL such as https://ACCOUNT.blob.core.windows.net/")
	}
	if _, err := base64.StdEncoding.DecodeString(m.AccountKey.Value()); err != nil {
		return errors.New("account_key: invalid key (want base64)")
	}
	return m.options().Validate()
}

// secrets returns the secret values in the settings, longest first (so
// that a secret containing another is replaced whole).
func (m *ConfigModule) secrets() []string {
	var out []string
	add := func(v string) {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	add(m.AccountKey.Value())
	for _, part := range strings.Split(m.ConnectionString.Value(), ";") {
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

// Provision creates the client and the Backend. It does no I/O.
func (m *ConfigModule) Provision(modkit.Context) error {
	secrets := m.secrets()
	b, err := m.build(secrets)
	if err != nil {
		return backendkit.RedactError(err, secrets...)
	}
	m.Provide(b)
	return nil
}

// build makes the client and the Backend, which redacts secrets from
// every error.
func (m *ConfigModule) build(secrets []string) (*Backend, error) {
	// A clone of the default transport, whose idle connections the module
	// owns; a fresh one if the application replaced http.DefaultTransport.
	transport := &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true}
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		transport = t.Clone()
	}
	m.Own("blob client's idle connections", func() error { transport.CloseIdleConnections(); return nil })
	opts := &azblob.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: &http.Client{Transport: transport},
		Retry:     moduleRetry(),
	}}
	var client *azblob.Client
	var err error
	if cs := m.ConnectionString.Value(); cs != "" {
		client, err = azblob.NewClientFromConnectionString(cs, opts)
		if err != nil {
			// Not %w: the SDK's message may quote the connection string.
			return nil, errors.New("connection_string: invalid connection string")
		}
	} else {
		cred, err := azblob.NewSharedKeyCredential(m.AccountName, m.AccountKey.Value())
		if err != nil {
			return nil, errors.New("account_key: invalid key (want base64)")
		}
		client, err = azblob.NewClientWithSharedKeyCredential(m.AccountURL, cred, opts)
		if err != nil {
			return nil, fmt.Errorf("account_url: %w", err)
		}
	}
	return newBackend(client, m.options(), secrets...)
}
