package cachelease

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// envelopeFormat is the version of the value this package writes.
const envelopeFormat = 1

// MaxValueBytes bounds a stored value: a lease record is small, anything
// larger is foreign and is rejected without being parsed.
const MaxValueBytes = 64 << 10

// envelope is the stored value: the core's record plus a released flag (a
// released lease keeps its term in the store) and a per-write nonce, so
// that two writes never store the same bytes.
type envelope struct {
	Format   int             `json:"fxelection_cache"`
	Released bool            `json:"released"`
	Write    string          `json:"write"`
	Record   json.RawMessage `json:"record"`
}

// stored is a decoded value.
type stored struct {
	lease    fxelection.Lease
	released bool
}

// encode returns the value for l.
func encode(l fxelection.Lease, released bool) ([]byte, error) {
	rec, err := backendkit.MarshalRecord(l)
	if err != nil {
		return nil, err
	}
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("write nonce: %w", err)
	}
	b, err := json.Marshal(envelope{Format: envelopeFormat, Released: released, Write: hex.EncodeToString(nonce[:]), Record: rec})
	if err != nil {
		return nil, fmt.Errorf("encode lease value: %w", err)
	}
	return b, nil
}

// decode parses a stored value. Anything but a valid envelope around a
// valid record of election (validated by backendkit.UnmarshalRecord, which
// calls CheckLease) gives an error matching fxelection.ErrInvalidRecord.
// The error quotes no stored bytes.
func decode(value []byte, election string) (stored, error) {
	s, err := decodeValue(value)
	if err != nil {
		return stored{}, err
	}
	if s.lease.Election != election {
		return stored{}, fmt.Errorf("%w: record of election %q", fxelection.ErrInvalidRecord, s.lease.Election)
	}
	return s, nil
}

// decodeValue is decode without the check of the election name.
func decodeValue(value []byte) (stored, error) {
	if len(value) > MaxValueBytes {
		return stored{}, fmt.Errorf("%w: value larger than %d bytes", fxelection.ErrInvalidRecord, MaxValueBytes)
	}
	var env envelope
	if err := json.Unmarshal(value, &env); err != nil {
		return stored{}, fmt.Errorf("%w: not a cache lease value", fxelection.ErrInvalidRecord)
	}
	if env.Format != envelopeFormat {
		return stored{}, fmt.Errorf("%w: unknown value format %d", fxelection.ErrInvalidRecord, env.Format)
	}
	if len(env.Record) == 0 {
		return stored{}, fmt.Errorf("%w: no record", fxelection.ErrInvalidRecord)
	}
	l, err := backendkit.UnmarshalRecord(env.Record)
	if err != nil {
		return stored{}, err
	}
	if l.Election == "" {
		return stored{}, fmt.Errorf("%w: record without election", fxelection.ErrInvalidRecord)
	}
	return stored{lease: l, released: env.Released}, nil
}

// keyChar reports whether c stands for itself in a key. Everything else,
// '=' included, is escaped as '=' and two upper-case hex digits, so the
// mapping is one-to-one and keys are valid for memcached (no spaces or
// control characters) and NATS KV ([-/_=.a-zA-Z0-9]).
func keyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// hashMark starts the key part of an election whose escaped name is too
// long for the store: escapes never produce "=h" (they use upper-case hex).
const hashMark = "=h"

// escapeName returns election with every byte outside [A-Za-z0-9_-]
// escaped.
func escapeName(election string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(election); i++ {
		c := election[i]
		if keyChar(c) {
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
		case keyChar(c):
			b.WriteByte(c)
		case c == '=' && i+2 < len(s) && isUpperHex(s[i+1]) && isUpperHex(s[i+2]):
			v, _ := hex.DecodeString(s[i+1 : i+3])
			if keyChar(v[0]) {
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

// keyFor returns the store key of election under prefix: the escaped name,
// or, when that would exceed maxLen, a SHA-256 of the name.
func keyFor(prefix, election string, maxLen int) string {
	k := prefix + escapeName(election)
	if maxLen > 0 && len(k) > maxLen {
		sum := sha256.Sum256([]byte(election))
		k = prefix + hashMark + hex.EncodeToString(sum[:])
	}
	return k
}
