package rediskey

import (
	"strings"
	"testing"
)

func TestKey(t *testing.T) {
	for _, c := range []struct{ election, want string }{
		{"billing", "fxelection:{billing}:lease"},
		{"", "fxelection:{%}:lease"},
		{"a{b}c%", "fxelection:{a%7Bb%7Dc%25}:lease"},
	} {
		if got := Key(DefaultPrefix, c.election, "lease"); got != c.want {
			t.Errorf("Key(%q) = %s, want %s", c.election, got, c.want)
		}
	}
}

// FuzzEscapeTag: the tag is never empty, holds no brace, and distinct names
// give distinct tags (the escaping can be undone).
func FuzzEscapeTag(f *testing.F) {
	for _, s := range []string{"", "billing", "%", "%25", "{", "}", "a{b}c", "%7B", "ünï"} {
		f.Add(s)
	}
	unescape := strings.NewReplacer("%25", "%", "%7B", "{", "%7D", "}")
	f.Fuzz(func(t *testing.T, s string) {
		tag := EscapeTag(s)
		if tag == "" || strings.ContainsAny(tag, "{}") {
			t.Fatalf("EscapeTag(%q) = %q", s, tag)
		}
		if s == "" {
			if tag != "%" {
				t.Fatalf("EscapeTag(\"\") = %q", tag)
			}
			return
		}
		if tag == "%" {
			t.Fatalf("EscapeTag(%q) = %%, the empty name's tag", s)
		}
		if back := unescape.Replace(tag); back != s {
			t.Fatalf("EscapeTag(%q) = %q, which unescapes to %q", s, tag, back)
		}
	})
}
