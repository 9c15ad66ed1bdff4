package ddblease

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

func init() { modkit.RegisterModule(ConfigModule{}) }

// ConfigModule is the configuration-document module
// fxelection.backends.dynamodb: a Backend with a DynamoDB client of its
// own, created by Provision; Cleanup frees its idle connections. Its
// exported fields are its settings, named by their JSON keys:
//
//	{"module": "fxelection.backends.dynamodb", "region": "eu-west-1",
//	 "table": "leases", "access_key_id": "{env.AWS_ACCESS_KEY_ID}",
//	 "secret_access_key": "{env.AWS_SECRET_ACCESS_KEY}"}
//
// Without access_key_id and secret_access_key the client takes its
// credentials from the AWS SDK's default chain (environment, shared files,
// container and instance roles). Its errors, and every error the Backend
// returns, pass through backendkit.RedactError with the secret access key
// and the session token.
type ConfigModule struct {
	// Region is the table's AWS region. Required.
	Region string `json:"region" config:"required"`
	// Endpoint is the service's URL, for DynamoDB Local or a VPC endpoint
	// ("http://127.0.0.1:8000"). Default: the region's AWS endpoint.
	Endpoint string `json:"endpoint,omitempty"`
	// Table is Options.Table. Required.
	Table string `json:"table" config:"required"`
	// AccessKeyID is the access key ID; set together with SecretAccessKey.
	// Default: the SDK's default credential chain.
	AccessKeyID string `json:"access_key_id,omitempty"`
	// SecretAccessKey is the secret access key. Default: the SDK's default
	// credential chain.
	SecretAccessKey modkit.Secret `json:"secret_access_key,omitempty"`
	// SessionToken is the session token of temporary credentials; only
	// with access_key_id and secret_access_key. Default: none.
	SessionToken modkit.Secret `json:"session_token,omitempty"`
	// SkipCreateTable is Options.SkipCreateTable. Default: false (the
	// first operation creates a missing table).
	SkipCreateTable bool `json:"skip_create_table,omitempty"`

	// The Backend, from Provision, and its client's connections, which the
	// module owns and Cleanup frees.
	modkit.Provisioned[ConfigModule]
}

var _ modkit.ClientBackendModule = (*ConfigModule)(nil)

// ElectionModule returns the module's ModuleInfo.
func (ConfigModule) ElectionModule() modkit.ModuleInfo {
	return modkit.NewModuleInfo[ConfigModule]("fxelection.backends.dynamodb",
		"DynamoDB table, one item per election (observed-time expiry, no push)")
}

func (m *ConfigModule) options() Options {
	return Options{Table: m.Table, SkipCreateTable: m.SkipCreateTable}
}

// Validate checks the settings without I/O: region is letters, digits and
// '-'; endpoint, if set, is an http or https URL without user
// information, query or fragment; access_key_id and secret_access_key are
// set together, session_token only with them; and the Options pass
// Options.Validate (the check New runs). Errors name the setting and never
// quote a value.
func (m *ConfigModule) Validate() error {
	for _, r := range m.Region {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return errors.New("region: may hold only letters, digits and '-'")
		}
	}
	if m.Endpoint != "" {
		u, err := url.Parse(m.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(m.Endpoint, " \t\r\n") {
			return errors.New("endpoint: want an http:// or https:// URL without user information, query or fragment")
		}
	}
	if (m.AccessKeyID == "") != m.SecretAccessKey.IsZero() {
		return errors.New("access_key_id, secret_access_key: set both or neither")
	}
	if !m.SessionToken.IsZero() && m.AccessKeyID == "" {
		return errors.New("session_token: only with access_key_id and secret_access_key")
	}
	return m.options().Validate()
}

// secrets are the values removed from every error.
func (m *ConfigModule) secrets() []string {
	return backendkit.Credentials("", m.SecretAccessKey.Value(), m.SessionToken.Value())
}

// Provision creates the client and the Backend. It sends nothing to
// DynamoDB; without static credentials it reads the SDK's default
// configuration (environment and shared files).
func (m *ConfigModule) Provision(ctx modkit.Context) error {
	secrets := m.secrets()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	m.Own("dynamodb client's idle connections", func() error { transport.CloseIdleConnections(); return nil })
	httpClient := &http.Client{Transport: transport}
	var opts dynamodb.Options
	if m.AccessKeyID != "" {
		opts = dynamodb.Options{
			Region:      m.Region,
			Credentials: credentials.NewStaticCredentialsProvider(m.AccessKeyID, m.SecretAccessKey.Value(), m.SessionToken.Value()),
			HTTPClient:  httpClient,
		}
	} else {
		cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(m.Region), awsconfig.WithHTTPClient(httpClient))
		if err != nil {
			return fmt.Errorf("aws configuration: %w", backendkit.RedactError(err, secrets...))
		}
		opts = dynamodb.Options{Region: m.Region, Credentials: cfg.Credentials, HTTPClient: httpClient,
			RetryMaxAttempts: cfg.RetryMaxAttempts, RetryMode: cfg.RetryMode}
	}
	if m.Endpoint != "" {
		opts.BaseEndpoint = aws.String(m.Endpoint)
	}
	b, err := newBackend(dynamodb.New(opts), m.options(), secrets)
	if err != nil {
		return err
	}
	m.Provide(b)
	return nil
}
