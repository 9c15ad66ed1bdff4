// Package pgident holds the one rule by which the PostgreSQL lease backend
// (pglease) and the fence guard (pgfence) accept and quote the table,
// schema and channel names of their configuration.
package pgident

import (
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Rule describes the names Valid accepts, for error messages.
const Rule = "want a letter or underscore followed by letters, digits or underscores, at most 63 bytes"

// Valid reports whether s matches ^[A-Za-z_][A-Za-z0-9_]{0,62}$: a plain
// SQL identifier that needs no quoting and fits PostgreSQL's 63-byte limit.
func Valid(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Check returns nil when value is Valid, and otherwise an error wrapping
// sentinel that names the field (e.g. "Options.Table") and the value.
func Check(sentinel error, field, value string) error {
	if Valid(value) {
		return nil
	}
	return fmt.Errorf("%w: %s %q: %s", sentinel, field, value, Rule)
}

// Quote returns name as a quoted identifier. Callers validate it first
// (Check); quoting is a second line of defence, not a licence for other
// names.
func Quote(name string) string { return pgx.Identifier{name}.Sanitize() }

// Qualified returns the quoted table name, qualified by schema unless
// schema is empty; see Quote.
func Qualified(schema, table string) string {
	if schema == "" {
		return Quote(table)
	}
	return pgx.Identifier{schema, table}.Sanitize()
}
