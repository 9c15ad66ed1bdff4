package cachelease

import (
	"errors"
	"strings"
	"testing"
)

func TestNewRejectsBadPrefixes(t *testing.T) {
	for _, p := range []string{".x", "a..b", "a b", "a:b", "a*", "a>", "é"} {
		if err := checkPrefix(p); !errors.Is(err, ErrInvalidPrefix) {
			t.Errorf("checkPrefix(%q) = %v, want ErrInvalidPrefix", p, err)
		}
	}
	for _, p := range []string{"fxelection.", "app_", "a.b.", "x=y-"} {
		if err := checkPrefix(p); err != nil {
			t.Errorf("checkPrefix(%q) = %v", p, err)
		}
	}
	if _, err := New(nil, Options{}); err == nil {
		t.Error("New(nil) succeeded")
	}
}

// TestOptionsValidate: Validate is New's prefix check (characters and, for
// a store with a key limit, length), and its errors never quote the prefix.
func TestOptionsValidate(t *testing.T) {
	limited := Capabilities{MaxKeyLen: 250}
	long := strings.Repeat("p", 200)
	for _, tc := range []struct {
		prefix string
		caps   Capabilities
		ok     bool
	}{
		{"", limited, true},
		{"a.b_c=d-", limited, true},
		{long, Capabilities{}, true},
		{long, limited, false},
		{"a b", Capabilities{}, false},
		{".a", Capabilities{}, false},
		{"a..b", Capabilities{}, false},
	} {
		err := Options{KeyPrefix: tc.prefix}.Validate(tc.caps)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrInvalidPrefix) {
			t.Errorf("Validate(%q, %+v) = %v", tc.prefix, tc.caps, err)
		}
		if err != nil && tc.prefix != "" && strings.Contains(err.Error(), tc.prefix) {
			t.Errorf("error %q quotes the prefix", err)
		}
	}
}
