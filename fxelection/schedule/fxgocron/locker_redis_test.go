package fxgocron_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/fxelection/schedule/fxgocron"
	"github.com/fxelection/fxelection/internal/testserver"
	"github.com/fxelection/fxelection/internal/testtier"
	redislease "github.com/fxelection/fxelection/modules/redis"
)

// tickRun is one run of a job: which instance ran it, when it started and
// the term of its lock.
type tickRun struct {
	instance string
	start    time.Time
	term     uint64
}

// tickLog records runs by job and tick. A cron tick every second is the
// start of a wall-clock second; a run starts after its tick by the
// scheduler's delay and a lock round trip, well under a second, so the
// second a run starts in names its tick.
type tickLog struct {
	mu      sync.Mutex
	runs    map[string]map[time.Time][]tickRun // job → tick → runs
	lockErr []string                           // Lock errors other than ErrLocked
}

func (l *tickLog) record(job, instance string, term uint64) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs[job] == nil {
		l.runs[job] = map[time.Time][]tickRun{}
	}
	tick := now.Truncate(time.Second)
	l.runs[job][tick] = append(l.runs[job][tick], tickRun{instance: instance, start: now, term: term})
}

func (l *tickLog) lockError(instance, job string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lockErr = append(l.lockErr, fmt.Sprintf("%s %s %s: %v", time.Now().Format("15:04:05.000"), instance, job, err))
}

// TestSoakLockerRunsEachCronTickOnce (soak tier: a minute of cron ticks):
// three gocron schedulers, each with its own lock.Locker (its own identity
// and Redis client) on one real Redis, run four jobs every second (cron with seconds) for a minute with the Locker
// as gocron's distributed locker and its default MinHold: every (job,
// tick) runs on exactly one instance, and the runs spread over all three.
func TestSoakLockerRunsEachCronTickOnce(t *testing.T) {
	testtier.Require(t, testtier.Soak)
	t.Parallel()
	addr := testserver.NewRedis(t, testserver.RedisOptions{}).Addr()
	const (
		instances = 3
		jobs      = 4
		runFor    = time.Minute
	)
	log := &tickLog{runs: map[string]map[time.Time][]tickRun{}}
	var scheds []gocron.Scheduler
	var lockers []*fxgocron.Locker
	for i := range instances {
		id := fmt.Sprintf("n%d", i+1)
		c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = c.Close() })
		b, err := redislease.New(c, redislease.Options{})
		if err != nil {
			t.Fatal(err)
		}
		lk, err := lock.New(b, lock.Options{Identity: id})
		if err != nil {
			t.Fatal(err)
		}
		l, err := fxgocron.NewLocker(lk, fxgocron.LockerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := gocron.NewScheduler(gocron.WithDistributedLocker(l))
		if err != nil {
			t.Fatal(err)
		}
		for j := range jobs {
			name := fmt.Sprintf("job-%d", j+1)
			_, err := s.NewJob(gocron.CronJob("* * * * * *", true),
				l.NewTask(func(ctx context.Context) error {
					lease, _ := fxelection.LeaseFromContext(ctx)
					log.record(name, id, lease.Term)
					return nil
				}),
				gocron.WithName(name),
				gocron.WithEventListeners(gocron.AfterLockError(func(_ uuid.UUID, job string, err error) {
					if !errors.Is(err, lock.ErrLocked) {
						log.lockError(id, job, err)
					}
				})))
			if err != nil {
				t.Fatal(err)
			}
		}
		scheds, lockers = append(scheds, s), append(lockers, l)
	}
	stop := func() {
		for i, s := range scheds { // every scheduler first, then the lockers
			if err := s.Shutdown(); err != nil {
				t.Errorf("scheduler n%d: shutdown: %v", i+1, err)
			}
		}
		for i, l := range lockers {
			if err := l.Close(context.Background()); err != nil {
				t.Errorf("locker n%d: close: %v", i+1, err)
			}
		}
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	began := time.Now()
	for _, s := range scheds {
		s.Start()
	}
	time.Sleep(runFor)
	stop()
	stopped = true
	ended := time.Now()

	// The ticks compared: whole seconds from the second after the first
	// full one to the one before the last, when every scheduler was
	// certainly running.
	first := began.Truncate(time.Second).Add(2 * time.Second)
	last := ended.Truncate(time.Second).Add(-2 * time.Second)
	log.mu.Lock()
	defer log.mu.Unlock()
	perInstance := map[string]int{}
	var dup, missing []string
	var maxDelay time.Duration
	ticks, total := 0, 0
	for j := range jobs {
		name := fmt.Sprintf("job-%d", j+1)
		var prevTerm uint64
		for tick := first; !tick.After(last); tick = tick.Add(time.Second) {
			ticks++
			runs := log.runs[name][tick]
			switch len(runs) {
			case 0:
				missing = append(missing, fmt.Sprintf("%s %s", name, tick.Format("15:04:05")))
				continue
			case 1:
			default:
				var s []string
				for _, r := range runs {
					s = append(s, fmt.Sprintf("%s at +%v (term %d)", r.instance, r.start.Sub(tick), r.term))
				}
				dup = append(dup, fmt.Sprintf("%s %s ran %d times: %s", name, tick.Format("15:04:05"), len(runs), strings.Join(s, ", ")))
			}
			for _, r := range runs {
				total++
				perInstance[r.instance]++
				maxDelay = max(maxDelay, r.start.Sub(tick))
				if r.term <= prevTerm {
					t.Errorf("%s %s: term %d after %d; want each run's term higher", name, tick.Format("15:04:05"), r.term, prevTerm)
				}
				prevTerm = max(prevTerm, r.term)
			}
		}
	}
	ids := make([]string, 0, len(perInstance))
	for id := range perInstance {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var spread []string
	for _, id := range ids {
		spread = append(spread, fmt.Sprintf("%s %d", id, perInstance[id]))
	}
	t.Logf("%d (job, tick) pairs from %s to %s: %d runs (%s), %d missing, latest start %v after its tick",
		ticks, first.Format("15:04:05"), last.Format("15:04:05"), total, strings.Join(spread, ", "), len(missing), maxDelay)
	if len(dup) > 0 {
		t.Errorf("ticks that ran more than once:\n%s", strings.Join(dup, "\n"))
	}
	if len(log.lockErr) > 0 {
		t.Errorf("Lock errors other than ErrLocked:\n%s", strings.Join(log.lockErr, "\n"))
	}
	// A tick runs nowhere when every instance fired it while the previous
	// tick's lock was still held: that takes a release delayed by about
	// half a second, which an oversubscribed machine can produce now and
	// then; more than a few is a bug.
	if len(missing) > ticks/20 {
		t.Errorf("%d of %d ticks ran nowhere: %s", len(missing), ticks, strings.Join(missing, ", "))
	} else if len(missing) > 0 {
		t.Logf("ticks that ran nowhere: %s", strings.Join(missing, ", "))
	}
	for i := range instances {
		id := fmt.Sprintf("n%d", i+1)
		if perInstance[id] < total/20 {
			t.Errorf("%s ran %d of %d runs; want the runs spread over all %d instances", id, perInstance[id], total, instances)
		}
	}
}
