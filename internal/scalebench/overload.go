package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"
)

// slowStore adds latency to every exchange with the store (0 removes it):
// a proxy between the client and the server.
type slowStore func(time.Duration)

// overloadResult is what the overload phase measured: while the process's
// CPU was held by busy loops (and the store slowed, where it can be) for
// the phase's duration, and after.
type overloadResult struct {
	Seconds      float64 `json:"seconds"`
	BusyLoops    int     `json:"busy_loops"`
	LatencyMS    float64 `json:"added_latency_ms"` // 0: the store was not slowed
	LostDuring   int64   `json:"lost_during"`      // leaderships lost while overloaded
	LostAfter    int64   `json:"lost_after"`       // lost from the end of the overload to recovery
	MinLeading   int64   `json:"min_leading"`      // fewest elections led at once
	Recovered    bool    `json:"recovered"`
	RecoverySecs float64 `json:"recovery_s"` // from the end of the overload until every election led again
	P99During    float64 `json:"renew_p99_during_ms"`
	P99After     float64 `json:"renew_p99_after_ms"`
	TripsDuring  float64 `json:"round_trips_per_period_during"`
	TripsAfter   float64 `json:"round_trips_per_period_after"`
	ErrorsDuring int64   `json:"renew_errors_during"`
}

// overloadPhase holds the process's CPU with o.overloadLoops busy loops
// (GOMAXPROCS by default) and adds o.overloadLatency to the store through
// slow (when not nil) for o.overload, then lets go and waits up to
// o.recoverTimeout for every one of the n elections to lead again, then
// measures a steady window of o.periods retry periods.
func overloadPhase(o options, n int, obs *observer, be *counting, slow slowStore) *overloadResult {
	r := &overloadResult{Seconds: o.overload.Seconds(), BusyLoops: o.overloadLoops}
	if r.BusyLoops == 0 {
		r.BusyLoops = runtime.GOMAXPROCS(0)
	}
	if slow != nil {
		r.LatencyMS = float64(o.overloadLatency) / float64(time.Millisecond)
	}
	r.MinLeading = obs.leading.Load()
	var watching atomic.Bool
	watching.Store(true)
	var watch sync.WaitGroup
	watch.Go(func() { // the fewest elections led at once, sampled
		for watching.Load() {
			if l := obs.leading.Load(); l < r.MinLeading {
				r.MinLeading = l
			}
			time.Sleep(10 * time.Millisecond)
		}
	})

	// Overload.
	obs.hist.reset()
	lost0, err0, rt0 := obs.lost.Load(), obs.renewErrs.Load(), be.roundTrips.Load()
	start := time.Now()
	var stop atomic.Bool
	var busy sync.WaitGroup
	for range r.BusyLoops {
		busy.Go(func() {
			x := uint64(1)
			for !stop.Load() {
				for range 1 << 16 {
					x = x*6364136223846793005 + 1
				}
			}
			_ = x
		})
	}
	if slow != nil {
		slow(o.overloadLatency)
	}
	progress(o, "overload", start, obs, n)
	for time.Since(start) < o.overload {
		time.Sleep(time.Second)
		progress(o, "overload", start, obs, n)
	}
	stop.Store(true)
	busy.Wait()
	if slow != nil {
		slow(0)
	}
	during := time.Since(start)
	r.LostDuring, r.ErrorsDuring = obs.lost.Load()-lost0, obs.renewErrs.Load()-err0
	r.P99During = obs.hist.quantile(0.99)
	r.TripsDuring = float64(be.roundTrips.Load()-rt0) / (during.Seconds() / o.retry.Seconds())

	// Recovery: until every election leads again.
	obs.hist.reset()
	lost1 := obs.lost.Load()
	end := time.Now()
	if o.cpuProfile != "" { // the recovery's profile beside the steady window's
		if f, err := os.Create(o.cpuProfile + ".recovery"); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer f.Close()
				defer pprof.StopCPUProfile()
			}
		}
	}
	next := end.Add(time.Second)
	for obs.leading.Load() < int64(n) && time.Since(end) < o.recoverTimeout {
		time.Sleep(5 * time.Millisecond)
		if time.Now().After(next) {
			progress(o, "recovering", end, obs, n)
			next = next.Add(time.Second)
		}
	}
	r.Recovered = obs.leading.Load() >= int64(n)
	r.RecoverySecs = time.Since(end).Seconds()
	r.LostAfter = obs.lost.Load() - lost1
	progress(o, "recovered", end, obs, n)

	// After: a steady window.
	time.Sleep(o.retry)
	obs.hist.reset()
	rt1, t1 := be.roundTrips.Load(), time.Now()
	time.Sleep(time.Duration(o.periods) * o.retry)
	r.P99After = obs.hist.quantile(0.99)
	r.TripsAfter = float64(be.roundTrips.Load()-rt1) / (time.Since(t1).Seconds() / o.retry.Seconds())
	watching.Store(false)
	watch.Wait()
	return r
}

// progress prints one line on stderr with -progress.
func progress(o options, phase string, since time.Time, obs *observer, n int) {
	if !o.progress {
		return
	}
	fmt.Fprintf(os.Stderr, "%s %5.1fs: leading %d of %d, lost %d, renew errors %d, goroutines %d\n", phase, time.Since(since).Seconds(),
		obs.leading.Load(), n, obs.lost.Load(), obs.renewErrs.Load(), runtime.NumGoroutine())
}

// overloadLine formats r as the overload table's row for backend and n.
func overloadLine(backend string, n int, r *overloadResult) string {
	rec := fmt.Sprintf("%.2f s", r.RecoverySecs)
	if !r.Recovered {
		rec = fmt.Sprintf("not within %.0f s", r.RecoverySecs)
	}
	return fmt.Sprintf("| %s | %d | %.0f s, %d busy loops, +%.0f ms | %d (fewest led at once: %d) | %d | %s | %.2f ms | %.2f ms | %.0f → %.0f |",
		backend, n, r.Seconds, r.BusyLoops, r.LatencyMS, r.LostDuring, r.MinLeading, r.LostAfter, rec, r.P99During, r.P99After, r.TripsDuring, r.TripsAfter)
}
