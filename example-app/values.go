package main

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

// The kinds of flag value. Each Set validates its kind's rule and fails
// with a badValue, which parseArgs reports naming the flag (and the
// environment variable the value came from).

// badValue is a flag value its kind rejects. shown is the value as it may
// be echoed ("" to echo nothing); problem says what is wrong.
type badValue struct{ shown, problem string }

func (e *badValue) Error() string {
	if e.shown == "" {
		return e.problem
	}
	return "(" + e.shown + ") " + e.problem
}

// valueProblem is the one-line usage error for a value rejected by Set.
func valueProblem(label string, err error) error {
	return usageError{label + " " + oneLine(err.Error())}
}

// show quotes a raw value for an error message: redacted, escaped and
// shortened.
func show(s string) string {
	s = backendkit.RedactText(s)
	const maxShown = 64
	if len(s) > maxShown {
		cut := maxShown
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "…"
	}
	return strconv.Quote(s)
}

// textFlag is any string.
type textFlag struct{ p *string }

func (f textFlag) String() string {
	if f.p == nil {
		return ""
	}
	return *f.p
}
func (f textFlag) Set(s string) error { *f.p = s; return nil }
func (textFlag) kind() string         { return "string" }

// choiceFlag is one of a fixed set of words (or empty, if emptyOK).
type choiceFlag struct {
	p       *string
	choices func() []string
	emptyOK bool
}

func (f choiceFlag) String() string {
	if f.p == nil {
		return ""
	}
	return *f.p
}

func (f choiceFlag) Set(s string) error {
	if (s == "" && f.emptyOK) || slices.Contains(f.choices(), s) {
		*f.p = s
		return nil
	}
	return &badValue{show(s), "must be one of: " + strings.Join(f.choices(), ", ")}
}
func (choiceFlag) kind() string { return "word" }

// durationFlag is a duration in [min, maxDuration]; min defaults to the
// smallest positive duration. Zero is accepted only if zeroOK: it never
// silently means a default.
type durationFlag struct {
	p      *time.Duration
	min    time.Duration
	zeroOK bool
}

func (f durationFlag) String() string {
	if f.p == nil {
		return ""
	}
	return f.p.String()
}

func (f durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return &badValue{show(s), "is not a duration (e.g. 15s, 500ms)"}
	case d == 0 && f.zeroOK:
	case d < 0 && f.zeroOK:
		return &badValue{d.String(), "must not be negative"}
	case d <= 0:
		return &badValue{d.String(), "must be positive"}
	case d < f.min:
		return &badValue{d.String(), "must be at least " + f.min.String()}
	case d > maxDuration:
		return &badValue{d.String(), "must be at most " + maxDuration.String()}
	}
	*f.p = d
	return nil
}
func (durationFlag) kind() string { return "duration" }

// intFlag is an integer in [min, max], or, with check, one check accepts
// (the rule of the setting the flag feeds, so that a flag and a document
// refuse the same values).
type intFlag struct {
	p        *int
	min, max int
	check    func(int) error
}

func (f intFlag) String() string {
	if f.p == nil {
		return ""
	}
	return strconv.Itoa(*f.p)
}

func (f intFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return &badValue{show(s), "is not an integer"}
	}
	if f.check != nil {
		if err := f.check(n); err != nil {
			return &badValue{strconv.Itoa(n), err.Error()}
		}
	} else if n < f.min || n > f.max {
		return &badValue{strconv.Itoa(n), fmt.Sprintf("must be between %d and %d", f.min, f.max)}
	}
	*f.p = n
	return nil
}
func (intFlag) kind() string { return "int" }

// boolFlag is true or false; given without a value it is true.
type boolFlag struct{ p *bool }

func (f boolFlag) String() string {
	if f.p == nil {
		return ""
	}
	return strconv.FormatBool(*f.p)
}

