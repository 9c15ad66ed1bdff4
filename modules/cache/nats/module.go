package natslease

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/modkit"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

func init() { modkit.RegisterModule(ConfigModule{}) }

// DefaultReplicas is the replica count of a bucket a ConfigModule creates
// when Replicas is zero.
const DefaultReplicas = 1

// MaxReplicas is the largest replica count JetStream allows.
const MaxReplicas = 5

// ErrInvalidSettings is matched by ConfigModule.Validate's errors for a bad
// url or replicas (a bad bucket matches ErrBucketRequired, a bad prefix
// cachelease.ErrInvalidPrefix).
var ErrInvalidSettings = errors.New("natslease: invalid settings")

// ConfigModule is the configuration-document module
// fxelection.backends.nats: a Backend with a NATS connection of its own,
// created by Provision and closed by Cleanup, on a JetStream KV bucket it
// binds by name, creates on first use if missing, and re-creates when it
// disappears. Its exported fields are its settings, named by their JSON
// keys:
//
//	{"module": "fxelection.backends.nats", "url": "nats://10.0.0.1:4222",
//	 "username": "app", "password": "{env.NATS_PASSWORD}", "replicas": 3}
//
// Errors, the module's and every one the Backend returns, never contain the
// password, the token or credentials in the URL, and never quote the URL.
type ConfigModule struct {
	// URL is the servers' URLs, comma-separated ("nats://host:4222"). It
	// may carry credentials ("nats://user:pass@host:4222"), so it is a
	// secret. Required.
	URL modkit.Secret `json:"url" config:"required"`
	// Username is the user name (with Password). Default: none.
	Username string `json:"username,omitempty"`
	// Password is the password; never logged or put in errors. Default:
	// none.
	Password modkit.Secret `json:"password,omitempty"`
	// Token is the authentication token; never logged or put in errors.
	// Default: none.
	Token modkit.Secret `json:"token,omitempty"`
	// Bucket is the KV bucket (A-Z a-z 0-9 _ -), created on first use if
	// missing and again if it disappears. Default: "fxelection"
	// (DefaultBucket).
	Bucket string `json:"bucket,omitempty"`
	// Replicas is the replica count of a bucket the Backend creates, 1 to
	// MaxReplicas. Default (also for 0): 1.
	Replicas int `json:"replicas,omitempty"`
	// Prefix is cachelease.Options.KeyPrefix. Default: "fxelection.".
	Prefix string `json:"prefix,omitempty"`
	// Push, when false, sets cachelease.Options.DisablePush (no KV watch;
	// followers poll). Default: true.
	Push *bool `json:"push,omitempty"`

	// The Backend and its connection, from Provision; Cleanup stops push
	// wake-up and closes the connection.
	modkit.Provisioned[ConfigModule]
	nc *nats.Conn // set by Provision, dropped by Cleanup
}

var _ modkit.ClientBackendModule = (*ConfigModule)(nil)

// ElectionModule returns the module's ModuleInfo.
func (ConfigModule) ElectionModule() modkit.ModuleInfo {
	return modkit.NewModuleInfo[ConfigModule]("fxelection.backends.nats",
		"NATS JetStream KV (Create/Update on revision): observed-time expiry, watch wake-up")
}

// options returns the cachelease.Options the settings describe.
func (m *ConfigModule) options() cachelease.Options {
	return cachelease.Options{
		KeyPrefix:   m.Prefix,
		DisablePush: m.Push != nil && !*m.Push,
		Secrets:     m.secrets(),
	}
}

// bucket returns Bucket or its default.
func (m *ConfigModule) bucket() string {
	if m.Bucket == "" {
		return DefaultBucket
	}
	return m.Bucket
}

// replicas returns Replicas or its default.
func (m *ConfigModule) replicas() int {
	if m.Replicas == 0 {
		return DefaultReplicas
	}
	return m.Replicas
}

