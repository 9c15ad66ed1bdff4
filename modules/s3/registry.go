package s3lease

import (
	"context"
	"errors"
	"fmt"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/fxelection/fxelection/fxelection"
)

func init() {
	fxelection.RegisterBackend(fxelection.BackendModule{
		Name: "s3",
		Doc: "S3 or MinIO bucket, one object per election (observed-time expiry); settings: " +
			"endpoint (required, host[:port]), bucket (required), access_key, secret_key, " +
			"region, prefix, secure (default true)",
		New: newFromSettings,
	})
}

// newFromSettings builds a backend with a client of its own; the backend's
// Close frees the client's idle connections. Without access_key and
// secret_key requests are anonymous. Its errors, and every error the
// backend returns, pass through fxelection.RedactError with the secret key.
func newFromSettings(_ context.Context, s fxelection.Settings) (fxelection.Backend, error) {
	secretKey := s.String("secret_key", "")
	b, err := buildFromSettings(s, secretKey)
	if err != nil {
		return nil, fxelection.RedactError(err, secretKey)
	}
	return b, nil
}

func buildFromSettings(s fxelection.Settings, secretKey string) (*Backend, error) {
	endpoint, err := s.Required("endpoint")
	if err != nil {
		return nil, err
	}
	bucket, err := s.Required("bucket")
	if err != nil {
		return nil, err
	}
	secure, err := s.Bool("secure", true)
	if err != nil {
		return nil, err
	}
	accessKey := s.String("access_key", "")
	if (accessKey == "") != (secretKey == "") {
		return nil, errors.New(`settings "access_key" and "secret_key" must be set together`)
	}
	transport, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, fmt.Errorf("setting %q: %w", "endpoint", err)
	}
	client, err := minio.New(endpoint, &minio.Options{
		Creds:     credentials.NewStaticV4(accessKey, secretKey, ""),
		Secure:    secure,
		Region:    s.String("region", ""),
		Transport: transport,
	})
	if err != nil {
		return nil, fmt.Errorf("setting %q: %w", "endpoint", err)
	}
	b, err := New(client, Options{Bucket: bucket, Prefix: s.String("prefix", "")})
	if err != nil {
		return nil, err
	}
	b.closer = transport.CloseIdleConnections
	if secretKey != "" {
		b.secrets = []string{secretKey}
	}
	return b, nil
}
