package s3lease

import (
	"errors"
	"fmt"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

func init() { modkit.RegisterModule(ConfigModule{}) }

// ConfigModule is the configuration-document module fxelection.backends.s3:
// a Backend with a MinIO client of its own, created by Provision; Cleanup
// frees its idle connections. Its exported fields are its settings, named
// by their JSON keys:
//
//	{"module": "fxelection.backends.s3", "endpoint": "s3.eu-west-1.amazonaws.com",
//	 "bucket": "leases", "access_key": "{env.S3_ACCESS_KEY}",
//	 "secret_key": "{env.S3_SECRET_KEY}", "region": "eu-west-1"}
//
// Without access_key and secret_key requests are anonymous. Its errors, and
// every error the Backend returns, pass through backendkit.RedactError with
// the secret key.
type ConfigModule struct {
	// Endpoint is the service's host[:port], not a URL. Required.
	Endpoint string `json:"endpoint" config:"required"`
	// Bucket is Options.Bucket; it must exist. Required.
	Bucket string `json:"bucket" config:"required"`
	// AccessKey is the access key ID; set together with SecretKey.
	// Default: none (anonymous).
	AccessKey string `json:"access_key,omitempty"`
	// SecretKey is the secret access key. Default: none (anonymous).
	SecretKey modkit.Secret `json:"secret_key,omitempty"`
	// Region is the bucket's region. Default: looked up by the client.
	Region string `json:"region,omitempty"`
	// Prefix is Options.Prefix. Default: "fxelection/".
	Prefix string `json:"prefix,omitempty"`
	// Secure, when false, talks plain HTTP. Default: true (HTTPS).
	Secure *bool `json:"secure,omitempty"`

	// The Backend, from Provision, and its client: the module owns that
	// client, as every backend module owns what it built, and Cleanup
	// frees its idle connections.
	modkit.Provisioned[ConfigModule]
}

var _ modkit.ClientBackendModule = (*ConfigModule)(nil)

// ElectionModule returns the module's ModuleInfo.
func (ConfigModule) ElectionModule() modkit.ModuleInfo {
	return modkit.NewModuleInfo[ConfigModule]("fxelection.backends.s3",
		"S3 or MinIO bucket, one object per election (observed-time expiry, no push)")
}

func (m *ConfigModule) options() Options { return Options{Bucket: m.Bucket, Prefix: m.Prefix} }

// Validate checks the settings without I/O: endpoint is host[:port],
// access_key and secret_key are set together, and the Options pass
// Options.Validate (the check New runs).
func (m *ConfigModule) Validate() error {
	if strings.Contains(m.Endpoint, "://") || strings.ContainsAny(m.Endpoint, "/@?# ") {
		return errors.New("endpoint: want host[:port], not a URL (set secure to false for plain HTTP)")
	}
	if (m.AccessKey == "") != m.SecretKey.IsZero() {
		return errors.New("access_key, secret_key: set both or neither")
	}
	return m.options().Validate()
}

func (m *ConfigModule) secure() bool { return m.Secure == nil || *m.Secure }

// Provision creates the client and the Backend. It does no I/O.
func (m *ConfigModule) Provision(modkit.Context) error {
	secret := m.SecretKey.Value()
	transport, err := minio.DefaultTransport(m.secure())
	if err != nil {
		return backendkit.RedactError(fmt.Errorf("endpoint: %w", err), secret)
	}
	m.Own("s3 client's idle connections", func() error { transport.CloseIdleConnections(); return nil })
	client, err := minio.New(m.Endpoint, &minio.Options{
		Creds:     credentials.NewStaticV4(m.AccessKey, secret, ""),
		Secure:    m.secure(),
		Region:    m.Region,
		Transport: transport,
	})
	if err != nil {
		return backendkit.RedactError(fmt.Errorf("endpoint: %w", err), secret)
	}
	var secrets []string
	if secret != "" {
		secrets = []string{secret}
	}
	b, err := newBackend(client, m.options(), secrets)
	if err != nil {
		return err
	}
	m.Provide(b)
	return nil
}
