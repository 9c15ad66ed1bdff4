package zklease

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

func init() { modkit.RegisterModule(ConfigModule{}) }

// DefaultSessionTimeout is ConfigModule.SessionTimeout's default: the
// elector's default LeaseDuration, above its default RenewDeadline (10s).
const DefaultSessionTimeout = 15 * time.Second

// Bounds of ConfigModule.SessionTimeout.
const (
	minSessionSetting = time.Second
	maxSessionSetting = 10 * time.Minute
)

// authTimeout bounds sending the digest credentials when the module starts.
const authTimeout = 10 * time.Second

// ConfigModule is the configuration-document module
// fxelection.backends.zookeeper: a Backend with a ZooKeeper connection of
// its own, made by Provision and closed by Cleanup. Its exported fields
// are its settings, named by their JSON keys:
//
//	{"module": "fxelection.backends.zookeeper",
//	 "servers": ["zk-0:2181", "zk-1:2181", "zk-2:2181"],
//	 "session_timeout": "15s",
//	 "username": "billing", "password": "{env.ZK_PASSWORD}",
//	 "prefix": "/billing/elections"}
//
// Errors never contain the password and never quote a setting's value.
type ConfigModule struct {
	// Servers are the ensemble's client addresses, host:port. Required.
	Servers []string `json:"servers" config:"required"`
	// SessionTimeout is the session timeout asked of the server, which
	// negotiates it into its range (minSessionTimeout to maxSessionTimeout),
	// and Options.SessionTimeout. The renew_deadline of every election,
	// pool and locker using the module must be shorter: a document that
	// breaks the rule is refused (the module is a
	// backendkit.RenewDeadlineLimiter; see the package documentation).
	// Between 1s and 10m. Default: 15s.
	SessionTimeout modkit.Duration `json:"session_timeout,omitempty"`
	// Username and Password are ZooKeeper digest authentication, set
	// together; the znodes the Backend creates then get the ACL "auth"
	// (all permissions for the authenticated user only). The password is
	// never logged or put in errors. Default: none (open ACL).
	Username string        `json:"username,omitempty" option:""`
	Password modkit.Secret `json:"password,omitempty" option:""`
	// Prefix is Options.Prefix. Default: "/fxelection".
	Prefix string `json:"prefix,omitempty"`
	// Push, when false, sets Options.DisablePush. Default: true.
	Push *bool `json:"push,omitempty" option:"DisablePush"`

	// The Backend and its connection, from Provision; Cleanup stops push
	// wake-up and closes the connection (ending its session, so its
	// leases).
	modkit.Provisioned[ConfigModule]
}

var (
	_ modkit.ClientBackendModule      = (*ConfigModule)(nil)
	_ backendkit.RenewDeadlineLimiter = (*ConfigModule)(nil)
)

// ElectionModule returns the module's ModuleInfo.
func (ConfigModule) ElectionModule() modkit.ModuleInfo {
	return modkit.NewModuleInfo[ConfigModule]("fxelection.backends.zookeeper",
		"Apache ZooKeeper: ephemeral lease znodes of the candidate's session, the znode's creation zxid as the term, child-watch wake-up")
}

// options returns the Options the settings describe.
func (m *ConfigModule) options() Options {
	o := Options{Prefix: m.Prefix, DisablePush: m.Push != nil && !*m.Push, SessionTimeout: m.sessionTimeout()}
	if m.Username != "" {
		o.ACL = zk.AuthACL(zk.PermAll)
	}
	return o
}

// servers trims the servers and checks each is host:port. Errors never
// quote them.
func (m *ConfigModule) servers() ([]string, error) {
	var out []string
	for i, s := range m.Servers {
		s = strings.TrimSpace(s)
		if err := modkit.HostPort(fmt.Sprintf("servers: server %d", i+1), s); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: servers: no server", ErrInvalidOptions)
	}
	return out, nil
}

// sessionTimeout is SessionTimeout or its default.
func (m *ConfigModule) sessionTimeout() time.Duration {
	if m.SessionTimeout == 0 {
		return DefaultSessionTimeout
	}
	return time.Duration(m.SessionTimeout)
}

// Validate checks the settings without I/O: servers, the user name and
// password pair (the user name printable ASCII without ':'), and the
// Options they make (prefix, session_timeout) through Options.Validate
// (the check New runs). Errors match ErrInvalidOptions and name the
// setting. The document checks every renew_deadline using the module
// against session_timeout (RenewDeadlineLimit).
func (m *ConfigModule) Validate() error {
	if _, err := m.servers(); err != nil {
		return err
	}
	switch {
	case m.Username != "" && m.Password.IsZero():
		return fmt.Errorf("%w: password: required with username", ErrInvalidOptions)
	case m.Username == "" && !m.Password.IsZero():
		return fmt.Errorf("%w: username: required with password", ErrInvalidOptions)
	case strings.Contains(m.Username, ":") || problemChars(m.Username):
		return fmt.Errorf("%w: username: must be printable ASCII without ':'", ErrInvalidOptions)
	}
	return m.options().validate(modkit.SettingLabel[ConfigModule])
}

// RenewDeadlineLimit implements backendkit.RenewDeadlineLimiter from the
// settings, before anything is provisioned: session_timeout (or its
// default), as the Backend Provision makes reports it; 0 when the Options
// are invalid (Validate reports that).
func (m *ConfigModule) RenewDeadlineLimit() (time.Duration, string) {
	o := m.options()
	if o.Validate() != nil {
		return 0, "session_timeout"
	}
	return o.SessionTimeout, "session_timeout"
}

// secrets are the module's credentials, redacted from every error.
func (m *ConfigModule) secrets() []string {
	return backendkit.Credentials(m.Username, m.Password.Value())
}

// quietLogger drops go-zookeeper's log lines: the electors report every
// failure as an event.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// Provision makes the connection and the Backend. go-zookeeper connects in
// the background (a server that is down is reported by the electors'
// operations); with a username, the digest credentials are sent now,
// waiting (at most 10s) for a session.
func (m *ConfigModule) Provision(modkit.Context) error {
	servers, err := m.servers()
	if err != nil {
		return err
	}
	conn, _, err := zk.Connect(servers, m.sessionTimeout(), zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		return backendkit.RedactError(fmt.Errorf("zookeeper connection: %w", err), m.secrets()...)
	}
	m.Own("zookeeper connection", func() error { conn.Close(); return nil }, m.secrets()...)
	if m.Username != "" {
		ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
		defer cancel()
		cred := []byte(m.Username + ":" + m.Password.Value())
		if _, err := call(ctx, func() (struct{}, error) { return struct{}{}, conn.AddAuth("digest", cred) }); err != nil {
			return backendkit.RedactError(fmt.Errorf("zookeeper digest authentication: %w", err), m.secrets()...)
		}
	}
	b, err := New(conn, m.options(), m.secrets()...)
	if err != nil {
		return err
	}
	m.Provide(b)
	return nil
}
