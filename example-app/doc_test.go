package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/fxelection/fxelection/internal/doctest"
)

// TestPackageDoc: the intervals and bounds the package doc states are the
// program's.
func TestPackageDoc(t *testing.T) {
	secs := func(d time.Duration) string { return fmt.Sprintf("%ds", int(d/time.Second)) }
	tm := serverTimeouts
	doctest.CheckPackageDoc(t, doctest.Want{Says: []string{
		fmt.Sprintf("every %d s it stops the leader", int(demoChaos/time.Second)),
		fmt.Sprintf("reading the header (%s), the whole request (%s), writing the response (%s) and idle keep-alive connections (%s)",
			secs(tm.readHeader), secs(tm.read), secs(tm.write), secs(tm.idle)),
	}})
}
