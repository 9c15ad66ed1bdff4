package fxelection

import (
	"math/rand/v2"
	"time"
)

// firstRenewal returns when, after an acquisition, the leader first renews:
// a uniformly random point in [p/2, p), so that elections acquired together
// spread their renewals over a retry period instead of hitting the store in
// lockstep forever.
func firstRenewal(p time.Duration) time.Duration {
	if p <= 1 {
		return p
	}
	half := p / 2
	return half + time.Duration(rand.Int64N(int64(p-half)))
}

// maxLosses caps Elector.losses: the re-campaign wait stops doubling well
// before.
const maxLosses = 16

// recampaignWait is the wait before campaigning again after the n-th
// leadership in a row that ended by the renew deadline: retry doubled per
// loss after the first, at most limit (but never below retry).
func recampaignWait(n int, retry, limit time.Duration) time.Duration {
	limit = max(limit, retry)
	d := retry
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// spread returns a wait drawn evenly from [d/2, d): waits of many
// elections that ended together spread over half of d, and none is longer
// than d.
func spread(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + time.Duration(rand.Int64N(int64(d-d/2)))
}
