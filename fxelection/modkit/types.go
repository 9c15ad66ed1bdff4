package modkit

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// Secret is a string setting that never prints itself: String, Format (every
// fmt verb, %v %+v %#v %s %q %x included), GoString, MarshalJSON,
// MarshalText and LogValue all give backendkit.Redacted ("xxxxx"), whether
// the secret is set or not. Only Value returns it. Use it for passwords,
// keys and connection strings that embed them. Its zero value is the empty
// secret.
//
// In a document a Secret is a JSON string, usually a placeholder such as
// "{env.REDIS_PASSWORD}" or "{file./run/secrets/pg}" so the secret stays out
// of the file.
//
// The value sits behind a pointer, so even where fmt cannot call Format (a
// Secret in an unexported struct field, printed with %v) it shows an
// address, not the secret. Copies of a Secret share the value.
type Secret struct {
	p *string
}

// NewSecret returns a Secret holding v.
func NewSecret(v string) Secret { return Secret{p: &v} }

// Value returns the secret itself. Pass it only to the client that needs it.
func (s Secret) Value() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}

// IsZero reports whether the secret is empty; `config:"required"` uses it.
func (s Secret) IsZero() bool { return s.Value() == "" }

// String returns "xxxxx".
func (s Secret) String() string { return backendkit.Redacted }

// GoString returns `modkit.Secret("xxxxx")`, for %#v.
func (s Secret) GoString() string { return `modkit.Secret("` + backendkit.Redacted + `")` }

// Format writes "xxxxx" for every verb (quoted for %q), so no fmt verb or
// flag reveals the value.
func (s Secret) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		_, _ = f.Write([]byte(s.GoString()))
	case verb == 'q':
		_, _ = f.Write([]byte(`"` + backendkit.Redacted + `"`))
	default:
		_, _ = f.Write([]byte(backendkit.Redacted))
	}
}

// LogValue implements slog.LogValuer: logs show "xxxxx".
func (s Secret) LogValue() slog.Value { return slog.StringValue(backendkit.Redacted) }

// MarshalJSON returns "xxxxx" as a JSON string: printing a decoded
// configuration never reveals secrets (nor can it be re-loaded with them).
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + backendkit.Redacted + `"`), nil }

// MarshalText returns "xxxxx".
func (s Secret) MarshalText() ([]byte, error) { return []byte(backendkit.Redacted), nil }

// UnmarshalJSON accepts a JSON string (or null, which leaves s unchanged).
// Its errors never contain the input.
func (s *Secret) UnmarshalJSON(b []byte) error {
	var v *string
	if err := json.Unmarshal(b, &v); err != nil {
		return errors.New("secret must be a JSON string")
	}
	if v != nil {
		*s = NewSecret(*v)
	}
	return nil
}

// Duration is a time.Duration that a document writes as a string Go's
// time.ParseDuration accepts: "1.5s", "300ms", "2m30s". Numbers are
// rejected (a bare 15 could mean seconds or nanoseconds). Convert with
// time.Duration(d).
type Duration time.Duration

// String formats d as time.Duration does ("1.5s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON accepts a duration string; its errors do not quote the input.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New(`want a duration string such as "1.5s"`)
	}
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

func parseDuration(s string) (Duration, error) {
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf(`%w: not a duration (want a number with a unit: "1.5s", "300ms", "2m")`, ErrInvalidValue)
	}
	return Duration(v), nil
}

// UnmarshalText accepts a duration string; its errors do not quote the
// input and match ErrInvalidValue.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

var (
	_ fmt.Formatter    = Secret{}
	_ fmt.GoStringer   = Secret{}
	_ slog.LogValuer   = Secret{}
	_ json.Marshaler   = Secret{}
	_ json.Unmarshaler = (*Secret)(nil)
	_ json.Marshaler   = Duration(0)
	_ json.Unmarshaler = (*Duration)(nil)

	_ encoding.TextUnmarshaler = (*Duration)(nil)
)
