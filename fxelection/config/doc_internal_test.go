package config

import (
	"fmt"
	"testing"

	"github.com/fxelection/fxelection/internal/doctest"
)

// TestDocNumbers: the bounds the package doc states are the code's.
func TestDocNumbers(t *testing.T) {
	for sec, masked := range map[string]bool{"abc": false, "abcd": true} {
		msg := "dial " + sec + ": refused"
		if got := newMasker(msg, []string{sec}).text(msg); (got != msg) != masked {
			t.Errorf("a %d-byte secret masked: %v (%q), the doc says from 4 bytes", len(sec), got != msg, got)
		}
	}
	doctest.DocSays(t, ".",
		fmt.Sprintf("at most %d MiB (MaxDocumentBytes)", MaxDocumentBytes>>20),
		fmt.Sprintf("%s values (MaxValues)", thousands(MaxValues)),
		fmt.Sprintf("at most %d MiB (MaxPlaceholderFile)", MaxPlaceholderFile>>20),
		fmt.Sprintf("a value of %d bytes or more wherever any %d-byte run", window, window),
		"a shorter one of at least 4 bytes where it appears whole",
		fmt.Sprintf("at most %s (MaxPoolShards)", thousands(MaxPoolShards)),
	)
}

// thousands formats n with commas between groups of three digits.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
