package s3lease

import "errors"

// DefaultPrefix is the object key prefix used when Options.Prefix is empty.
const DefaultPrefix = "fxelection/"

// ErrBucketRequired is returned by New when Options.Bucket is empty.
var ErrBucketRequired = errors.New("s3lease: Options.Bucket is required")

// Options configures a Backend. The zero value is not usable: Bucket is
// required.
type Options struct {
	// Bucket is the bucket holding the lease objects. It must exist.
	// Required.
	Bucket string
	// Prefix is prepended to every object key.
	// Default: "fxelection/".
	Prefix string
}

// Validate checks opts without I/O: Bucket is required (ErrBucketRequired).
// New and the fxelection.backends.s3 module both call it.
func (o Options) Validate() error {
	if o.Bucket == "" {
		return ErrBucketRequired
	}
	return nil
}
