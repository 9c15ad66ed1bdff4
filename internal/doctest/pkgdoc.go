package doctest

import (
	"fmt"
	"go/token"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// PackageDoc returns the package comment of dir's non-test Go files as
// text, without comment markers (as go/ast's CommentGroup.Text gives it).
func PackageDoc(t testing.TB, dir string) string {
	t.Helper()
	doc, err := packageDoc(dir)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// packageDoc returns the package comment of dir's non-test Go files.
func packageDoc(dir string) (string, error) {
	files, err := parseDir(token.NewFileSet(), dir)
	if err != nil {
		return "", err
	}
	var docs []string
	for _, f := range files {
		if f.Doc != nil {
			docs = append(docs, f.Doc.Text())
		}
	}
	switch len(docs) {
	case 0:
		return "", fmt.Errorf("%s: no package comment", dir)
	case 1:
		return docs[0], nil
	}
	return "", fmt.Errorf("%s: %d files have a package comment (want one, in doc.go)", dir, len(docs))
}

// DocSays fails t for every phrase that the package comment of dir does
// not contain. Runs of white space compare equal to one space, so a phrase
// may wrap across comment lines. A test builds each phrase from the code's
// own value (a constant, an Options default), so that a number the package
// doc states is checked against the code it describes.
func DocSays(t testing.TB, dir string, phrases ...string) {
	t.Helper()
	doc, err := packageDoc(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range missingPhrases(doc, phrases) {
		t.Errorf("the package doc of %s does not say %q: update the doc or the code", dir, p)
	}
}

// missingPhrases returns the phrases that doc does not contain, comparing
// with runs of white space collapsed.
func missingPhrases(doc string, phrases []string) []string {
	text := normalize(doc)
	var missing []string
	for _, p := range phrases {
		if !strings.Contains(text, normalize(p)) {
			missing = append(missing, p)
		}
	}
	return missing
}

// SettingsHeading is the heading of the package doc section that lists a
// configuration module's settings (see DocSettings).
const SettingsHeading = "Configuration"

// DocSettings checks that the section "# Configuration" of dir's package
// comment lists exactly the JSON keys of T (a configuration module's
// settings, named by their json tags). The settings are the list items of
// the section, one per setting or group of settings: the words before the
// item's first colon, comma-separated, with anything in parentheses left
// out ("  - addr (required): …", "  - username, password: …").
func DocSettings[T any](t testing.TB, dir string) {
	t.Helper()
	docSettingsOf(t, dir, reflect.TypeFor[T]())
}

// docSettingsOf is DocSettings for the struct type rt.
func docSettingsOf(t testing.TB, dir string, rt reflect.Type) {
	t.Helper()
	doc, err := packageDoc(dir)
	if err != nil {
		t.Fatal(err)
	}
	listed, err := docSettings(doc)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	keys := jsonKeys(rt)
	slices.Sort(listed)
	slices.Sort(keys)
	if !slices.Equal(listed, keys) {
		t.Errorf("the package doc of %s lists the settings %q, the module has %q", dir, listed, keys)
	}
}

// docSettings returns the settings the "# Configuration" section of doc
// lists (see DocSettings).
func docSettings(doc string) ([]string, error) {
	_, section, ok := strings.Cut(doc, "\n# "+SettingsHeading+"\n")
	if !ok {
		return nil, fmt.Errorf("the package doc has no section %q", "# "+SettingsHeading)
	}
	if i := strings.Index(section, "\n# "); i >= 0 {
		section = section[:i]
	}
	var keys []string
	for _, l := range strings.Split(section, "\n") {
		item, ok := strings.CutPrefix(strings.TrimSpace(l), "- ")
		if !ok || !strings.HasPrefix(l, " ") {
			continue
		}
		names, _, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("list item %q of section %q has no colon after its settings", item, SettingsHeading)
		}
		for _, n := range strings.Split(withoutParens(names), ",") {
			if n = strings.TrimSpace(n); n != "" {
				keys = append(keys, n)
			}
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("section %q lists no settings", SettingsHeading)
	}
	return keys, nil
}

// withoutParens returns s without its parenthesised parts.
func withoutParens(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// jsonKeys returns the json tag names of the fields of struct type rt.
func jsonKeys(rt reflect.Type) []string {
	var keys []string
	for i := range rt.NumField() {
		if tag := rt.Field(i).Tag.Get("json"); tag != "" && tag != "-" {
			keys = append(keys, strings.Split(tag, ",")[0])
		}
	}
	return keys
}

// Want is what one package's doc must say, for CheckPackageDoc: only what
// is particular to the package.
type Want struct {
	// Dir is the package's directory. Default: "." (the package under
	// test).
	Dir string
	// Settings is a value of the package's configuration module (a
	// struct, or a pointer to one), or nil if it has none: the section
	// "# Configuration" must then list exactly its JSON keys, as
	// DocSettings checks.
	Settings any
	// Says are phrases the doc must contain, as DocSays checks. Build each
	// from the code's own value (a constant, an Options default), so that
	// every number the doc states is checked against the code.
	Says []string
}

// CheckPackageDoc runs the package doc checks every package shares on the
// package in w.Dir: no doc comment go doc shows names an unexported
// identifier (NoUnexportedInDocs), the configuration section lists exactly
// w.Settings' keys (DocSettings) when w.Settings is not nil, and the
// package comment says each of w.Says (DocSays). Every problem is
// reported, not just the first.
func CheckPackageDoc(t testing.TB, w Want) {
	t.Helper()
	dir := w.Dir
	if dir == "" {
		dir = "."
	}
	NoUnexportedInDocs(t, dir)
	if w.Settings != nil {
		rt := reflect.TypeOf(w.Settings)
		if rt.Kind() == reflect.Pointer {
			rt = rt.Elem()
		}
		if rt.Kind() != reflect.Struct {
			t.Fatalf("doctest.Want.Settings is a %v, want a configuration struct", rt)
		}
		docSettingsOf(t, dir, rt)
	}
	if len(w.Says) > 0 {
		DocSays(t, dir, w.Says...)
	}
}
