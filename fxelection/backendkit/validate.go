package backendkit

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"time"
)

// Limits on what a decoded record may hold. Records come from a store that
// other programs or operators may have written: everything
// in them is validated before the elector, metrics, logs or a terminal see
// it.
const (
	// MaxTerm is the largest fencing term: every store can represent it
	// (PostgreSQL bigint, Lua's integers, JSON numbers read as int64).
	// Backends refuse to go past it rather than wrap.
	MaxTerm = math.MaxInt64
	// MaxRecordDuration is the longest lease duration a record may state.
	// Longer ones (and any that would overflow time.Duration) are invalid.
	MaxRecordDuration = 365 * 24 * time.Hour
	// MaxIncarnationLen is the longest incarnation token accepted, in bytes.
	MaxIncarnationLen = 64
)

// ErrTermExhausted means an election's term reached MaxTerm: the backend
// refuses to hand out another term rather than wrap to a lower one.
var ErrTermExhausted = errors.New("fxelection: fencing term exhausted")

// Validate checks a lease decoded from a store: election name, holder and
// metadata follow the text rules Config.Validate and
// AcquireRequest.Validate apply (one function for all three: valid,
// printable UTF-8 within MaxNameLen, MaxIdentityLen and MaxMetadataBytes,
// no empty metadata key);
// the incarnation, when set, is at most MaxIncarnationLen bytes of ASCII
// letters, digits, '-', '_' and '.';
// the term is in [1, MaxTerm]; the duration is in (0, MaxRecordDuration];
// AcquiredAt, when set, falls in the years 1 to 9999 (UTC).
// An empty Election is accepted (some stores keep it in the key, not the
// record). The error matches ErrInvalidRecord, names the field and what
// is wrong with it ("holder: must be printable (byte 3 is a control
// character)") and quotes no stored value but a metadata key that is
// itself valid text.
//
// Every backend calls it on every record it decodes, and the Watcher on
// every lease a backend returns, so nothing downstream (metrics labels, logs,
// HTTP responses, terminals) ever sees an unchecked value.
func (l Lease) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidRecord, fmt.Sprintf(format, args...))
	}
	if field, problem := checkTexts(recordFields, l.Election, l.Holder, l.Metadata); field != "" {
		return bad("%s: %s", field, problem)
	}
	if l.Incarnation != "" && !validIncarnation(l.Incarnation) {
		return bad("incarnation: %s", incarnationProblem)
	}
	switch {
	case l.Term == 0:
		return bad("zero term")
	case l.Term > MaxTerm:
		return bad("term %d exceeds %d", l.Term, uint64(MaxTerm))
	case l.Duration <= 0:
		return bad("non-positive duration")
	case l.Duration > MaxRecordDuration:
		return bad("duration exceeds %v", MaxRecordDuration)
	}
	if !l.AcquiredAt.IsZero() {
		// Outside these years the record could not be encoded again, so
		// the holder's own next write would fail.
		if y := l.AcquiredAt.UTC().Year(); y < 1 || y > 9999 {
			return bad("acquisition time out of range")
		}
	}
	return nil
}

// incarnationProblem is what is wrong with an invalid incarnation token.
var incarnationProblem = fmt.Sprintf("must be at most %d ASCII letters, digits, '-', '_' or '.'", MaxIncarnationLen)

// validIncarnation reports whether s is a non-empty incarnation token of at
// most MaxIncarnationLen bytes of [A-Za-z0-9._-]: safe in every store's
// record format, key, header and metadata value.
func validIncarnation(s string) bool {
	if s == "" || len(s) > MaxIncarnationLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

// NewIncarnation returns a fresh random incarnation token (16 lowercase hex
// digits) for AcquireRequest.Incarnation. Electors make their own; callers
// of a Backend without an Elector use it to name each run of theirs.
func NewIncarnation() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}
