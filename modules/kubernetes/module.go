package kubelease

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

func init() { modkit.RegisterModule(ConfigModule{}) }

// Client rate limits the config module sets when qps and burst are not
// given: client-go's own default (5 requests per second) starves a process
// with more than a handful of elections (each renewal is two requests).
const (
	DefaultQPS   = 50
	DefaultBurst = 100
)

// ConfigModule is the configuration-document module
// fxelection.backends.kubernetes: a Backend with a client of its own, made
// by Provision. Its exported fields are its settings, named by their JSON
// keys:
//
//	{"module": "fxelection.backends.kubernetes", "namespace": "billing"}
//
// runs in a pod with its service account (in-cluster configuration);
//
//	{"module": "fxelection.backends.kubernetes",
//	 "kubeconfig": "/etc/kube/config", "context": "prod", "namespace": "billing",
//	 "qps": 100, "burst": 200}
//
// reads a kubeconfig file; "server" and "token" (a secret) give the API
// server and a bearer token directly. Errors never contain the token or
// anything read from the kubeconfig's credentials.
type ConfigModule struct {
	// Kubeconfig is the path of a kubeconfig file. Default: none; with
	// neither kubeconfig nor server, the in-cluster configuration (the
	// pod's service account).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Context is the kubeconfig context to use. Default: its current one.
	Context string `json:"context,omitempty"`
	// Server is the API server's https:// URL, with token. Default: none.
	Server string `json:"server,omitempty"`
	// Token is a bearer token (with server, or overriding the kubeconfig's
	// credentials); never logged or put in errors. Default: none.
	Token modkit.Secret `json:"token,omitempty"`
	// CAFile is a PEM file of the certificate authorities that sign the
	// API server's certificate, with server. Default: the system's roots.
	CAFile string `json:"ca_file,omitempty"`
	// Namespace is Options.Namespace. Default: "default".
	Namespace string `json:"namespace,omitempty" option:"Namespace"`
	// QPS and Burst are the client's rate limit. Default: 50 and 100.
	QPS   float32 `json:"qps,omitempty"`
	Burst int     `json:"burst,omitempty"`
	// MaxInFlight is Options.MaxInFlight. Default: 32.
	MaxInFlight int `json:"max_in_flight,omitempty" option:"MaxInFlight"`
	// Push, when false, sets Options.DisablePush. Default: true.
	Push *bool `json:"push,omitempty" option:"DisablePush"`

	// The Backend, from Provision; Cleanup stops push wake-up.
	modkit.Provisioned[ConfigModule]
}

var _ modkit.ClientBackendModule = (*ConfigModule)(nil)

// ElectionModule returns the module's ModuleInfo.
func (ConfigModule) ElectionModule() modkit.ModuleInfo {
	return modkit.NewModuleInfo[ConfigModule]("fxelection.backends.kubernetes",
		"Kubernetes coordination.k8s.io/v1 Leases, field-compatible with client-go's LeaseLock: observed-time expiry, a clock-seeded term in an annotation, watch wake-up")
}

func (m *ConfigModule) options() Options {
	return Options{Namespace: m.Namespace, MaxInFlight: m.MaxInFlight, DisablePush: m.Push != nil && !*m.Push}
}

// Validate checks the settings without I/O. Errors match
// ErrInvalidOptions and name the setting; they never quote the token or
// the server URL (which may carry credentials: user info is refused).
func (m *ConfigModule) Validate() error {
	if m.Server != "" {
		u, err := url.Parse(strings.TrimSpace(m.Server))
		switch {
		case err != nil || u.Host == "" || !strings.EqualFold(u.Scheme, "https"):
			return fmt.Errorf("%w: server: want an https:// URL with a host", ErrInvalidOptions)
		case u.User != nil:
			return fmt.Errorf("%w: server: has user info; give the token setting", ErrInvalidOptions)
		case m.Token.IsZero():
			return fmt.Errorf("%w: token: required with server", ErrInvalidOptions)
		case m.Kubeconfig != "":
			return fmt.Errorf("%w: kubeconfig, server: give one or the other", ErrInvalidOptions)
		}
	}
	switch {
	case m.Context != "" && m.Kubeconfig == "":
		return fmt.Errorf("%w: context: requires kubeconfig", ErrInvalidOptions)
	case m.CAFile != "" && m.Server == "":
		return fmt.Errorf("%w: ca_file: requires server", ErrInvalidOptions)
	case m.QPS < 0:
		return fmt.Errorf("%w: qps: must not be negative", ErrInvalidOptions)
	case m.Burst < 0:
		return fmt.Errorf("%w: burst: must not be negative", ErrInvalidOptions)
	}
	return m.options().validate(modkit.SettingLabel[ConfigModule])
}

// restConfig builds the client configuration the settings describe.
func (m *ConfigModule) restConfig() (*rest.Config, error) {
	var (
		cfg *rest.Config
		err error
	)
	switch {
	case m.Server != "":
		cfg = &rest.Config{Host: strings.TrimSpace(m.Server), TLSClientConfig: rest.TLSClientConfig{CAFile: m.CAFile}}
	case m.Kubeconfig != "":
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: m.Kubeconfig},
			&clientcmd.ConfigOverrides{CurrentContext: m.Context},
		).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
	default:
		cfg, err = rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster configuration: %w", err)
		}
	}
	if !m.Token.IsZero() {
		cfg.BearerToken, cfg.BearerTokenFile = m.Token.Value(), ""
	}
	cfg.QPS, cfg.Burst = DefaultQPS, DefaultBurst
	if m.QPS > 0 {
		cfg.QPS = m.QPS
	}
	if m.Burst > 0 {
		cfg.Burst = m.Burst
	}
	cfg.UserAgent = "fxelection"
	return cfg, nil
}

// Provision creates the client and the Backend. It does no I/O beyond
// reading the kubeconfig or the service account's files: the electors'
// first operations reach the API server.
func (m *ConfigModule) Provision(ctx modkit.Context) error {
	cfg, err := m.restConfig()
	if err != nil {
		return m.redact(err, nil)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return m.redact(fmt.Errorf("kubernetes client: %w", err), cfg)
	}
	secrets := m.secrets(cfg)
	opts := m.options()
	opts.Logger = ctx.Logger()
	b, err := newBackend(client, opts, secrets)
	if err != nil {
		return err
	}
	m.Own("kubernetes watch", b.Close, secrets...)
	m.Provide(b)
	return nil
}

// secrets are the credentials of cfg and the module: removed from every
// error.
func (m *ConfigModule) secrets(cfg *rest.Config) []string {
	var s []string
	if !m.Token.IsZero() {
		s = append(s, m.Token.Value())
	}
	if cfg != nil {
		for _, v := range []string{cfg.BearerToken, cfg.Password, string(cfg.KeyData)} {
			if v != "" {
				s = append(s, v)
			}
		}
	}
	return s
}

func (m *ConfigModule) redact(err error, cfg *rest.Config) error {
	return backendkit.RedactError(err, m.secrets(cfg)...)
}
