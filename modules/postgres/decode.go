package pglease

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/jackc/pgx/v5/pgtype"
)

// row is a lease row as scanned, NULLs allowed, so foreign rows decode
// into ErrInvalidRecord rather than scan errors.
type row struct {
	holder      *string
	metadata    *string
	term        *int64
	durationMS  *int64
	acquiredAt  pgtype.Timestamptz
	expiresAt   pgtype.Timestamptz
	incarnation *string // NULL when the acquiring request named none
	live        bool    // expires_at > now() (or NULL)
}

func (r *row) dest() []any {
	return []any{&r.holder, &r.metadata, &r.term, &r.durationMS, &r.acquiredAt, &r.expiresAt, &r.incarnation, &r.live}
}

// held reports whether the row is a lease somebody holds now.
func (r *row) held() bool { return r.holder != nil && r.live }

// lease decodes r and validates every field with Lease.Validate and
// backendkit.DurationFromMillis: a printable UTF-8 holder, metadata that is
// a JSON object of printable UTF-8 strings, a term in [1, MaxTerm], a
// duration in (0, MaxRecordDuration], a finite expiry, and a valid
// incarnation token when the row records one. Anything off gives an error matching ErrInvalidRecord that quotes no
// stored text.
func (r *row) lease(election string) (fxelection.Lease, error) {
	bad := func(what string) (fxelection.Lease, error) {
		return fxelection.Lease{}, fmt.Errorf("%w: election %q: %s", backendkit.ErrInvalidRecord, election, what)
	}
	switch {
	case r.holder == nil || *r.holder == "":
		return bad("empty holder")
	case r.term == nil || *r.term <= 0:
		return bad("term not positive")
	case r.durationMS == nil:
		return bad("duration_ms is NULL")
	case !r.expiresAt.Valid || r.expiresAt.InfinityModifier != pgtype.Finite:
		return bad("expires_at not a finite time")
	case r.metadata == nil:
		return bad("metadata is NULL")
	}
	dur, err := backendkit.DurationFromMillis(*r.durationMS)
	if err != nil {
		return bad("duration_ms out of range")
	}
	md, err := decodeMetadata(*r.metadata)
	if err != nil {
		return bad(err.Error())
	}
	l := fxelection.Lease{
		Holder:    *r.holder,
		Metadata:  md,
		Term:      uint64(*r.term),
		Duration:  dur,
		ExpiresAt: r.expiresAt.Time,
	}
	if r.incarnation != nil {
		l.Incarnation = *r.incarnation
	}
	if r.acquiredAt.Valid && r.acquiredAt.InfinityModifier == pgtype.Finite {
		l.AcquiredAt = r.acquiredAt.Time
	}
	if err := l.Validate(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("election %q: %w", election, err)
	}
	l.Election = election // the row's key, chosen by the caller
	return l, nil
}

// decodeMetadata decodes the metadata column's text: a JSON object of
// strings, in valid UTF-8 (encoding/json would silently turn bad bytes into
// U+FFFD). CheckLease then checks the strings themselves.
func decodeMetadata(s string) (map[string]string, error) {
	if !utf8.ValidString(s) {
		return nil, errors.New("metadata is not UTF-8")
	}
	if t := strings.TrimSpace(s); !strings.HasPrefix(t, "{") {
		return nil, errors.New("metadata is not a JSON object")
	}
	var md map[string]string
	if err := json.Unmarshal([]byte(s), &md); err != nil {
		return nil, errors.New("metadata is not a JSON object of strings")
	}
	return md, nil
}

// durationMS returns d in whole milliseconds, rounded up, at least 1.
func durationMS(d time.Duration) int64 {
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	return max(ms, 1)
}
