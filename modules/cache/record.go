package cachelease

import (
	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// MaxValueBytes bounds a stored value: a lease record is small, anything
// larger is foreign and is rejected without being parsed.
const MaxValueBytes = backendkit.MaxValueBytes

// encode returns the value for l: backendkit.MarshalValue, the record plus
// a released flag (a released lease keeps its term in the store) and a
// per-write nonce, so that two writes never store the same bytes.
func encode(l fxelection.Lease, released bool) ([]byte, error) {
	return backendkit.MarshalValue(l, released)
}

// decode parses a stored value with backendkit.UnmarshalValue. Anything but
// a valid value around a valid record of election (of any election, with
// election "") gives an error matching backendkit.ErrInvalidRecord. The
// error quotes no stored bytes.
func decode(value []byte, election string) (backendkit.Value, error) {
	return backendkit.UnmarshalValue(value, election)
}
