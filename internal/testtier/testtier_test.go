package testtier

import (
	"os"
	"testing"
)

func TestEnabled(t *testing.T) {
	for _, c := range []struct {
		env  string
		set  bool
		want map[Tier]bool
	}{
		{"", false, map[Tier]bool{Default: true}},
		{"", true, map[Tier]bool{Default: true}},
		{"default,e2e", true, map[Tier]bool{Default: true, E2E: true}},
		{" soak ", true, map[Tier]bool{Soak: true}},
	} {
		t.Setenv(Env, c.env) // restored when the test ends
		if !c.set {
			os.Unsetenv(Env)
		}
		for _, tier := range []Tier{Default, E2E, Soak} {
			if got := Enabled(tier); got != c.want[tier] {
				t.Errorf("%s=%q (set %v): Enabled(%s) = %v, want %v", Env, c.env, c.set, tier, got, c.want[tier])
			}
		}
	}
}
