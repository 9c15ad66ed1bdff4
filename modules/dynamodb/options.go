package ddblease

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// The item's attributes. KeyAttribute is the table's partition key (a
// string); CreateTable creates the table with it, and a table created by
// other means must have it as its only key.
const (
	// KeyAttribute is the partition key: the election's name.
	KeyAttribute = "election"
	// ValueAttribute holds the lease value (backendkit.MarshalValue), a
	// string.
	ValueAttribute = "lease"
	// VersionAttribute holds the item's version, a number every write
	// raises, which conditional writes compare.
	VersionAttribute = "version"
)

// ErrTableRequired is returned by New when Options.Table is empty.
var ErrTableRequired = errors.New("ddblease: Options.Table is required")

// ErrInvalidTable is matched by Options.Validate's error for a table name
// DynamoDB would refuse.
var ErrInvalidTable = errors.New("ddblease: invalid table name")

// Options configures a Backend. The zero value is not usable: Table is
// required.
type Options struct {
	// Table is the DynamoDB table holding one item per election: 3 to 255
	// characters among a-z, A-Z, 0-9, '_', '-' and '.'. Required.
	Table string
	// SkipCreateTable, when true, never creates the table: it must exist,
	// with the string partition key KeyAttribute. When false the Backend's
	// first operation creates it (CreateTable: on-demand capacity) if it
	// is missing, and again after an operation found it missing.
	// Default: false.
	SkipCreateTable bool
}

// Validate checks opts without I/O: Table is required (ErrTableRequired)
// and must be a valid DynamoDB table name (ErrInvalidTable). New and the
// fxelection.backends.dynamodb module both call it.
func (o Options) Validate() error {
	if o.Table == "" {
		return ErrTableRequired
	}
	if p := tableProblem(o.Table); p != "" {
		return fmt.Errorf("%w: Table: %s", ErrInvalidTable, p)
	}
	return nil
}

// tableProblem says what is wrong with a table name, or "".
func tableProblem(name string) string {
	if n := utf8.RuneCountInString(name); n < 3 || n > 255 {
		return "must be 3 to 255 characters long"
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
		default:
			return "may hold only letters a-z and A-Z, digits, '_', '-' and '.'"
		}
	}
	return ""
}
