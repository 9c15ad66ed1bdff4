package doctest

import (
	"slices"
	"testing"
)

func TestMissingPhrases(t *testing.T) {
	doc, err := packageDoc("testdata/settings")
	if err != nil {
		t.Fatal(err)
	}
	got := missingPhrases(doc, []string{"a default of 5s", "states a  default", "doc states a default of 5s and lists its module's", "a default of 6s"})
	if want := []string{"a default of 6s"}; !slices.Equal(got, want) {
		t.Errorf("missing %q, want %q", got, want)
	}
}

func TestDocSettings(t *testing.T) {
	doc, err := packageDoc("testdata/settings")
	if err != nil {
		t.Fatal(err)
	}
	got, err := docSettings(doc)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"addr", "username", "password", "prefix"}; !slices.Equal(got, want) {
		t.Errorf("settings %q, want %q", got, want)
	}
	if _, err := docSettings("Package x.\n\n# Other\n\n  - a: b\n"); err == nil {
		t.Error("no error for a doc without the section")
	}
	if _, err := docSettings("Package x.\n\n# Configuration\n\n  - a b\n"); err == nil {
		t.Error("no error for an item without a colon")
	}
	DocSettings[struct {
		Addr     string `json:"addr"`
		Username string `json:"username"`
		Password string `json:"password"`
		Prefix   string `json:"prefix"`
	}](t, "testdata/settings")
	r := &recorder{TB: t}
	DocSettings[struct {
		Addr string `json:"addr"`
	}](r, "testdata/settings")
	if len(r.errs) != 1 {
		t.Errorf("DocSettings on a struct with fewer keys reported %q, want one error", r.errs)
	}
}
