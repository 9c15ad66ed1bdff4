// Package lockbench is the hand-off benchmark of package lock's
// benchmarks on Redis and PostgreSQL (modules/redis, modules/postgres):
// waiters take one key in turn, and it measures from a release to the
// next holder. Each module brings its variants (Acquirers); Run alternates
// them and reports the percentiles.
package lockbench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Acquirer takes the lock on key, waiting until ctx ends, and returns its
// release.
type Acquirer func(ctx context.Context, key string) (release func(context.Context) error, err error)

// Variant is one implementation: one acquirer per goroutine, and
// the spread of the goroutines' arrivals (see handoffRound).
type Variant struct {
	Name      string
	Spread    time.Duration
	Acquirers []Acquirer
}

const (
	handoffsPerRound = 40
	handoffHold      = time.Millisecond
	minHandoffRounds = 5
)

// Run runs max(b.N, minHandoffRounds) rounds of
// handoffsPerRound hand-offs per variant, variants in rotating order, and
// reports each variant's p50 and p99 over all rounds (handoff and gap, in
// ms); it logs them with the maximum, the number of hand-offs of a second
// or more (a missed wake-up waits for the next poll) and the per-round
// p50s.
func Run(b *testing.B, vs []Variant) {
	rounds := max(b.N, minHandoffRounds)
	handoff := make([][]time.Duration, len(vs))
	gap := make([][]time.Duration, len(vs))
	perRound := make([][]string, len(vs))
	b.ResetTimer()
	for r := range rounds {
		for j := range vs {
			k := (r + j) % len(vs)
			h, g := handoffRound(b, vs[k], fmt.Sprintf("handoff-%s-%d-%d", vs[k].Name, r, time.Now().UnixNano()))
			handoff[k] = append(handoff[k], h...)
			gap[k] = append(gap[k], g...)
			if len(h) > 0 {
				slices.Sort(h)
				perRound[k] = append(perRound[k], fmt.Sprintf("%.2f", ms(Pct(h, 0.5))))
			}
		}
	}
	b.StopTimer()
	for k, v := range vs {
		if len(handoff[k]) == 0 {
			b.Fatalf("%s: no hand-off counted", v.Name)
		}
		slices.Sort(handoff[k])
		slices.Sort(gap[k])
		b.ReportMetric(ms(Pct(handoff[k], 0.5)), v.Name+"-p50-ms")
		b.ReportMetric(ms(Pct(handoff[k], 0.99)), v.Name+"-p99-ms")
		b.ReportMetric(ms(Pct(gap[k], 0.5)), v.Name+"-gap-p50-ms")
		b.ReportMetric(ms(Pct(gap[k], 0.99)), v.Name+"-gap-p99-ms")
		slow := len(handoff[k]) - sort.Search(len(handoff[k]), func(i int) bool { return handoff[k][i] >= time.Second })
		b.Logf("%-22s handoff p50 %7.3f ms  p99 %8.3f ms  max %8.3f ms  ≥1s %d | gap p50 %7.3f ms  p99 %8.3f ms | per-round p50 %s (%d hand-offs)",
			v.Name, ms(Pct(handoff[k], 0.5)), ms(Pct(handoff[k], 0.99)), ms(handoff[k][len(handoff[k])-1]), slow,
			ms(Pct(gap[k], 0.5)), ms(Pct(gap[k], 0.99)), strings.Join(perRound[k], " "), len(handoff[k]))
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// handoffRound runs v's acquirers, one goroutine each, on key until
// handoffsPerRound+1 acquisitions, and returns the latency of each
// hand-off from the release's return (handoff) and from its call (gap).
// After releasing, a goroutine waits until another has taken the key, then
// for a random time in [0, v.Spread) before it tries again: a poller that
// started at once would poll in step with the others (all of them started
// right after an acquisition, which came at a poll), where pollers in a
// real system poll at random phases. A release with no goroutine waiting
// in its acquirer yet is no hand-off and is not counted.
func handoffRound(b *testing.B, v Variant, key string) (handoff, gap []time.Duration) {
	const total = handoffsPerRound + 1 // acquisitions
	var acq, relStart, relEnd [total]time.Time
	var counted [total]bool        // a goroutine was waiting when release s began
	var taken [total]chan struct{} // closed when acquisition i happened
	for i := range taken {
		taken[i] = make(chan struct{})
	}
	var seq, waiting atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		errMu.Unlock()
		cancel()
	}
	for _, a := range v.Acquirers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				waiting.Add(1)
				release, err := a(ctx, key)
				waiting.Add(-1)
				if err != nil {
					if ctx.Err() == nil {
						fail(fmt.Errorf("acquire: %w", err))
					}
					return
				}
				now := time.Now()
				s := seq.Add(1) - 1
				if s >= total { // the round is over
					_ = release(context.Background())
					return
				}
				acq[s] = now
				close(taken[s])
				time.Sleep(handoffHold)
				counted[s] = waiting.Load() > 0
				relStart[s] = time.Now()
				err = release(context.Background())
				relEnd[s] = time.Now()
				if err != nil {
					fail(fmt.Errorf("release: %w", err))
					return
				}
				if s == total-1 {
					cancel()
					return
				}
				select {
				case <-taken[s+1]: // another goroutine has it: queue again
				case <-ctx.Done():
					return
				}
				if v.Spread > 0 {
					t := time.NewTimer(rand.N(v.Spread))
					select {
					case <-t.C:
					case <-ctx.Done():
						t.Stop()
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	for s := range total - 1 {
		if counted[s] {
			handoff = append(handoff, acq[s+1].Sub(relEnd[s]))
			gap = append(gap, acq[s+1].Sub(relStart[s]))
		}
	}
	return handoff, gap
}

// Pct is the q-quantile of sorted (nearest rank).
func Pct(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}
