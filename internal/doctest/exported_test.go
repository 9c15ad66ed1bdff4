package doctest

import (
	"slices"
	"testing"
)

func TestUnexportedInDocs(t *testing.T) {
	got, err := unexportedInDocs("testdata/leaky")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"the doc of Exported names unexported helperFunc, release, renew",
		"the doc of Attach names unexported helper",
		"the doc of Limit names unexported maxRetries",
		"the doc of Thing.Size names unexported unit",
		"the doc of Thing.Method names unexported conn",
		"the doc of Iface.Do names unexported detach",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

func TestNamesInProse(t *testing.T) {
	names := map[string]bool{"renew": true, "leadStep": true, "ctx": true}
	for text, want := range map[string][]string{
		"The leader renews; a renew fails.":        nil,
		"It runs on events, see leadStep.":         {"leadStep"},
		"until ctx is done":                        nil,
		"calls renew() and `ctx`":                  {"ctx", "renew"},
		"e.renew and (renew)":                      {"renew"},
		"\tctx := context.Background()\n\tctx()\n": nil,
	} {
		if got := namesIn(text, names); !slices.Equal(got, want) {
			t.Errorf("namesIn(%q) = %q, want %q", text, got, want)
		}
	}
}