// urls splits URL and parses each URL as the client will, without
// resolving or dialling anything. Errors never quote the value.
func (m *ConfigModule) urls() ([]string, error) {
	var urls []string
	for _, u := range strings.Split(m.URL.Value(), ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("%w: url: no URL", ErrInvalidSettings)
	}
	for i, u := range urls {
		if strings.ContainsAny(u, " \t\r\n") {
			return nil, fmt.Errorf("%w: url: URL %d contains white space", ErrInvalidSettings, i+1)
		}
		// As the client parses it when connecting: a missing scheme is
		// nats://.
		full := u
		if !strings.Contains(full, "://") {
			full = "nats://" + full
		}
		if p, err := url.Parse(full); err != nil || p.Host == "" {
			return nil, fmt.Errorf("%w: url: URL %d is not a URL with a host", ErrInvalidSettings, i+1)
		}
	}
	return urls, nil
}

// secrets returns the password, the token and every password in the URLs,
// for redaction (backendkit.RedactText removes URL userinfo anyway).
func (m *ConfigModule) secrets() []string {
	out := []string{m.Password.Value(), m.Token.Value()}
	for _, s := range strings.Split(m.URL.Value(), ",") {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil || u.User == nil {
			continue
		}
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
	}
	var nonEmpty []string
	for _, s := range out {
		if s != "" {
			nonEmpty = append(nonEmpty, s)
		}
	}
	return nonEmpty
}

// Validate checks the settings without I/O: url (each parsed), replicas, bucket (with
// ValidBucket, the check NewBucketStore runs) and the cachelease.Options
// they make (with cachelease.Options.Validate, the check New runs). It
// reports every problem (errors.Join); each error names its setting and
// none quotes a value.
func (m *ConfigModule) Validate() error {
	var errs []error
	if _, err := m.urls(); err != nil {
		errs = append(errs, err)
	}
	if r := m.Replicas; r < 0 || r > MaxReplicas {
		errs = append(errs, fmt.Errorf("%w: replicas: must be 1 to %d", ErrInvalidSettings, MaxReplicas))
	}
	if !ValidBucket(m.bucket()) {
		errs = append(errs, fmt.Errorf("bucket: %w", ErrBucketRequired))
	}
	if err := m.options().Validate(capabilities); err != nil {
		errs = append(errs, fmt.Errorf("prefix: %w", err))
	}
	return errors.Join(errs...)
}

// Provision connects and creates the Backend. The connection is retried
// in the background, so a server that is down at start is reported by the
// electors' first operations, not here; the bucket is bound (and created if
// missing) on first use.
func (m *ConfigModule) Provision(modkit.Context) error {
	urls, err := m.urls()
	if err != nil {
		return err
	}
	secrets := m.secrets()
	opts := []nats.Option{
		nats.Name("fxelection"),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.Timeout(2 * time.Second),
		// The client's own error logging would print connection URLs.
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
	}
	if m.Username != "" || !m.Password.IsZero() {
		opts = append(opts, nats.UserInfo(m.Username, m.Password.Value()))
	}
	if !m.Token.IsZero() {
		opts = append(opts, nats.Token(m.Token.Value()))
	}
	nc, err := nats.Connect(strings.Join(urls, ","), opts...)
	if err != nil {
		// Not %w: the client's error may quote the URL.
		return fmt.Errorf("url: connect: %s", backendkit.RedactText(err.Error(), secrets...))
	}
	m.nc = nc
	m.Own("nats connection", func() error { m.nc = nil; nc.Close(); return nil })
	js, err := jetstream.New(nc)
	if err != nil {
		return backendkit.RedactError(fmt.Errorf("jetstream: %w", err), secrets...)
	}
	store, err := NewBucketStore(js, jetstream.KeyValueConfig{Bucket: m.bucket(), Replicas: m.replicas(), Description: "fxelection leases"})
	if err != nil {
		return fmt.Errorf("bucket: %w", err)
	}
	b, err := backendOn(store, m.options())
	if err != nil {
		return fmt.Errorf("prefix: %w", err)
	}
	m.Provide(b)
	return nil
}
