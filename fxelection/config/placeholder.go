package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
)

// MaxPlaceholderFile bounds what one {file.PATH} placeholder reads.
const MaxPlaceholderFile = 1 << 20

// replacer replaces {env.NAME} and {file.PATH} placeholders in the strings
// a decoder stores, remembering every value it substituted (they may be
// secrets, so errors are redacted with them). Each placeholder is resolved
// once per document (a file is read once however often it is named), and
// every substituted byte is charged to the document's budget.
type replacer struct {
	lookupEnv func(string) (string, bool)
	readFile  func(string) ([]byte, error)
	refuse    bool // every placeholder is an error (Loader.RefusePlaceholders)
	budget    *budget
	resolved  map[string]resolution // by placeholder text ("env.X", "file./p")
	secrets   []string
}

type resolution struct {
	val string
	err error
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
		if r.refuse {
			kind := "{file.PATH}"
			if strings.HasPrefix(rest, "env.") {
				kind = "{env.NAME}"
			}
			return "", fmt.Errorf("%w: %s: %w", ErrPlaceholder, kind, ErrPlaceholderRefused)
		}
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			return "", fmt.Errorf("%w: unterminated placeholder (no closing brace)", ErrPlaceholder)
		}
		res, ok := r.resolved[rest[:end]]
		if !ok {
			kind, arg, _ := strings.Cut(rest[:end], ".")
			res.val, res.err = r.resolve(kind, arg)
			if r.resolved == nil {
				r.resolved = map[string]resolution{}
			}
			r.resolved[rest[:end]] = res
			if res.err == nil {
				r.secrets = append(r.secrets, res.val)
			}
		}
		if res.err != nil {
			return "", res.err
		}
		if r.budget != nil {
			if err := r.budget.charge(0, len(res.val)); err != nil {
				return "", err
			}
		}
		b.WriteString(res.val)
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
// is an error, not a silent truncation, and so is anything but a regular
// file (see openRegular).
func readBounded(path string) ([]byte, error) {
	f, err := openRegular(path)
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

// errNotRegular is the cause when a file to read is a FIFO, socket or
// device.
var errNotRegular = errors.New("not a regular file")

// openRegular opens path for reading without blocking (O_NONBLOCK: a FIFO
// with no writer opens at once instead of waiting for one) and refuses
// anything but a regular file: a directory gives syscall.EISDIR, a FIFO,
// socket or device errNotRegular, each as an *os.PathError naming path.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errNotRegular
		if fi.IsDir() {
			err = syscall.EISDIR
		}
		err = &os.PathError{Op: "open", Path: path, Err: err}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
