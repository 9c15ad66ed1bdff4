package metrics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/handover"
	"github.com/fxelection/fxelection/fxelection/memory"
)

func TestLabelValue(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "",
		"pod-1":                  "pod-1",
		"héllo 世界":               "héllo 世界",
		"\xff\xfe\xfd":           "\uFFFD",
		"a\x1b[31mb":             "a[31mb",
		"line\r\nforged 1":       "lineforged 1",
		"x\u202ey":               "xy",
		"\x00":                   "",
		strings.Repeat("é", 200): strings.Repeat("é", 128),
	} {
		got := labelValue(in)
		if got != want {
			t.Errorf("labelValue(%q) = %q, want %q", in, got, want)
		}
		if !clean(got) {
			t.Errorf("labelValue(%q) = %q is not clean", in, got)
		}
	}
}

func FuzzLabelValue(f *testing.F) {
	for _, s := range []string{"", "a", "\xff\xfe\xfd", "a\x1b[31m", strings.Repeat("é", 300), "\u202e", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := labelValue(s)
		if !utf8.ValidString(v) || len(v) > maxLabelBytes {
			t.Fatalf("labelValue(%q) = %q", s, v)
		}
		for _, r := range v {
			if !unicode.IsPrint(r) {
				t.Fatalf("labelValue(%q) = %q keeps %U", s, v, r)
			}
		}
		if labelValue(v) != v {
			t.Fatalf("labelValue not idempotent on %q", s)
		}
		// It must be usable as a label value.
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "x"}, []string{"l"})
		g.WithLabelValues(v).Set(1)
	})
}

// The observer itself, handed a hostile event directly (not through an
// elector that might have checked it), must never panic.
func TestObserverHostileEvent(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := fxelection.New(fxelection.Config{Name: "jobs", Identity: "a"}, memory.New())
	if err != nil {
		t.Fatal(err)
	}
	a := newAttachment(m.c, e)
	a.backend = labelValue("bad\xff")
	bad := fxelection.Lease{Election: "\xff", Holder: "\xff\xfe\xfd", Term: 1, Metadata: map[string]string{"\xff": "\x1b"}}
	for _, ev := range []fxelection.Event{
		{Kind: fxelection.EventNewLeader, Lease: bad, Election: "\xfe", Identity: "\xfd", Backend: "\xfc"},
		{Kind: fxelection.EventStartedLeading, Lease: bad, Time: time.Now()},
		{Kind: fxelection.EventOperation, Op: "\xffop", Err: backendkit.ErrInvalidRecord, Duration: -1},
		{Kind: fxelection.EventRenewed, Lease: bad, Margin: -time.Hour},
		{Kind: fxelection.EventStoppedLeading, Lease: bad, Reason: "\xff"},
		{Kind: fxelection.EventPanic, Err: &fxelection.PanicError{Where: "\xff"}},
		{Kind: handover.Event, Lease: bad, Err: backendkit.ErrInvalidRecord, Duration: -1},
		{Kind: handover.Event, Lease: bad, Err: &backendkit.HeldError{Holder: bad}},
		{Kind: fxelection.EventKind(99), Lease: bad},
		{Kind: fxelection.EventNewLeader, Lease: fxelection.Lease{Holder: "\x1b]0;title\x07"}},
	} {
		a.Observe(ev)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("gather: %v", err)
	}
	a.mu.Lock()
	leader := a.leader
	a.mu.Unlock()
	if leader != "]0;title" {
		t.Fatalf("leader label %q", leader)
	}
}

// TestOutcomeAndOpLabels: hand-over outcomes and operation names map to
// their fixed label values; anything else to "error" and "other".
func TestOutcomeAndOpLabels(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, OutcomeHanded},
		{&backendkit.HeldError{Holder: fxelection.Lease{Holder: "c"}}, OutcomeOvertaken},
		{fmt.Errorf("wrapped: %w", backendkit.ErrLeaseHeld), OutcomeOvertaken},
		{backendkit.ErrLeaseLost, OutcomeLost},
		{&fxelection.OpError{Op: handover.OpHandOver, Err: errors.New("dial tcp: i/o timeout")}, OutcomeError},
		{context.Canceled, OutcomeError},
	} {
		if got := outcomeLabel(tc.err); got != tc.want {
			t.Errorf("outcomeLabel(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
	for op, want := range map[string]string{
		backendkit.OpAcquire: "acquire", backendkit.OpRenew: "renew", backendkit.OpRelease: "release",
		backendkit.OpGet: "get", handover.OpHandOver: "handover", "\xffop": "other", "": "other",
	} {
		if got := opLabel(op); got != want {
			t.Errorf("opLabel(%q) = %q, want %q", op, got, want)
		}
	}
}
