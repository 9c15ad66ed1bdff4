package modkit

import (
	"errors"
	"net"
	"strconv"
	"strings"
)

// ErrInvalidAddress is matched by the errors of HostPort and HostPorts. Its
// text is not part of theirs: a module wrapping them with its own sentinel
// ("%w: %w") reads "mymodule: invalid options: addr: address 2 is not
// host:port".
var ErrInvalidAddress = errors.New("invalid address")

// addressError is a HostPort or HostPorts error: msg names the setting and
// says what is wrong, never quoting the value.
type addressError struct{ msg string }

func (e *addressError) Error() string { return e.msg }
func (e *addressError) Unwrap() error { return ErrInvalidAddress }

// HostPort checks that s, trimmed of white space, is a host:port address to
// dial: not empty, not a URL (no "://"), without '@', '/', '?' or '#' (user
// info, a path, a query), split by net.SplitHostPort, with a port number
// from 1 to 65535. The host may be empty (":6379", the local host) or an
// IPv6 literal in brackets ("[::1]:6379"); names are not resolved.
//
// The error matches ErrInvalidAddress and reads setting followed by the
// problem ("addr is a URL; give host:port"); with an empty setting, just
// the problem, for callers that name the value themselves. It never quotes
// s, which may hold a password.
func HostPort(setting, s string) error {
	if problem := addressProblem(strings.TrimSpace(s)); problem != "" {
		return &addressError{joinSetting(setting, problem)}
	}
	return nil
}

// HostPorts splits list at commas, trims each address, drops empty ones
// and checks the rest with HostPort's rule, returning them in order. An
// error matches ErrInvalidAddress, names the setting and the address by its
// position among the non-empty ones ("addr: address 2 is not host:port";
// "addr: no address" when there is none) and never quotes the list.
func HostPorts(setting, list string) ([]string, error) {
	var addrs []string
	for a := range strings.SplitSeq(list, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	prefix := setting
	if prefix != "" {
		prefix += ": "
	}
	if len(addrs) == 0 {
		return nil, &addressError{prefix + "no address"}
	}
	for i, a := range addrs {
		if problem := addressProblem(a); problem != "" {
			return nil, &addressError{prefix + "address " + strconv.Itoa(i+1) + " " + problem}
		}
	}
	return addrs, nil
}

// addressProblem says what is wrong with the trimmed address a, or "".
func addressProblem(a string) string {
	switch {
	case a == "":
		return "is empty"
	case strings.Contains(a, "://"):
		return "is a URL; give host:port"
	case strings.ContainsAny(a, "@/?#"):
		return "is not host:port (it must not contain '@', '/', '?' or '#')"
	}
	_, port, err := net.SplitHostPort(a)
	switch {
	case err != nil:
		return "is not host:port"
	case port == "":
		return "is not host:port (no port)"
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return "has a port that is not a number from 1 to 65535"
	}
	return ""
}

func joinSetting(setting, problem string) string {
	if setting == "" {
		return problem
	}
	return setting + " " + problem
}
