package s3lease

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/backendkit/caslease"
)

// Backend is the S3 implementation of fxelection.Backend: the caslease
// algorithm on a register of objects written with conditional PUTs. It is
// safe for concurrent use. Each Backend has its own expiry tracker: the
// observations that allow a takeover belong to the candidate (process)
// that made them.
type Backend struct {
	*caslease.Backend
	bucket string
}

// New returns a Backend storing leases in opts.Bucket through client, which
// the caller owns. It validates opts with Options.Validate and does no I/O;
// the bucket must exist before first use.
func New(client *minio.Client, opts Options) (*Backend, error) {
	return newBackend(client, opts, nil)
}

// newBackend is New with the secrets removed from every error (the config
// module's secret key).
func newBackend(client *minio.Client, opts Options, secrets []string) (*Backend, error) {
	if client == nil {
		return nil, errors.New("s3lease: nil client")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	b, err := caslease.New(caslease.Bytes(objects{client: client, bucket: opts.Bucket}), caslease.Options{
		Name:    "s3",
		Key:     func(election string) string { return prefix + url.PathEscape(election) + ".json" },
		Secrets: secrets,
	})
	if err != nil {
		return nil, err
	}
	return &Backend{Backend: b, bucket: opts.Bucket}, nil
}

// Bucket returns the bucket the backend uses.
func (b *Backend) Bucket() string { return b.bucket }

// objects is the bucket as a caslease.ByteStore: GET for Get (one request,
// so the ETag and the body belong together), PUT with If-None-Match: * for
// Add and with If-Match: <etag> for CompareAndSwap. Versions are ETags;
// S3 expires nothing, so expiry is observed time.
type objects struct {
	client *minio.Client
	bucket string
}

func (objects) Capabilities() caslease.Capabilities { return caslease.Capabilities{} }

// s3Code returns the S3 error code and HTTP status of err, if it is an S3
// error response.
func s3Code(err error) (string, int) {
	var er minio.ErrorResponse
	if errors.As(err, &er) {
		return er.Code, er.StatusCode
	}
	return "", 0
}

// Get reads key's object, at most backendkit.MaxValueBytes+1 bytes of it
// (the codec rejects a longer one). A missing object (not a missing
// bucket, which is a store failure) is caslease.ErrNotFound.
func (o objects) Get(ctx context.Context, key string) (caslease.ByteEntry, error) {
	body, info, _, err := minio.Core{Client: o.client}.GetObject(ctx, o.bucket, key, minio.GetObjectOptions{})
	if code, status := s3Code(err); code == minio.NoSuchKey || status == http.StatusNotFound && code != minio.NoSuchBucket {
		return caslease.ByteEntry{}, caslease.ErrNotFound
	}
	if err != nil {
		return caslease.ByteEntry{}, err
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, backendkit.MaxValueBytes+1))
	if err != nil {
		return caslease.ByteEntry{}, err
	}
	return caslease.ByteEntry{Value: data, Version: info.ETag}, nil
}

// Add creates key's object with If-None-Match: *.
func (o objects) Add(ctx context.Context, key string, value []byte, _ time.Duration) (string, error) {
	return o.put(ctx, key, value, "", caslease.ErrExists)
}

// CompareAndSwap replaces key's object with If-Match: version.
func (o objects) CompareAndSwap(ctx context.Context, key string, value []byte, version string, _ time.Duration) (string, error) {
	return o.put(ctx, key, value, version, caslease.ErrConflict)
}

// put writes value under key conditionally: if etag is empty only if the
// object does not exist, else only if its ETag is etag. A lost
// precondition (412), a concurrent conditional write that won (409
// ConditionalRequestConflict on AWS) or an object gone meanwhile gives an
// error matching lost. It returns the new ETag.
func (o objects) put(ctx context.Context, key string, value []byte, etag string, lost error) (string, error) {
	opts := minio.PutObjectOptions{ContentType: "application/json", DisableMultipart: true}
	if etag == "" {
		opts.SetMatchETagExcept("*")
	} else {
		opts.SetMatchETag(etag)
	}
	info, err := o.client.PutObject(ctx, o.bucket, key, bytes.NewReader(value), int64(len(value)), opts)
	if code, status := s3Code(err); status == http.StatusPreconditionFailed || status == http.StatusConflict ||
		code == minio.PreconditionFailed || code == minio.NoSuchKey {
		return "", fmt.Errorf("%w: %w", lost, err)
	}
	if err != nil {
		return "", err
	}
	if info.ETag == "" {
		return "", errors.New("write returned no ETag")
	}
	return info.ETag, nil
}
