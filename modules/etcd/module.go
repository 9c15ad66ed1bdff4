package etcdlease

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

func init() { modkit.RegisterModule(ConfigModule{}) }

// DefaultDialTimeout is ConfigModule.DialTimeout's default.
const DefaultDialTimeout = 5 * time.Second

// ConfigModule is the configuration-document module fxelection.backends.etcd:
// a Backend with an etcd client of its own, created by Provision and closed
// by Cleanup. Its exported fields are its settings, named by their JSON keys:
//
//	{"module": "fxelection.backends.etcd",
//	 "endpoints": ["etcd-0:2379", "etcd-1:2379", "etcd-2:2379"],
//	 "username": "billing", "password": "{env.ETCD_PASSWORD}",
//	 "prefix": "billing/elections/"}
//
// Errors never contain the password, and never quote an endpoint (a URL
// pasted there may carry a password: user info is refused).
type ConfigModule struct {
	// Endpoints are the cluster members' client addresses: host:port, or
	// http://host:port and https://host:port URLs (https implies TLS).
	// Required.
	Endpoints []string `json:"endpoints" config:"required"`
	// Username is the etcd user name (etcd authentication). Default: none.
	Username string `json:"username,omitempty"`
	// Password is the user's password; never logged or put in errors.
	// Required with username, refused without it. Default: none.
	Password modkit.Secret `json:"password,omitempty"`
	// DialTimeout bounds fetching the authentication token when the client
	// is created and the client's keep-alive probes. Default: 5s.
	DialTimeout modkit.Duration `json:"dial_timeout,omitempty"`
	// TLS connects with TLS 1.2 or later, verifying the server's
	// certificate against the system's roots or CAFile. Default: false,
	// unless an endpoint is an https:// URL or a file below is set.
	TLS bool `json:"tls,omitempty"`
	// CAFile is a PEM file of the certificate authorities to trust instead
	// of the system's. Default: none.
	CAFile string `json:"ca_file,omitempty"`
	// CertFile and KeyFile are the PEM client certificate and its key, for
	// etcd's client certificate authentication; both or neither. Default:
	// none.
	CertFile string `json:"cert_file,omitempty"`
	KeyFile  string `json:"key_file,omitempty"`
	// Prefix is Options.KeyPrefix. Default: "fxelection/".
	Prefix string `json:"prefix,omitempty" option:"KeyPrefix"`
	// Push, when false, sets Options.DisablePush. Default: true.
	Push *bool `json:"push,omitempty" option:"DisablePush"`

	// The Backend and its client, from Provision; Cleanup stops push
	// wake-up and closes the client.
	modkit.Provisioned[ConfigModule]
}

var _ modkit.ClientBackendModule = (*ConfigModule)(nil)

// ElectionModule returns the module's ModuleInfo.
func (ConfigModule) ElectionModule() modkit.ModuleInfo {
	return modkit.NewModuleInfo[ConfigModule]("fxelection.backends.etcd",
		"etcd v3 (a Raft-replicated cluster): etcd leases, the key's create revision as the term, watch wake-up")
}

// options returns the Options the settings describe.
func (m *ConfigModule) options() Options {
	return Options{KeyPrefix: m.Prefix, DisablePush: m.Push != nil && !*m.Push}
}

// useTLS reports whether the client connects with TLS.
func (m *ConfigModule) useTLS() bool {
	if m.TLS || m.CAFile != "" || m.CertFile != "" || m.KeyFile != "" {
		return true
	}
	for _, e := range m.Endpoints {
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(e)), "https://") {
			return true
		}
	}
	return false
}

