package caslease

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// KeyChar reports whether c stands for itself in a key. Everything else,
// '=' included, is escaped as '=' and two upper-case hex digits, so the
// mapping is one-to-one and keys are valid for memcached (no spaces or
// control characters) and NATS KV ([-/_=.a-zA-Z0-9]).
func KeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// HashMark starts the key part of an election whose escaped name is too
// long for the store (EscapedKey): escapes never produce "=h" (they use
// upper-case hex).
const HashMark = "=h"

// escapeName returns election with every byte outside [A-Za-z0-9_-]
// escaped.
func escapeName(election string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(election); i++ {
		c := election[i]
		if KeyChar(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('=')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0xf])
	}
	return b.String()
}

// unescapeName reverses escapeName; ok is false for a key part escapeName
// cannot have produced (a hashed name included).
func unescapeName(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case KeyChar(c):
			b.WriteByte(c)
		case c == '=' && i+2 < len(s) && isUpperHex(s[i+1]) && isUpperHex(s[i+2]):
			v, _ := hex.DecodeString(s[i+1 : i+3])
			if KeyChar(v[0]) {
				return "", false // never escaped: not canonical
			}
			b.WriteByte(v[0])
			i += 2
		default:
			return "", false
		}
	}
	return b.String(), true
}

func isUpperHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'F' }

// EscapedKey returns the store key of election under prefix: prefix and
// the name with every byte outside [A-Za-z0-9_-] escaped as '=' and two
// upper-case hex digits ('=' included, so the mapping is one-to-one), or,
// when that would be longer than maxLen (> 0), prefix, HashMark and the
// hex SHA-256 of the name. Such keys are valid memcached and NATS KV keys
// for a prefix of [A-Za-z0-9._=-].
func EscapedKey(prefix, election string, maxLen int) string {
	k := prefix + escapeName(election)
	if maxLen > 0 && len(k) > maxLen {
		sum := sha256.Sum256([]byte(election))
		k = prefix + HashMark + hex.EncodeToString(sum[:])
	}
	return k
}

// EscapedElection reverses EscapedKey for a key under prefix: ok is false
// for a key EscapedKey cannot have produced under prefix, a hashed one
// included. It suits Options.ElectionOf.
func EscapedElection(prefix, key string) (election string, ok bool) {
	name, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return "", false
	}
	return unescapeName(name)
}
