package etcdlease

import (
	"errors"
	"fmt"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// DefaultKeyPrefix is the key prefix used when Options.KeyPrefix is empty.
const DefaultKeyPrefix = "fxelection/"

// maxPrefixLen bounds Options.KeyPrefix.
const maxPrefixLen = 512

// Options configure a Backend. The zero value means the documented defaults.
type Options struct {
	// KeyPrefix starts every election's key (the key is the prefix followed
	// by the election's name), so several applications can share one etcd.
	// It must be printable UTF-8 of at most 512 bytes. Push wake-up watches
	// every key under it. Default: "fxelection/".
	KeyPrefix string

	// DisablePush turns push wake-up off for this Backend: Subscribe does
	// nothing and followers find a released, expired or transferred lease
	// at their next retry. Default (false): push on.
	DisablePush bool
}

// ErrInvalidOptions is matched by the errors of Options.Validate (and so of
// New, and of the fxelection.backends.etcd module's Validate).
var ErrInvalidOptions = errors.New("etcdlease: invalid options")

// Validate checks opts without I/O: KeyPrefix must be text under the rule
// for election names (valid UTF-8, printable: backendkit.PrintProblem) of
// at most 512 bytes. New and the
// fxelection.backends.etcd module both call it. The error matches
// ErrInvalidOptions, names the field and does not quote its value.
func (o Options) Validate() error { return o.validate(optionLabel) }

// validate is Validate with field names given by label (Options fields for
// New, JSON keys for the config module).
func (o Options) validate(label func(field string) string) error {
	p := o.KeyPrefix
	if len(p) > maxPrefixLen {
		return fmt.Errorf("%w: %s is longer than %d bytes", ErrInvalidOptions, label("KeyPrefix"), maxPrefixLen)
	}
	if problem := backendkit.PrintProblem(p); problem != "" {
		return fmt.Errorf("%w: %s %s", ErrInvalidOptions, label("KeyPrefix"), problem)
	}
	return nil
}

func optionLabel(field string) string { return "Options." + field }
