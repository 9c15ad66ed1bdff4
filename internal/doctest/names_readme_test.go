package doctest_test

import (
	"os"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// TestReadmeNamesAndHandOver: the README states the reserved character of
// names (backendkit.ReservedNameChar) where it gives the rule of names,
// and the bound of a hand-over to a successor that never comes with
// priorities (TestHandOverToAbsentWithPriorities checks it on fake time).
func TestReadmeNamesAndHandOver(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(raw)), " ")
	reserved := "no `" + string(backendkit.ReservedNameChar) + "`"
	for _, want := range []string{
		"| `Name` | required | the election; ≤ 200 bytes, printable, " + reserved,
		"the shards' names: non-empty, distinct, printable, " + reserved,
		"A key follows the rule of election names (" + reserved + ")",
		"With priorities, up to LeaseDuration + PriorityGrace",
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("the README does not say %q", want)
		}
	}
	if strings.Contains(readme, "never more") && strings.Contains(readme, "one LeaseDuration lost") {
		t.Error("the README still says a successor that never comes costs one LeaseDuration, never more")
	}
}
