package batchtest_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection/config"
)

// TestConfiguredElectionHeap bounds the live heap a configured election
// costs once its app is built (electors constructed, nothing started): a
// few KB, like a coded one. One annotated fx.Provide per election (the old
// Build) cost about 9 KB each in fx and dig alone. Counted in bytes, not
// time.
func TestConfiguredElectionHeap(t *testing.T) {
	const n = 2000
	var b strings.Builder
	b.WriteString(`{"backends": {"m": {"module": "fxelection.backends.memory"}}, "elections": [`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name": "heap-%d", "identity": "me", "backend": "m"}`, i)
	}
	b.WriteString("]}")
	raw := []byte(b.String())
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	opt, err := config.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	app := fx.New(fx.NopLogger, opt)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	after := heap()
	runtime.KeepAlive(app)
	per := (float64(after) - float64(before)) / n
	t.Logf("%.0f bytes of live heap per configured election", per)
	if per > 6000 {
		t.Fatalf("%.0f bytes of live heap per configured election, want at most 6000", per)
	}
}
