package config

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	redactmask "github.com/fxelection/fxelection/fxelection/internal/redact"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

// Sentinel errors (ErrRequired, ErrInvalidValue, ErrUnknownModule,
// ErrInvalidModuleID and ErrNotProvisioned are modkit's, which modules
// return). Every error from decoding, placeholders and validation is
// a *PathError wrapping one of them (or a module's or fxelection.Config's own
// error), so callers can test with errors.Is and users read the JSON path.
var (
	// ErrSyntax means the document is not well-formed JSON.
	ErrSyntax = errors.New("syntax error")
	// ErrUnknownKey means an object has a key its type does not define
	// (usually a misspelt setting).
	ErrUnknownKey = errors.New("unknown key")
	// ErrDuplicateKey means an object has the same key twice.
	ErrDuplicateKey = errors.New("duplicate key")
	// ErrRequired means a required setting is missing, null or empty.
	ErrRequired = modkit.ErrRequired
	// ErrWrongType means a value has the wrong JSON type (a number where a
	// string belongs) or does not fit the Go type (out of range).
	ErrWrongType = errors.New("wrong type")
	// ErrInvalidValue means a value has the right JSON type but is not
	// acceptable (a malformed duration).
	ErrInvalidValue = modkit.ErrInvalidValue
	// ErrPlaceholder means an {env.NAME} or {file.PATH} placeholder could
	// not be replaced: the variable is not set, the file cannot be read, or
	// the placeholder is malformed.
	ErrPlaceholder = errors.New("placeholder")
	// ErrPlaceholderRefused means a document has a placeholder and its
	// Loader refuses them (Loader.RefusePlaceholders); such errors match
	// ErrPlaceholder too.
	ErrPlaceholderRefused = errors.New("not allowed here")
	// ErrUnknownModule means a document names a module ID nobody registered.
	ErrUnknownModule = modkit.ErrUnknownModule
	// ErrInvalidModuleID means a module ID does not have the ModuleID syntax.
	ErrInvalidModuleID = modkit.ErrInvalidModuleID
	// ErrNotProvisioned is returned by an elector's backend operations when
	// its backend module is not provisioned (before the app starts, or after
	// it stopped).
	ErrNotProvisioned = modkit.ErrNotProvisioned
)

// PathError is an error at one place in a document: Path is the JSON path
// ("elections[1].backend.addr", "" for the whole document) and Err what is
// wrong there. Its message never contains a setting's value.
type PathError struct {
	Path string
	Err  error
}

// Error returns "path: err".
func (e *PathError) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}

// Unwrap returns Err.
func (e *PathError) Unwrap() error { return e.Err }

func pathErr(path string, err error) error { return &PathError{Path: path, Err: err} }

// redact passes the errors inside err's *PathErrors (and any other error in
// it) through backendkit.RedactError, first masking every run of at least 8
// bytes of a secret (of a connection string, of its secret parts: see
// redactmask.Parts) in any of its spellings (raw, Go- and JSON-quoted,
// YAML, ASCII-only: see secretSpellings), so a module that quotes a value
// with %q, marshals it, or shortens it before printing leaks no part of it
// either. Secrets of 4 to 7 bytes are masked where a whole spelling occurs.
// The paths and the *PathError type stay reachable with errors.As.
func redact(err error, secrets []string) error {
	if err == nil {
		return err
	}
	m := newMasker(err.Error(), secrets)
	return m.redact(err)
}

func (m *masker) redact(err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, m.redact(e))
		}
		return errors.Join(out...)
	}
	if pe, ok := err.(*PathError); ok {
		return &PathError{Path: m.text(pe.Path), Err: m.redactOne(pe.Err)}
	}
	return m.redactOne(err)
}

func (m *masker) redactOne(err error) error {
	msg := err.Error()
	if red := m.text(msg); red != msg {
		err = &maskedError{msg: red, err: err}
	}
	return backendkit.RedactError(err)
}

// maskedError carries a masked message; like backendkit.RedactError's
// errors it answers errors.Is for the original chain and errors.As only for
// *backendkit.HeldError (other types' fields may hold the secret).
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }

