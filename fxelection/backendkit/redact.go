package backendkit

import (
	"github.com/fxelection/fxelection/fxelection/internal/redact"
)

// Redacted replaces a secret in redacted text.
const Redacted = redact.Mask

// RedactText returns s with every secret removed: each of secrets (values a
// backend knows are secret, such as a configured password), then everything
// that has the shape of a secret (see RedactError). A secret shorter than 4
// bytes cannot be replaced safely: if one occurs in s, the whole text is
// withheld.
func RedactText(s string, secrets ...string) string { return redact.Text(s, secrets...) }

// RedactError returns err with its message passed through RedactText: URL
// userinfo and query strings (sig=…), every key=value spelling of password,
// AccountKey, SharedAccessSignature and the like, JSON "key": "value" pairs,
// Authorization headers and the given secrets are replaced by "xxxxx". The
// result still matches, with errors.Is, every sentinel err matched
// (ErrInvalidRecord, context.DeadlineExceeded, …), and errors.As
// still finds a *HeldError; it does not unwrap to err, so the
// unredacted text cannot be reached through it. nil stays nil; an error
// whose message needs no change is returned as is.
//
// Every error that leaves a backend passes through it once, in Redacting,
// with the backend's secrets. The Elector applies it too (with no secrets)
// to every store failure before callbacks, observers, logs or Status see
// it, which changes nothing for an error Redacting passed and covers a
// backend that does not embed Redacting.
func RedactError(err error, secrets ...string) error {
	return redact.Error[*HeldError](err, secrets...)
}

// Credentials lists what a backend passes to RedactError for a client
// configured with user and secrets (passwords, tokens): every non-empty
// secret, and the user name when it is at least 4 bytes long. A user name
// is not a secret, and a shorter one cannot be replaced safely: RedactText
// would withhold every message containing its letters.
func Credentials(user string, secrets ...string) []string {
	var out []string
	for _, s := range secrets {
		if s != "" {
			out = append(out, s)
		}
	}
	if len(user) >= 4 {
		out = append(out, user)
	}
	return out
}
