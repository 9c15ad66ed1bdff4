// Package redact removes secrets from texts and errors: the one redaction
// path every error leaving a backend passes. The public API is
// backendkit.RedactText and backendkit.RedactError.
package redact

import (
	"errors"
	"regexp"
	"strings"
)

// Mask replaces a secret in redacted text.
const Mask = "xxxxx"

// secretPatterns find secrets by their shape, whatever the store: URL
// userinfo and query strings (SAS tokens travel in them: sig=…), the key=value
// spellings of passwords and keys in libpq DSNs, Azure connection strings and
// environment variables (with or without spaces around "=", quoted or not,
// URL-encoded "=" too), JSON "key": "value" pairs and Authorization headers.
var secretPatterns = []struct {
	re   *regexp.Regexp
	repl string
}{
	// scheme://user:password@host → scheme://xxxxx@host. The password may
	// hold "@" or spaces (unencoded, as users type them): everything up to
	// the last "@" before the host is replaced.
	{regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/?#"'\r\n]*@`), "${1}" + Mask + "@"},
	// URL query strings: everything from "?" to the end of the URL.
	{regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^?\s"']*)\?[^\s"']*`), "${1}?" + Mask},
	// The same keys as JSON members: "password": "…".
	{regexp.MustCompile(`(?i)("[a-z0-9_.-]*?(?:password|passwd|pass|pwd|accountkey|sharedaccesssignature|sig|secret|token|access_?key|secret_?key|api_?key)"\s*:\s*)"(?:[^"\\]|\\.)*"?`), "${1}\"" + Mask + "\""},
	// Authorization headers, to the end of the line.
	{regexp.MustCompile(`(?i)\b((?:proxy-)?authorization\s*:\s*)[^\r\n"]*`), "${1}" + Mask},
}

// keyValuePattern finds secret-bearing keys in key=value lists (libpq DSNs,
// Azure connection strings, bare SAS tokens, PGPASSWORD=…): group 3 is the
// value, quoted or up to the next separator. redactKeyValues applies it.
var keyValuePattern = regexp.MustCompile(`(?i)\b([a-z0-9_.-]*?(?:password|passwd|pass|pwd|accountkey|sharedaccesssignature|sig|secret|token|access_?key|secret_?key|api_?key))(\s*(?:=|%3d)\s*)('(?:[^'\\]|\\.)*'?|"(?:[^"\\]|\\.)*"?|[^\s;&,"']*)`)

// redactKeyValues replaces the value of every secret-bearing key=value
// pair in s. Quoting makes a text ambiguous ("pass=' password = 'x'" is one
// quoted value to one reader and a second pair to another), so every reading
// counts: the scan resumes right after each key, inside the value it just
// matched, and every value range found is masked. Overlapping or touching
// ranges merge into one replacement.
func redactKeyValues(s string) string {
	var mask []bool // lazily allocated: most texts hold no secret
	for i := 0; i < len(s); {
		loc := keyValuePattern.FindStringSubmatchIndex(s[i:])
		if loc == nil {
			break
		}
		if mask == nil {
			mask = make([]bool, len(s))
		}
		for j := i + loc[6]; j < i+loc[7]; j++ {
			mask[j] = true
		}
		i += loc[3] // resume after the key, inside its value
	}
	return Apply(s, mask)
}

// Apply returns s with every run of bytes marked in mask (len(s) long, or
// nil for none) replaced by one Mask: overlapping or touching ranges merge
// into one replacement.
func Apply(s string, mask []bool) string {
	if mask == nil {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if !mask[i] {
			b.WriteByte(s[i])
			i++
			continue
		}
		b.WriteString(Mask)
		for i < len(s) && mask[i] {
			i++
		}
	}
	return b.String()
}

// Text returns s with every secret removed: each of secrets (values a
// backend knows are secret, such as a configured password), then everything
// that has the shape of a secret: URL userinfo and query strings (sig=…),
// every key=value spelling of password, AccountKey, SharedAccessSignature
// and the like, JSON "key": "value" pairs and Authorization headers. A
// secret shorter than 4 bytes cannot be replaced safely: if one occurs in s,
// the whole text is withheld.
func Text(s string, secrets ...string) string {
	for _, sec := range secrets {
		switch {
		case sec == "" || !strings.Contains(s, sec):
		case len(sec) < 4:
			return "invalid configuration (details withheld: they may contain a secret)"
		default:
			s = strings.ReplaceAll(s, sec, Mask)
		}
	}
	for _, p := range secretPatterns {
		s = p.re.ReplaceAllString(s, p.repl)
	}
	return redactKeyValues(s)
}

// Error returns err with its message passed through Text. The result still
// matches, with errors.Is, every sentinel err matched, and errors.As reaches
// an error of type T in err's chain (the backend contract's HeldError, whose
// fields hold no secret), but it does not unwrap to err, so the unredacted
// text cannot be reached through it. nil stays nil; an error whose message
// needs no change is returned as is.
func Error[T error](err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red := Text(msg, secrets...)
	if red == msg {
		return err
	}
	return &redactedError[T]{msg: red, err: err}
}

// redactedError carries a redacted message and answers errors.Is, and
// errors.As for T, for the original chain without exposing it through Unwrap.
type redactedError[T error] struct {
	msg string
	err error
}

func (e *redactedError[T]) Error() string { return e.msg }

// Is reports whether the original error matched target.
func (e *redactedError[T]) Is(target error) bool { return errors.Is(e.err, target) }

// As reaches a T in the original chain; other types stay hidden since their
// fields may carry the secret.
func (e *redactedError[T]) As(target any) bool {
	if _, ok := target.(*T); ok {
		return errors.As(e.err, target)
	}
	return false
}