func (e *maskedError) Is(target error) bool { return errors.Is(e.err, target) }

func (e *maskedError) As(target any) bool {
	if _, ok := target.(**backendkit.HeldError); ok {
		return errors.As(e.err, target)
	}
	return false
}

// window is how long a run of a secret must be to be masked anywhere in a
// message; shorter secrets are masked only whole.
const window = 8

// masker masks secrets in the messages of one error. It indexes the 8-byte
// windows of the whole message once, then scans each spelling of each
// secret once, so redaction costs the size of the secrets plus the message,
// never their product.
type masker struct {
	hits  map[uint64]struct{} // message windows that occur in some secret spelling
	short []string            // spellings of secrets shorter than window, longest first
}

func newMasker(msg string, secrets []string) *masker {
	m := &masker{}
	var in map[uint64]struct{}
	seen := map[string]bool{}
	var values []string
	for _, sec := range secrets {
		// A connection string's secret parts, not its scheme, host or
		// names (redactmask.Parts).
		if parts, ok := redactmask.Parts(sec); ok {
			values = append(values, parts...)
		} else {
			values = append(values, sec)
		}
	}
	for _, sec := range values {
		if seen[sec] || sec == "" {
			continue
		}
		seen[sec] = true
		for _, sp := range secretSpellings(sec) {
			if len(sp) < window {
				if len(sp) >= 4 && strings.Contains(msg, sp) {
					m.short = append(m.short, sp)
				}
				continue
			}
			if in == nil {
				in = make(map[uint64]struct{}, len(msg))
				for i := 0; i+window <= len(msg); i++ {
					in[word(msg[i:])] = struct{}{}
				}
			}
			if len(in) == 0 {
				continue
			}
			for i := 0; i+window <= len(sp); i++ {
				w := word(sp[i:])
				if _, ok := in[w]; ok {
					if m.hits == nil {
						m.hits = map[uint64]struct{}{}
					}
					m.hits[w] = struct{}{}
				}
			}
		}
	}
	sort.Slice(m.short, func(i, j int) bool { return len(m.short[i]) > len(m.short[j]) })
	return m
}

func word(s string) uint64 { return binary.LittleEndian.Uint64([]byte(s[:window])) }

// text masks every secret run in s with backendkit.Redacted.
func (m *masker) text(s string) string {
	if len(m.hits) > 0 && len(s) >= window {
		var mask []bool
		for i := 0; i+window <= len(s); i++ {
			if _, ok := m.hits[word(s[i:])]; ok {
				if mask == nil {
					mask = make([]bool, len(s))
				}
				for j := i; j < i+window; j++ {
					mask[j] = true
				}
			}
		}
		s = redactmask.Apply(s, mask)
	}
	for _, sp := range m.short {
		s = strings.ReplaceAll(s, sp, backendkit.Redacted)
	}
	return s
}

