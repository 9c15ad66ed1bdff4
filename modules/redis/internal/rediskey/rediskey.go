// Package rediskey holds the one key layout the Redis lease backend
// (redislease) and the fence guard (redisfence) share, so that an
// election's lease, term and fence keys carry the same Redis Cluster hash
// tag.
package rediskey

import "strings"

// DefaultPrefix is the key prefix both packages use when none is set.
const DefaultPrefix = "fxelection:"

// EscapeTag percent-escapes '%', '{' and '}' so the election name makes a
// non-empty hash tag that ends where the name does, and distinct names stay
// distinct. The empty name becomes "%", which no escaped name can be.
func EscapeTag(s string) string {
	if s == "" {
		return "%"
	}
	if !strings.ContainsAny(s, "%{}") {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%':
			sb.WriteString("%25")
		case '{':
			sb.WriteString("%7B")
		case '}':
			sb.WriteString("%7D")
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// HashTag returns election's hash tag, e.g. "{billing}".
func HashTag(election string) string { return "{" + EscapeTag(election) + "}" }

// Key returns prefix + HashTag(election) + ":" + kind, e.g.
// "fxelection:{billing}:lease".
func Key(prefix, election, kind string) string {
	return prefix + HashTag(election) + ":" + kind
}
