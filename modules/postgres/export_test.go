package pglease

import (
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fxelection/fxelection/fxelection"
)

// RowFields are a lease row's columns as the backend scans them, for the
// row decoder's fuzz target; nil means NULL.
type RowFields struct {
	Holder, Metadata   *string
	Term, DurationMS   *int64
	ExpiresAt          *time.Time
	AcquiredAt         *time.Time
	ExpiresInfinite    bool
	ExpiresNegInfinite bool
	Incarnation        *string
}

// DecodeRow runs the backend's row decoder on f.
func DecodeRow(election string, f RowFields) (fxelection.Lease, error) {
	r := row{holder: f.Holder, metadata: f.Metadata, term: f.Term, durationMS: f.DurationMS, incarnation: f.Incarnation, live: true}
	if f.ExpiresAt != nil {
		r.expiresAt = pgtype.Timestamptz{Time: *f.ExpiresAt, Valid: true}
	}
	switch {
	case f.ExpiresInfinite:
		r.expiresAt = pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}
	case f.ExpiresNegInfinite:
		r.expiresAt = pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	}
	if f.AcquiredAt != nil {
		r.acquiredAt = pgtype.Timestamptz{Time: *f.AcquiredAt, Valid: true}
	}
	return r.lease(election)
}

// DSNSecrets exposes dsnSecrets.
var DSNSecrets = dsnSecrets
