package electiontesting

import (
	"maps"

	"github.com/fxelection/fxelection/fxelection"
)

// SameRecord reports whether a and b agree on every field a record
// stores: election, holder, term, duration, acquisition time and metadata.
func SameRecord(a, b fxelection.Lease) bool {
	return a.Election == b.Election && a.Holder == b.Holder && a.Term == b.Term && a.Duration == b.Duration &&
		a.AcquiredAt.Equal(b.AcquiredAt) && len(a.Metadata) == len(b.Metadata) && maps.Equal(a.Metadata, b.Metadata)
}
