package redislease

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fxelection/fxelection/modules/redis/internal/rediskey"
)

// DefaultKeyPrefix is the key prefix used when Options.KeyPrefix is empty.
const DefaultKeyPrefix = rediskey.DefaultPrefix

// Options configure a Backend. The zero value means the documented defaults.
type Options struct {
	// KeyPrefix starts every key and the wake-up channel, so several
	// applications can share one Redis. It must not contain '{' or '}'
	// (Redis Cluster hash tags). Default: "fxelection:".
	KeyPrefix string

	// DisablePush turns push wake-up off for this Backend: Subscribe does
	// nothing and followers find a released lease at their next retry.
	// Release and Transfer still publish, so candidates on other Backends
	// that use push keep waking at once. Default (false): push on.
	DisablePush bool
}

// ErrInvalidOptions is matched by the errors of Options.Validate (and so of
// New, and of the fxelection.backends.redis module's Validate).
var ErrInvalidOptions = errors.New("redislease: invalid options")

// Validate checks opts without I/O: KeyPrefix must not contain '{' or '}'
// (they would make Redis Cluster hash tags, and keys of one election could
// land in different slots). New and the fxelection.backends.redis module
// both call it. The error matches ErrInvalidOptions and names the field.
func (o Options) Validate() error { return o.validate(optionLabel) }

// validate is Validate with field names given by label (Options fields for
// New, JSON keys for the config module).
func (o Options) validate(label func(field string) string) error {
	if strings.ContainsAny(o.KeyPrefix, "{}") {
		return fmt.Errorf("%w: %s: must not contain '{' or '}' (the keys' hash tag must be the election's)", ErrInvalidOptions, label("KeyPrefix"))
	}
	return nil
}

func optionLabel(field string) string { return "Options." + field }
