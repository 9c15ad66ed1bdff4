package fxgocron_test

import (
	"fmt"
	"testing"

	"github.com/fxelection/fxelection/fxelection/schedule/fxgocron"
	"github.com/fxelection/fxelection/internal/doctest"
)

// TestPackageDoc: the docs name no unexported identifier, and the defaults
// the package doc states are the code's.
func TestPackageDoc(t *testing.T) {
	doctest.CheckPackageDoc(t, doctest.Want{Says: []string{
		fmt.Sprintf("LockerOptions.MinHold (default %v)", fxgocron.DefaultMinHold),
		fmt.Sprintf(`the lock key: "%sreport"`, fxgocron.DefaultPrefix),
		// TestClockAhead checks these.
		"ahead of the others by less than MinHold, it runs every tick",
		"Ahead by more than MinHold, the lock is released before the others fire: each tick runs on every instance",
	}})
}
