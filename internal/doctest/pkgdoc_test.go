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

// TestCheckPackageDoc: CheckPackageDoc passes a package whose doc says
// what it is asked to, and reports each kind of problem, all at once.
func TestCheckPackageDoc(t *testing.T) {
	type settings struct {
		Addr     string `json:"addr"`
		Username string `json:"username"`
		Password string `json:"password"`
		Prefix   string `json:"prefix"`
	}
	CheckPackageDoc(t, Want{Dir: "testdata/settings", Settings: settings{}, Says: []string{"a default of 5s"}})
	CheckPackageDoc(t, Want{Dir: "testdata/settings", Settings: &settings{}})
	for name, c := range map[string]struct {
		w    Want
		errs int
	}{
		"missing phrases": {Want{Dir: "testdata/settings", Says: []string{"a default of 6s", "a default of 5s", "lists no"}}, 2},
		"other settings": {Want{Dir: "testdata/settings", Settings: struct {
			Addr string `json:"addr"`
		}{}}, 1},
		"unexported names":     {Want{Dir: "testdata/leaky"}, 6},
		"all problems at once": {Want{Dir: "testdata/leaky", Says: []string{"no such phrase"}}, 7},
	} {
		r := &recorder{TB: t}
		CheckPackageDoc(r, c.w)
		if len(r.errs) != c.errs {
			t.Errorf("%s: CheckPackageDoc reported %q, want %d errors", name, r.errs, c.errs)
		}
	}
}