// endpoints trims the endpoints and checks each is host:port or an
// http(s) URL without user info, path or query. Errors never quote them.
func (m *ConfigModule) endpoints() ([]string, error) {
	var out []string
	for i, e := range m.Endpoints {
		e = strings.TrimSpace(e)
		if e == "" {
			return nil, fmt.Errorf("%w: endpoints: endpoint %d is empty", ErrInvalidOptions, i+1)
		}
		if scheme, _, ok := strings.Cut(e, "://"); ok {
			u, err := url.Parse(e)
			switch {
			case err != nil || u.Host == "" || u.Opaque != "":
				return nil, fmt.Errorf("%w: endpoints: endpoint %d is not a URL with a host", ErrInvalidOptions, i+1)
			case u.User != nil:
				return nil, fmt.Errorf("%w: endpoints: endpoint %d has user info; give the username and password settings", ErrInvalidOptions, i+1)
			case strings.ToLower(scheme) != "http" && strings.ToLower(scheme) != "https":
				return nil, fmt.Errorf("%w: endpoints: endpoint %d: scheme must be http or https", ErrInvalidOptions, i+1)
			case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "":
				return nil, fmt.Errorf("%w: endpoints: endpoint %d has a path or query", ErrInvalidOptions, i+1)
			}
		} else if err := modkit.HostPort(fmt.Sprintf("endpoints: endpoint %d", i+1), e); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: endpoints: no endpoint", ErrInvalidOptions)
	}
	return out, nil
}

// Validate checks the settings without I/O: endpoints, the user name and
// password pair, the certificate and key pair, dial_timeout, and the
// Options they make through Options.Validate (the check New runs). Errors
// match ErrInvalidOptions and name the setting.
func (m *ConfigModule) Validate() error {
	eps, err := m.endpoints()
	if err != nil {
		return err
	}
	if m.useTLS() {
		for i, e := range eps {
			if strings.HasPrefix(strings.ToLower(e), "http://") {
				return fmt.Errorf("%w: endpoints: endpoint %d is http:// but TLS is on", ErrInvalidOptions, i+1)
			}
		}
	}
	switch {
	case m.Username != "" && m.Password.IsZero():
		return fmt.Errorf("%w: password: required with username", ErrInvalidOptions)
	case m.Username == "" && !m.Password.IsZero():
		return fmt.Errorf("%w: username: required with password", ErrInvalidOptions)
	case (m.CertFile == "") != (m.KeyFile == ""):
		return fmt.Errorf("%w: cert_file, key_file: give both or neither", ErrInvalidOptions)
	case m.DialTimeout < 0:
		return fmt.Errorf("%w: dial_timeout: must not be negative", ErrInvalidOptions)
	}
	return m.options().validate(modkit.SettingLabel[ConfigModule])
}

// tlsConfig reads the certificate files, if any.
func (m *ConfigModule) tlsConfig() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if m.CAFile != "" {
		pem, err := os.ReadFile(m.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("ca_file: no PEM certificate in the file")
		}
		c.RootCAs = pool
	}
	if m.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(m.CertFile, m.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("cert_file, key_file: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// Provision creates the client and the Backend. Connecting is left to the
// electors' first operations (a member that is down is reported by them),
// except that with a username the client fetches its authentication token
// now, bounded by dial_timeout: wrong credentials fail the start.
func (m *ConfigModule) Provision(modkit.Context) error {
	eps, err := m.endpoints()
	if err != nil {
		return err
	}
	dial := time.Duration(m.DialTimeout)
	if dial == 0 {
		dial = DefaultDialTimeout
	}
	cfg := clientv3.Config{
		Endpoints:            eps,
		DialTimeout:          dial,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: dial,
		Username:             m.Username,
		Password:             m.Password.Value(),
		// The electors report every failure as an event; the client's
		// own retry warnings would repeat them.
		Logger: zap.NewNop(),
	}
	if m.useTLS() {
		if cfg.TLS, err = m.tlsConfig(); err != nil {
			return m.redact(err)
		}
	}
	client, err := clientv3.New(cfg)
	if err != nil {
		return m.redact(fmt.Errorf("etcd client: %w", err))
	}
	m.Own("etcd client", func() error {
		if err := client.Close(); !errors.Is(err, context.Canceled) { // Close cancels the client's own context
			return err
		}
		return nil
	}, backendkit.Credentials(m.Username, m.Password.Value())...)
	b, err := New(client, m.options())
	if err != nil {
		return err
	}
	m.Provide(b)
	return nil
}

// redact withholds the module's credentials from err.
func (m *ConfigModule) redact(err error) error {
	return backendkit.RedactError(err, backendkit.Credentials(m.Username, m.Password.Value())...)
}