// secretSpellings returns the ways sec can appear in a message: as is,
// inside Go's %q, %+q and %#q quoting, inside JSON quoting (with and without
// HTML escaping), as YAML writes it, and with invalid UTF-8 dropped or
// replaced (as shortening and quoting helpers do). A prefix or any other
// part of a spelling is masked by the window rule.
func secretSpellings(sec string) []string {
	out := []string{sec}
	add := func(s string) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	unquote := func(q string) string {
		if len(q) >= 2 {
			return q[1 : len(q)-1]
		}
		return q
	}
	add(unquote(strconv.Quote(sec)))
	add(unquote(strconv.QuoteToASCII(sec)))
	add(unquote(strconv.QuoteToGraphic(sec)))
	if j, err := json.Marshal(sec); err == nil {
		add(unquote(string(j)))
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(sec) == nil {
		add(unquote(strings.TrimSuffix(b.String(), "\n")))
	}
	if y, err := yaml.Marshal(sec); err == nil {
		ys := strings.TrimSuffix(string(y), "\n")
		add(ys)
		add(unquote(ys))
	}
	if !utf8.ValidString(sec) {
		add(strings.ToValidUTF8(sec, ""))
		add(strings.ToValidUTF8(sec, "\uFFFD"))
	}
	return out
}

// path is a place in a document, built one step per value as decoding
// descends and turned into text ("elections[1].backend.addr") only when an
// error names it, so decoding costs the same whatever the keys' lengths.
// The root is a nil *path.
type path struct {
	parent *path
	key    string // an object key, when idx < 0
	idx    int    // an array index, or -1
}

func (p *path) at(k string) *path { return &path{parent: p, key: k, idx: -1} }

func (p *path) index(i int) *path { return &path{parent: p, idx: i} }

// String returns the JSON path; long keys are shortened (see quoteKey).
func (p *path) String() string {
	var steps []*path
	for q := p; q != nil; q = q.parent {
		steps = append(steps, q)
	}
	var b strings.Builder
	for i := len(steps) - 1; i >= 0; i-- {
		q := steps[i]
		switch {
		case q.idx >= 0:
			b.WriteString("[" + strconv.Itoa(q.idx) + "]")
		case isIdent(q.key) && len(q.key) <= maxKeyInPath:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(q.key)
		default:
			b.WriteString("[" + quoteKey(q.key) + "]")
		}
	}
	return b.String()
}

// maxKeyInPath is the longest key an error line shows whole.
const maxKeyInPath = 64

// joinPath appends key to path ("a" + "b" = "a.b"); keys that are not
// identifiers, or longer than 64 bytes, are quoted and shortened
// (`metadata["a b"]`).
func joinPath(path, key string) string {
	if !isIdent(key) || len(key) > maxKeyInPath {
		return path + "[" + quoteKey(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '-')) {
			return false
		}
	}
	return true
}

// quoteKey quotes a key for a path, escaping anything unprintable, and
// shortening long keys: keys are names, not values, but they come from the
// document and end up in terminals.
func quoteKey(k string) string {
	if len(k) > maxKeyInPath {
		k = strings.ToValidUTF8(k[:maxKeyInPath], "") + "…"
	}
	return strconvQuote(k)
}

// scope holds the nested modules one top-level module provisioned, to be
// cleaned up after it.
type scope struct {
	secrets  []string
	cleanups []func(ctx context.Context) error
	context  modkit.Context // what the top-level module's Provision got; nested ones get it too
}

func isContextCleanerUpper(m modkit.Module) bool {
	_, ok := m.(modkit.ContextCleanerUpper)
	return ok
}

// provisionBackend is Context.ProvisionBackend for a module provisioned
// in scope s: Provision (if implemented), then Backend, with m's Cleanup
// (or CleanupContext) registered to run after the calling module's own.
func (s *scope) provisionBackend(m modkit.BackendModule) (fxelection.Backend, error) {
	id := m.ElectionModule().ID
	wrap := func(op string, err error) error {
		return fmt.Errorf("nested %s %s: %w", id, op, redact(err, s.secrets))
	}
	if _, ok := m.(modkit.CleanerUpper); ok || isContextCleanerUpper(m) {
		s.cleanups = append(s.cleanups, func(ctx context.Context) error {
			if err := safeCall(cleanupFunc(m, ctx)); err != nil {
				return wrap("cleanup", err)
			}
			return nil
		})
	}
	if prov, ok := m.(modkit.Provisioner); ok {
		if err := safeCall(func() error { return prov.Provision(s.context) }); err != nil {
			return nil, wrap("provision", err)
		}
	}
	var b fxelection.Backend
	err := safeCall(func() error {
		var err error
		b, err = m.Backend()
		if err == nil && b == nil {
			err = errors.New("nil Backend")
		}
		return err
	})
	if err != nil {
		return nil, wrap("backend", err)
	}
	return b, nil
}

// cleanup runs the nested modules' cleanups, last provisioned first, once,
// each with ctx (the hook's context).
func (s *scope) cleanup(ctx context.Context) error {
	var errs []error
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		errs = append(errs, s.cleanups[i](ctx))
	}
	s.cleanups = nil
	return errors.Join(errs...)
}

// safeCall runs fn, turning a panic into an error.
func safeCall(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn()
}
