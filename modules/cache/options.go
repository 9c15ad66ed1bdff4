package cachelease

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fxelection/fxelection/fxelection/backendkit/caslease"
)

// DefaultKeyPrefix is the key prefix used when Options.KeyPrefix is empty.
const DefaultKeyPrefix = "fxelection."

// ErrInvalidPrefix is returned by Options.Validate (and so by New) for a key
// prefix with characters outside [A-Za-z0-9._=-], a leading '.', an empty
// dot-separated part, or too long for the store's keys.
var ErrInvalidPrefix = errors.New("cachelease: invalid Options.KeyPrefix")

// Options configures a Backend. The zero value is ready to use.
type Options struct {
	// KeyPrefix is prepended to every key. Keys are KeyPrefix followed by the
	// election name with every byte outside [A-Za-z0-9_-] escaped as =XX
	// (or "=h" and a SHA-256 of the name when that is too long for the
	// store). Default: "fxelection.".
	KeyPrefix string
	// Name is what BackendName returns (metrics, logs). Default: "cache".
	Name string
	// Secrets are values removed from every error the Backend returns
	// (passwords, tokens the adapter's client was configured with). URL
	// userinfo and query strings and key=value secrets are removed anyway.
	Secrets []string
	// DisablePush turns push wake-up off even when the store can watch:
	// followers then only poll. Default: false.
	DisablePush bool
}

// Validate checks o for a Store with capabilities caps, without I/O: it is
// the check New runs, exported so that configuration modules reject the
// same options before they create a client. An invalid KeyPrefix gives an
// error matching ErrInvalidPrefix that does not quote it.
func (o Options) Validate(caps Capabilities) error {
	prefix := o.keyPrefix()
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	if caps.MaxKeyLen > 0 && len(caslease.EscapedKey(prefix, "x", 0)) > caps.MaxKeyLen-len(caslease.HashMark)-64 {
		return fmt.Errorf("%w: too long for the store's %d-byte keys", ErrInvalidPrefix, caps.MaxKeyLen)
	}
	return nil
}

// keyPrefix returns KeyPrefix or its default.
func (o Options) keyPrefix() string {
	if o.KeyPrefix == "" {
		return DefaultKeyPrefix
	}
	return o.KeyPrefix
}

func checkPrefix(p string) error {
	if strings.HasPrefix(p, ".") || strings.Contains(p, "..") {
		return fmt.Errorf("%w: may contain only A-Z a-z 0-9 . _ = - and no empty dot-separated part", ErrInvalidPrefix)
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; !caslease.KeyChar(c) && c != '.' && c != '=' {
			return fmt.Errorf("%w: may contain only A-Z a-z 0-9 . _ = - and no empty dot-separated part", ErrInvalidPrefix)
		}
	}
	return nil
}
