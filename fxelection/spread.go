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
