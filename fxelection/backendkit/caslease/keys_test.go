package caslease

import (
	"strings"
	"testing"
)

// testPrefix is the cache backend's default key prefix.
const testPrefix = "fxelection."

// validKey reports whether key is valid for both memcached (no spaces or
// control characters) and NATS KV ([-/_=.a-zA-Z0-9], no empty tokens).
func validKey(key string) bool {
	if key == "" || strings.HasPrefix(key, ".") || strings.HasSuffix(key, ".") || strings.Contains(key, "..") {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(KeyChar(c) || c == '.' || c == '=' || c == '/') {
			return false
		}
	}
	return true
}

var keySeeds = []string{
	"billing", "a b", "a.b", "a=b", "=41", "é", "\x00", "../../etc/passwd", "a\r\nset x 0 0 1",
	"*", ">", "fxelection.>", strings.Repeat("é", 100), strings.Repeat("x", 200),
}

func TestKeysForHostileNames(t *testing.T) {
	seen := map[string]string{}
	for _, name := range keySeeds {
		k := EscapedKey(testPrefix, name, 250)
		if !validKey(k) || len(k) > 250 {
			t.Errorf("key for %q = %q: not a valid store key", name, k)
		}
		if other, dup := seen[k]; dup {
			t.Errorf("names %q and %q share key %q", name, other, k)
		}
		seen[k] = name
	}
	if k := EscapedKey(testPrefix, "a.b", 0); k != "fxelection.a=2Eb" {
		t.Errorf("key for a.b = %q", k)
	}
	if k := EscapedKey(testPrefix, strings.Repeat("é", 100), 250); !strings.HasPrefix(k, testPrefix+HashMark) {
		t.Errorf("long name not hashed: %q", k)
	}
}

// FuzzKey: every name maps to a valid key; unhashed keys unescape to the
// name, and unescaping accepts only canonical escapes.
func FuzzKey(f *testing.F) {
	for _, s := range keySeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" {
			return
		}
		k := EscapedKey(testPrefix, name, 250)
		if !validKey(k) || len(k) > 250 {
			t.Fatalf("key %q for %q is not a valid store key", k, name)
		}
		part := strings.TrimPrefix(k, testPrefix)
		got, ok := unescapeName(part)
		if strings.HasPrefix(part, HashMark) {
			if ok {
				t.Fatalf("hashed key part %q unescaped to %q", part, got)
			}
			return
		}
		if !ok || got != name {
			t.Fatalf("unescape(%q) = %q, %v; want %q", part, got, ok, name)
		}
		// Unescaping arbitrary text never panics and, when it succeeds,
		// escapes back to the same text.
		if n, ok := unescapeName(name); ok && escapeName(n) != name {
			t.Fatalf("unescape(%q) = %q, which escapes to %q", name, n, escapeName(n))
		}
	})
}