func (f boolFlag) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return &badValue{show(s), "is not true or false"}
	}
	*f.p = b
	return nil
}
func (boolFlag) IsBoolFlag() bool { return true }
func (boolFlag) kind() string     { return "" }

// addrFlag is host:port as modkit.HostPort checks it (a port from 1 to
// 65535; a comma-separated list of them if list), or empty. A bad value is
// refused without echoing it: it may carry a password.
type addrFlag struct {
	p    *string
	list bool
}

func (f addrFlag) String() string {
	if f.p == nil {
		return ""
	}
	return *f.p
}

func (f addrFlag) Set(s string) error {
	parts := []string{s}
	switch {
	case s == "":
		parts = nil // not set (--http "" turns HTTP off)
	case f.list:
		parts = strings.Split(s, ",")
	}
	for _, a := range parts {
		if err := modkit.HostPort("", a); err != nil {
			return &badValue{"", err.Error()} // never echoed: it may hold a password
		}
	}
	*f.p = s
	return nil
}
func (addrFlag) kind() string { return "host:port" }

// adminFlag is --admin: "unix/PATH" (a unix socket), host:port, or "off"
// (or empty) for none, stored as "".
type adminFlag struct{ p *string }

func (f adminFlag) String() string {
	if f.p == nil || *f.p == "" {
		return "off"
	}
	return *f.p
}

func (f adminFlag) Set(s string) error {
	if path, ok := socketPath(s); ok {
		switch {
		case path == "":
			return &badValue{"", "unix/: the socket's path is missing"}
		case len(path) > maxSocketPath:
			return &badValue{"", fmt.Sprintf("unix/: the socket's path is longer than %d bytes", maxSocketPath)}
		case strings.IndexByte(path, 0) >= 0:
			return &badValue{"", "unix/: the socket's path holds a NUL byte"}
		}
		*f.p = s
		return nil
	}
	if s == "off" {
		s = ""
	}
	return addrFlag{p: f.p}.Set(s)
}

func (adminFlag) kind() string { return "unix/PATH|host:port|off" }

// modeFlag is a file's permission bits in octal (0600), granting nothing
// to others: a socket's, where a bit decides who may connect.
type modeFlag struct{ p *os.FileMode }

func (f modeFlag) String() string {
	if f.p == nil {
		return ""
	}
	return fmt.Sprintf("%04o", uint32(*f.p))
}

func (f modeFlag) Set(s string) error {
	n, err := strconv.ParseUint(s, 8, 32)
	switch {
	case err != nil || n > 0o777:
		return &badValue{show(s), "is not permission bits in octal (e.g. 0600, 0660)"}
	case n&0o007 != 0:
		return &badValue{fmt.Sprintf("%04o", n), "must grant nothing to others (use a group: 0660)"}
	case n&0o600 != 0o600:
		return &badValue{fmt.Sprintf("%04o", n), "must let the owner read and write (0600)"}
	}
	*f.p = os.FileMode(n)
	return nil
}
func (modeFlag) kind() string { return "octal" }

// loopback reports whether addr's host is a loopback IP address or
// "localhost".
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// oneLine escapes every non-printable rune (and invalid byte) of s as Go
// does in a quoted string, so s prints as exactly one line.
func oneLine(s string) string {
	if printable(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			fmt.Fprintf(&b, `\x%02x`, s[i])
		} else if unicode.IsPrint(r) {
			b.WriteRune(r)
		} else {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// escape returns store-controlled text for a terminal: as is when it is
// printable UTF-8 (no control characters, escape sequences or line breaks)
// and cannot be mistaken for a quoted string, else quoted with
// strconv.Quote, which escapes everything non-printable.
func escape(s string) string {
	if printable(s) && !strings.HasPrefix(s, `"`) {
		return s
	}
	return strconv.Quote(s)
}

// printable reports whether s is valid UTF-8 of printable runes only
// (unicode.IsPrint: no control, format or line-separator characters).
func printable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
