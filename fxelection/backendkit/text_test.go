package backendkit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// FuzzTextRulesAgree: every entry point of the text rules accepts the same
// names and identities, and metadata under the same rule: PrintProblem,
// NameProblem, CheckConfigTexts, AcquireRequest.Validate and fxelection's
// Config.Validate.
func FuzzTextRulesAgree(f *testing.F) {
	for _, s := range []string{"billing", "", "a\x00b", "\xff", "a\u200bb", "tab\tx", "élection", "\u00a0", "\ufffd", "\xef\xbf\xbd", string(make([]byte, 201)), "x#preempt", "#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		printOK := backendkit.PrintProblem(s) == ""
		nameOK := backendkit.NameProblem(s) == ""
		if want := s != "" && len(s) <= backendkit.MaxNameLen && printOK; nameOK != want {
			t.Fatalf("%q: NameProblem accepts = %v, PrintProblem and the length rule say %v", s, nameOK, want)
		}
		field, _ := backendkit.CheckConfigTexts(s, "id", nil)
		if (field == "") != nameOK {
			t.Fatalf("%q: CheckConfigTexts as name refuses %q, NameProblem accepts = %v", s, field, nameOK)
		}
		idField, _ := backendkit.CheckConfigTexts("e", s, nil)
		if want := s != "" && len(s) <= backendkit.MaxIdentityLen && printOK; (idField == "") != want {
			t.Fatalf("%q: CheckConfigTexts as identity refuses %q, want accepted = %v", s, idField, want)
		}
		req := backendkit.AcquireRequest{Election: s, Identity: "id", Duration: time.Second}
		if (req.Validate() == nil) != nameOK {
			t.Fatalf("%q: AcquireRequest.Validate = %v, NameProblem accepts = %v", s, req.Validate(), nameOK)
		}
		mdField, _ := backendkit.CheckConfigTexts("e", "id", map[string]string{"k": s})
		if want := len(s)+1 <= backendkit.MaxMetadataBytes && printOK; (mdField == "") != want {
			t.Fatalf("%q: metadata value refused by %q, want accepted = %v", s, mdField, want)
		}
		// A Config's Name is a user-given name: the same rule, and no '#'.
		userOK := backendkit.UserNameProblem(s) == ""
		if want := nameOK && !strings.ContainsRune(s, backendkit.ReservedNameChar); userOK != want {
			t.Fatalf("%q: UserNameProblem accepts = %v, NameProblem and the reserved character say %v", s, userOK, want)
		}
		cfg := fxelection.Config{Name: s, Identity: "id"}
		if (cfg.Validate() == nil) != userOK {
			t.Fatalf("%q: Config.Validate = %v, UserNameProblem accepts = %v", s, cfg.Validate(), userOK)
		}
	})
}
