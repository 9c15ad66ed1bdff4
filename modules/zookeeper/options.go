package zklease

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// DefaultPrefix is the znode under which elections live when
// Options.Prefix is empty.
const DefaultPrefix = "/fxelection"

// maxPrefixLen bounds Options.Prefix.
const maxPrefixLen = 512

// Options configure a Backend. The zero value means the documented defaults.
type Options struct {
	// Prefix is the znode path under which every election has its own
	// persistent node, <Prefix>/<escaped election name>, created on first
	// use, so several applications can share one ZooKeeper ensemble. It is
	// an absolute ZooKeeper path: it starts with '/', has no empty, "." or
	// ".." component and no trailing '/', is printable ASCII of at most 512
	// bytes. Default: "/fxelection".
	Prefix string

	// ACL is the access control list of every znode the Backend creates.
	// Default: zk.WorldACL(zk.PermAll) (open, ZooKeeper's usual default).
	// With digest authentication use zk.DigestACL or zk.AuthACL.
	ACL []zk.ACL

	// DisablePush turns push wake-up off for this Backend: Subscribe does
	// nothing and followers find a released, expired or transferred lease
	// at their next retry. Default (false): push on.
	DisablePush bool

	// SessionTimeout is the session timeout the connection was made with
	// (zk.Connect's argument). ZooKeeper deletes the session's lease
	// znodes once it has heard nothing from it for that long, so an
	// elector, pool or Locker on this Backend must stop believing first:
	// they refuse a RenewDeadline that is not shorter (the Backend is a
	// backendkit.RenewDeadlineLimiter; see Sessions and leases in the
	// package documentation). Between 1s and 10m. Default (0): not
	// stated, and nothing is checked; the config module always states it.
	SessionTimeout time.Duration
}

// ErrInvalidOptions is matched by the errors of Options.Validate (and so of
// New, and of the fxelection.backends.zookeeper module's Validate).
var ErrInvalidOptions = errors.New("zklease: invalid options")

// Validate checks opts without I/O (see Options.Prefix and
// Options.SessionTimeout for the rules). New
// and the fxelection.backends.zookeeper module both call it. The error
// matches ErrInvalidOptions, names the field and does not quote its value.
func (o Options) Validate() error { return o.validate(optionLabel) }

// validate is Validate with field names given by label (Options fields for
// New, JSON keys for the config module).
func (o Options) validate(label func(field string) string) error {
	if problem := prefixProblem(o.Prefix); problem != "" {
		return fmt.Errorf("%w: %s %s", ErrInvalidOptions, label("Prefix"), problem)
	}
	if st := o.SessionTimeout; st != 0 && (st < minSessionSetting || st > maxSessionSetting) {
		return fmt.Errorf("%w: %s: must be between %v and %v", ErrInvalidOptions, label("SessionTimeout"), minSessionSetting, maxSessionSetting)
	}
	return nil
}

// prefixProblem says what is wrong with p as a prefix, or "" (also for the
// empty prefix, which means the default).
func prefixProblem(p string) string {
	switch {
	case p == "":
		return ""
	case len(p) > maxPrefixLen:
		return fmt.Sprintf("is longer than %d bytes", maxPrefixLen)
	case problemChars(p):
		return "must be printable ASCII"
	case p[0] != '/':
		return "must start with '/'"
	case p == "/" || strings.HasSuffix(p, "/"):
		return "must not end with '/'"
	}
	if problem := backendkit.PrintProblem(p); problem != "" {
		return problem
	}
	for _, c := range strings.Split(p[1:], "/") {
		switch c {
		case "":
			return "must not have an empty component"
		case ".", "..":
			return `must not have a "." or ".." component`
		}
	}
	if p == "/zookeeper" || strings.HasPrefix(p, "/zookeeper/") {
		return "must not be under /zookeeper (reserved by ZooKeeper)"
	}
	return ""
}

// problemChars reports whether s has a byte outside printable ASCII.
func problemChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return true
		}
	}
	return false
}

func optionLabel(field string) string { return "Options." + field }
