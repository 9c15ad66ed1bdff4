package kubelease

import (
	"errors"
	"fmt"
	"log/slog"

	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultNamespace is the namespace used when Options.Namespace is empty.
const DefaultNamespace = "default"

// DefaultMaxInFlight is Options.MaxInFlight's default.
const DefaultMaxInFlight = 32

// Options configure a Backend. The zero value means the documented defaults.
type Options struct {
	// Namespace holds the elections' Lease objects. It must be a valid
	// namespace name (a DNS-1123 label). Default: "default".
	Namespace string

	// MaxInFlight bounds the API requests this Backend has in flight at
	// once, across all its elections, so that many elections cannot queue
	// unbounded work in the client's rate limiter. Default: 32.
	MaxInFlight int

	// DisablePush turns push wake-up off: Subscribe does nothing and
	// followers find a released, deleted or handed-over Lease at their
	// next retry. Default (false): one watch on the namespace's Leases.
	DisablePush bool

	// Logger receives what the backend does not return to a caller: the
	// watch refused by the API server (a Role without watch: logged once,
	// at Warn, until a watch is established again, at Info). Default
	// (nil): none; the refusal still reaches the elector as a store
	// failure (ErrWatchRefused).
	Logger *slog.Logger
}

// ErrInvalidOptions is matched by the errors of Options.Validate (and so of
// New, and of the fxelection.backends.kubernetes module's Validate).
var ErrInvalidOptions = errors.New("kubelease: invalid options")

// Validate checks opts without I/O. The error matches ErrInvalidOptions
// and names the field.
func (o Options) Validate() error { return o.validate(optionLabel) }

func (o Options) validate(label func(string) string) error {
	if o.Namespace != "" {
		if problems := validation.IsDNS1123Label(o.Namespace); len(problems) > 0 {
			return fmt.Errorf("%w: %s is not a namespace name (a DNS-1123 label)", ErrInvalidOptions, label("Namespace"))
		}
	}
	if o.MaxInFlight < 0 {
		return fmt.Errorf("%w: %s must not be negative", ErrInvalidOptions, label("MaxInFlight"))
	}
	return nil
}

func (o Options) namespace() string {
	if o.Namespace == "" {
		return DefaultNamespace
	}
	return o.Namespace
}

func (o Options) maxInFlight() int {
	if o.MaxInFlight == 0 {
		return DefaultMaxInFlight
	}
	return o.MaxInFlight
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

func optionLabel(field string) string { return "Options." + field }
