package fxelection_test

import (
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/electiontest"
)

func TestMemoryBackendConformance(t *testing.T) {
	store := fxelection.NewMemoryBackend()
	electiontest.RunBackendTests(t, func(*testing.T) fxelection.Backend { return store }, electiontest.Options{
		PutGarbage: func(_ *testing.T, election string, ttl time.Duration) {
			store.PutRaw(election, []byte("\x00not a lease record"), ttl)
		},
		// Nothing outside the process can delete an in-memory record; the
		// closest is a nil record, which keeps the term counter.
		DeleteRecord: func(_ *testing.T, election string) { store.PutRaw(election, nil, 0) },
	})
}
