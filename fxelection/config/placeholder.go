package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxPlaceholderFile bounds what one {file.PATH} placeholder reads.
const MaxPlaceholderFile = 1 << 20

// replacer replaces {env.NAME} and {file.PATH} placeholders in a tree's
// string values, remembering every value it substituted (they may be
// secrets, so errors are redacted with them).
type replacer struct {
	lookupEnv func(string) (string, bool)
	readFile  func(string) ([]byte, error)
	secrets   []string
	errs      []error
}

// walk replaces placeholders in n's strings in place (object values and
// array elements; never keys) and returns the new n.
func (r *replacer) walk(path string, n any) any {
	switch n := n.(type) {
	case string:
		s, err := r.replace(n)
		if err != nil {
			if len(r.errs) < maxErrors {
				r.errs = append(r.errs, pathErr(path, err))
			}
			return n
		}
		return s
	case []any:
		for i, e := range n {
			n[i] = r.walk(fmt.Sprintf("%s[%d]", path, i), e)
		}
	case *object:
		for _, k := range n.keys {
			n.vals[k] = r.walk(joinPath(path, k), n.vals[k])
		}
	}
	return n
}

// replace substitutes every placeholder in s. Only "{env." and "{file."
// open a placeholder; other braces (Redis hash tags such as "{app}") are
// literal. The error names the variable or file, never a value.
func (r *replacer) replace(s string) (string, error) {
	if !strings.Contains(s, "{env.") && !strings.Contains(s, "{file.") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := indexPlaceholder(s)
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		rest := s[i+1:]
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			return "", fmt.Errorf("%w: unterminated placeholder (no closing brace)", ErrPlaceholder)
		}
		kind, arg, _ := strings.Cut(rest[:end], ".")
		val, err := r.resolve(kind, arg)
		if err != nil {
			return "", err
		}
		r.secrets = append(r.secrets, val)
		b.WriteString(val)
		s = rest[end+1:]
	}
}

func indexPlaceholder(s string) int {
	e, f := strings.Index(s, "{env."), strings.Index(s, "{file.")
	switch {
	case e < 0:
		return f
	case f < 0:
		return e
	}
	return min(e, f)
}

func (r *replacer) resolve(kind, arg string) (string, error) {
	switch kind {
	case "env":
		if !validEnvName(arg) {
			return "", fmt.Errorf("%w: {env.NAME}: invalid variable name %s", ErrPlaceholder, quoteKey(arg))
		}
		lookup := r.lookupEnv
		if lookup == nil {
			lookup = os.LookupEnv
		}
		v, ok := lookup(arg)
		if !ok {
			return "", fmt.Errorf("%w: environment variable %s is not set", ErrPlaceholder, arg)
		}
		return v, nil
	default: // "file"
		if arg == "" {
			return "", fmt.Errorf("%w: {file.PATH}: empty path", ErrPlaceholder)
		}
		read := r.readFile
		if read == nil {
			read = readBounded
		}
		data, err := read(arg)
		if err != nil {
			// os errors name the path, not the content; keep only their cause.
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return "", fmt.Errorf("%w: file %s: %w", ErrPlaceholder, quoteKey(arg), err)
		}
		// Secret files usually end with a newline the secret does not have.
		data = bytes.TrimSuffix(data, []byte{'\n'})
		data = bytes.TrimSuffix(data, []byte{'\r'})
		return string(data), nil
	}
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// readBounded reads at most MaxPlaceholderFile bytes of path; a longer file
// is an error, not a silent truncation.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxPlaceholderFile+1))
	if err != nil {
		return nil, err // an *os.PathError naming path
	}
	if len(data) > MaxPlaceholderFile {
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("larger than %d bytes", MaxPlaceholderFile)}
	}
	return data, nil
}
