package chaos

import (
	"slices"
	"testing"
)

// A recorded seed replays its schedule: the random source, the weights and
// the draw are those every recorded run (RELIABILITY.md) used. These are
// the first fault kinds seed 1001 draws for each workload, as the runners
// before the merge drew them; what follows a draw (the target, the span)
// comes from the same source in the same order.
func TestSeedReplays(t *testing.T) {
	for _, tc := range []struct {
		weights []faultWeight
		want    []string
	}{
		{chaosWeights, []string{faultPartitionShort, faultServerKill, faultReset, faultReset, faultLatency, faultCrash, faultOutage, faultReset, faultLatency, faultPartitionShort}},
		{lockChaosWeights, []string{faultPartitionShort, faultServerKill, faultRefuse, faultRefuse, faultLatency, faultCrash, faultOutage, faultRefuse, faultLatency, faultPartitionShort}},
	} {
		s := newFaultSched(1001, nil, nil)
		var got []string
		for range 10 {
			got = append(got, drawFault(s.rng, tc.weights))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("seed 1001 draws %q, want %q", got, tc.want)
		}
	}
}
