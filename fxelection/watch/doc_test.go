package watch_test

import (
	"fmt"
	"testing"

	"github.com/fxelection/fxelection/internal/backoff"
	"github.com/fxelection/fxelection/internal/doctest"
)

// TestPackageDoc: the package doc names no unexported identifier and the
// poll jitter it states is the one the watcher uses.
func TestPackageDoc(t *testing.T) {
	doctest.CheckPackageDoc(t, doctest.Want{Says: []string{
		fmt.Sprintf("(jittered up to %v ×)", backoff.JitterFactor),
	}})
}
