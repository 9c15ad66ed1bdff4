package backendkit

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The text rules: one source for every name, identity and metadata entry
// the library accepts, whether from a Config (Config.Validate), a request
// to a backend (AcquireRequest.Validate) or a record read from a store
// (Lease.Validate, which every decoder calls). Only the field names in the
// errors differ between callers, so that what New accepts every backend
// can store and every follower can read back.
//
// A text is valid UTF-8 and printable (unicode.IsPrint: letters, marks,
// numbers, punctuation, symbols and the ASCII space; no control, format or
// line-separator characters, no tab). Problems are described by position,
// never by quoting the text, which may be a secret or a terminal escape.

// Limits on names, identities and metadata: those of a Config, a request to a
// backend and a record read from a store alike.
const (
	// MaxNameLen is the longest election name accepted, in bytes.
	MaxNameLen = 200
	// MaxIdentityLen is the longest identity accepted, in bytes.
	MaxIdentityLen = 200
	// MaxMetadataBytes bounds the total size of Metadata keys and values.
	MaxMetadataBytes = 4096
)

// textFields names the fields of one caller's errors.
type textFields struct {
	name, identity, metadata string
	// nameOptional accepts an empty name (records whose store keeps the
	// election in the key).
	nameOptional bool
}

var (
	configFields  = textFields{name: "Name", identity: "Identity", metadata: "Metadata"}
	requestFields = textFields{name: "Election", identity: "Identity", metadata: "Metadata"}
	recordFields  = textFields{name: "election", identity: "holder", metadata: "metadata", nameOptional: true}
)

// CheckConfigTexts applies the text rules to a Config's Name, Identity and
// Metadata (the rules Lease.Validate and AcquireRequest.Validate apply),
// returning the first problem as (field, what is wrong), or ("", "").
func CheckConfigTexts(name, identity string, md map[string]string) (field, problem string) {
	return checkTexts(configFields, name, identity, md)
}

// NameProblem describes what is wrong with an election name under the text
// rules, or returns "" if nothing is. It is the rule of the names in records
// and requests, which may be names the library derived (see UserNameProblem);
// a name a user gives is checked with UserNameProblem.
func NameProblem(name string) string { return textProblem(name, MaxNameLen) }

// ReservedNameChar is the character no user-given name may contain: the
// library derives the names of its own records from user-given names with
// it ("<election>#preempt", semaphore slot "<name>#<i>", pool shard
// "<pool>#shard/<shard>" and member slot "<pool>#member/<k>"), so that no
// name a user gives is ever one of them.
const ReservedNameChar = '#'

// UserNameProblem describes what is wrong with a name a user gives (an
// election's Config.Name, a lock key, a semaphore, pool or shard name, a
// watched election, a job lock's prefix and key), or returns "" if nothing
// is: the text rules of NameProblem, and no ReservedNameChar. Every entry
// point that accepts such a name applies it; records read from a store and
// requests to a backend follow NameProblem, which accepts the derived names.
func UserNameProblem(name string) string {
	if p := NameProblem(name); p != "" {
		return p
	}
	if i := strings.IndexRune(name, ReservedNameChar); i >= 0 {
		return "must not contain " + strconv.QuoteRune(ReservedNameChar) + " (byte " + strconv.Itoa(i) +
			" is; the library names its own records with it)"
	}
	return ""
}

// PrintProblem describes the first byte of s that breaks the text rules
// (invalid UTF-8, or a character that is not printable), or returns "" if
// none does. For a backend's own settings that must be text under the same
// rule as names (etcd's key prefix): the problem reads "must be printable
// (byte 3 is a control character)" and never quotes s.
func PrintProblem(s string) string { return printProblem(s) }

// checkTexts applies the text rules to an election name, an identity and
// metadata, returning the first problem as (field, what is wrong), or
// ("", "") when there is none.
func checkTexts(f textFields, name, identity string, md map[string]string) (field, problem string) {
	if name != "" || !f.nameOptional {
		if p := textProblem(name, MaxNameLen); p != "" {
			return f.name, p
		}
	}
	if p := textProblem(identity, MaxIdentityLen); p != "" {
		return f.identity, p
	}
	if p := metadataProblem(md); p != "" {
		return f.metadata, p
	}
	return "", ""
}

// textProblem describes what is wrong with a required text of at most max
// bytes, or returns "" if nothing is.
func textProblem(s string, max int) string {
	switch {
	case s == "":
		return "required"
	case len(s) > max:
		return fmt.Sprintf("must be at most %d bytes (is %d)", max, len(s))
	}
	return printProblem(s)
}

// printProblem describes the first byte of s that breaks the text rules
// (invalid UTF-8 or a non-printable character), or returns "".
func printProblem(s string) string {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !isEncodedRuneError(s[i:]):
			return "must be valid UTF-8 (byte " + strconv.Itoa(i) + " is not)"
		case unicode.IsControl(r):
			return "must be printable (byte " + strconv.Itoa(i) + " is a control character)"
		case !unicode.IsPrint(r):
			return "must be printable (byte " + strconv.Itoa(i) + " starts a non-printable character)"
		}
	}
	return ""
}

// isEncodedRuneError reports whether s starts with U+FFFD spelt out in
// UTF-8 (valid text), not with a byte that decodes to it.
func isEncodedRuneError(s string) bool {
	_, n := utf8.DecodeRuneInString(s)
	return n == 3
}

// metadataProblem describes what is wrong with metadata, or returns "":
// no empty key, keys and values valid printable UTF-8 (values may be
// empty), at most MaxMetadataBytes of keys and values together. A key is
// named in the error only when it is itself valid; values never are.
func metadataProblem(md map[string]string) string {
	size := 0
	bad := false
	for k, v := range md {
		size += len(k) + len(v)
		if k == "" || printProblem(k) != "" || printProblem(v) != "" {
			bad = true
		}
	}
	if bad {
		// Sorted, so that the error names the same key every time.
		for _, k := range slices.Sorted(maps.Keys(md)) {
			switch {
			case k == "":
				return "empty key"
			case printProblem(k) != "":
				return "a key " + printProblem(k)
			case printProblem(md[k]) != "":
				return "the value of key " + strconv.Quote(k) + " " + printProblem(md[k])
			}
		}
	}
	if size > MaxMetadataBytes {
		return fmt.Sprintf("must be at most %d bytes of keys and values (is %d)", MaxMetadataBytes, size)
	}
	return ""
}
