package memory_test

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
	"github.com/fxelection/fxelection/fxelection/memory"
)

func TestMemoryBackendConformance(t *testing.T) {
	store := memory.New()
	electiontest.RunBackendTests(t, func(*testing.T) fxelection.Backend { return store }, electiontest.Options{
		PutGarbage: func(_ *testing.T, election string, ttl time.Duration) {
			store.PutGarbage(election, ttl)
		},
		// Nothing outside the process can delete an in-memory record; the
		// closest is forgetting it, which keeps the term counter.
		DeleteRecord: func(_ *testing.T, election string) { store.Forget(election) },
	})
}
