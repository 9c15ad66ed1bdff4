package pgident

import (
	"errors"
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	for _, s := range []string{"a", "_", "A_1", "fxelection_leases", strings.Repeat("x", 63)} {
		if !Valid(s) {
			t.Errorf("Valid(%q) = false", s)
		}
	}
	for _, s := range []string{"", "1a", "a-b", "a b", `a"b`, "a;b", "ä", "a.b", strings.Repeat("x", 64)} {
		if Valid(s) {
			t.Errorf("Valid(%q) = true", s)
		}
	}
}

func TestCheck(t *testing.T) {
	sentinel := errors.New("invalid identifier")
	if err := Check(sentinel, "Options.Table", "ok_1"); err != nil {
		t.Fatal(err)
	}
	err := Check(sentinel, "Options.Schema", "bad-name")
	if !errors.Is(err, sentinel) || !strings.Contains(err.Error(), "Options.Schema") || !strings.Contains(err.Error(), `"bad-name"`) {
		t.Fatalf("Check: %v", err)
	}
}

func TestQualified(t *testing.T) {
	if got := Quote("fxelection_wake"); got != `"fxelection_wake"` {
		t.Errorf("Quote = %s", got)
	}
	if got := Qualified("", "t"); got != `"t"` {
		t.Errorf("Qualified(\"\", t) = %s", got)
	}
	if got := Qualified("s", "t"); got != `"s"."t"` {
		t.Errorf("Qualified(s, t) = %s", got)
	}
}
