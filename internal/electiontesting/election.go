package electiontesting

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
)

// Election returns a fresh election name for t, unique across runs and
// across the tests of a run: a random part and t's name, made safe for any
// store's keys (letters, digits and '-', at most 74 bytes).
func Election(t testing.TB) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("conf-%s-%s", hex.EncodeToString(b[:]), shortName(t.Name()))
}

func shortName(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s) && len(out) < 60; i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' {
			out = append(out, c)
		} else {
			out = append(out, '-')
		}
	}
	return string(out)
}
