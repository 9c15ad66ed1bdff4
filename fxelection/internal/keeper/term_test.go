package keeper_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fxelection/fxelection/fxelection/internal/keeper"
)

// hooks records when a Term's timer called its holder.
type hooks struct {
	sync.Mutex // guards the Term
	mu         sync.Mutex
	due        []time.Time
	deadlines  []time.Time
}

func (h *hooks) OnDue() {
	h.mu.Lock()
	h.due = append(h.due, time.Now())
	h.mu.Unlock()
}

func (h *hooks) OnDeadline() {
	h.mu.Lock()
	h.deadlines = append(h.deadlines, time.Now())
	h.mu.Unlock()
}

// TestTermOneTimer: a Term's one timer calls OnDue at the renewal set, and
// OnDeadline once at the renew deadline, measured from the start of the
// last successful renewal (ExtendLocked); an extension after the deadline
// is refused, and an ended Term calls nothing.
func TestTermOneTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &hooks{}
		mu := &h.Mutex
		var term keeper.Term
		start := time.Now()
		mu.Lock()
		term.BeginLocked(h, 2*time.Second, start)
		term.SetDueLocked(start.Add(500 * time.Millisecond))
		mu.Unlock()

		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		if len(h.due) != 1 || !h.due[0].Equal(start.Add(500*time.Millisecond)) {
			t.Fatalf("OnDue at %v, want once at +500ms", h.due)
		}
		renewed := start.Add(time.Second)
		if !term.ExtendLocked(renewed) {
			t.Fatal("extension refused before the renew deadline")
		}
		mu.Unlock()

		time.Sleep(3 * time.Second)
		synctest.Wait()
		mu.Lock()
		if len(h.deadlines) != 1 || !h.deadlines[0].Equal(renewed.Add(2*time.Second)) {
			t.Fatalf("OnDeadline at %v, want once at +3s (last renewal's start + renew deadline)", h.deadlines)
		}
		if !term.Over() || term.ExtendLocked(time.Now()) {
			t.Fatal("a Term past its renew deadline is not over, or extends")
		}
		if !term.EndLocked() || term.EndLocked() {
			t.Fatal("EndLocked does not report the first end once")
		}
		term.SetDueLocked(time.Now().Add(time.Millisecond))
		mu.Unlock()
		term.Halt()
		if term.Err() == nil || term.Renewal.Err() == nil {
			t.Fatal("Halt left the context or the renewal cut uncancelled")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if len(h.due) != 1 || len(h.deadlines) != 1 {
			t.Fatalf("a Term that ended called its hooks: due %v, deadlines %v", h.due, h.deadlines)
		}
	})
}
