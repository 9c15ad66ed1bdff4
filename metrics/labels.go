package metrics

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxLabelBytes bounds a label value taken from an elector or a store.
const maxLabelBytes = 256

// labelValue makes s safe as a Prometheus label value, whatever an observer
// is handed (a holder read from a hostile store, a custom backend's name):
// invalid UTF-8 becomes U+FFFD, control and other non-printable characters
// are dropped, and the result is cut to at most 256 bytes on a character
// boundary. client_golang panics on invalid UTF-8 label values; after this
// it never can. Values that were already clean are returned unchanged.
func labelValue(s string) string {
	if clean(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) && r != utf8.RuneError {
			return -1
		}
		return r
	}, s)
	if len(s) > maxLabelBytes {
		cut := maxLabelBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// clean reports whether s needs no change as a label value.
func clean(s string) bool {
	if len(s) > maxLabelBytes || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
