package kubelease_test

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/internal/electiontesting"
	kubelease "github.com/fxelection/fxelection/modules/kubernetes"
)

// TestWatchRefused: with a Role that has get, create and update on leases
// but not watch, the elections work (followers poll) and the refused
// watch is reported once per Backend while it stays refused, although the
// watch is retried: one warning in the Backend's log naming the missing
// permission, and one store failure (ErrWatchRefused, wrapping the API
// server's Forbidden) returned to the follower's elector, which sees it
// as an operation error and keeps following; the leader is not disturbed.
func TestWatchRefused(t *testing.T) {
	ns := fmt.Sprintf("nowatch-%d", time.Now().UnixNano()%1e9)
	if _, err := newClient(t).CoreV1().Namespaces().Create(ctxT(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	backend := func(id string) (*kubelease.Backend, *electiontesting.LogBuffer) {
		logs := &electiontesting.LogBuffer{}
		b, err := kubelease.New(serviceAccountClient(t, ns, "no-watch-"+id, "get", "create", "update"), kubelease.Options{
			Namespace: ns, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b, logs
	}
	bA, logA := backend("a")
	bB, logB := backend("b")
	e := electiontesting.Election(t)
	a := electiontesting.StartCandidate(t, bA, e, "a", nil)
	_, l := electiontesting.WaitLeader(t, []*electiontesting.Candidate{a}, leaderLimit)
	b := electiontesting.StartCandidate(t, bB, e, "b", nil)

	refused := func(ev fxelection.Event) bool {
		return ev.Kind == fxelection.EventOperation && errors.Is(ev.Err, kubelease.ErrWatchRefused)
	}
	ev := b.Events.WaitFor(t, leaderLimit, "the follower's elector sees the refused watch", refused)
	if !ev.StoreFailure() || !strings.Contains(ev.Err.Error(), `cannot watch resource "leases"`) {
		t.Fatalf("the refused watch reached the elector as %v (store failure %v), want a store failure naming the permission", ev.Err, ev.StoreFailure())
	}
	t.Logf("follower's operation error: %v", ev.Err)

	// Several watch retries (backoff 100 ms, 200 ms, … up to 5 s) and
	// follower retries later: still once.
	time.Sleep(8 * time.Second)
	if n := len(b.Events.Filter(refused)); n != 1 {
		t.Errorf("the follower's elector saw the refused watch %d times, want once", n)
	}
	if n := len(a.Events.Filter(refused)); n != 0 {
		t.Errorf("the leader's elector saw the refused watch %d times, want none (it never heard that another held the lease)", n)
	}
	for id, logs := range map[string]*electiontesting.LogBuffer{"a": logA, "b": logB} {
		out := logs.String()
		if n := strings.Count(out, "refused the watch"); n != 1 || !strings.Contains(out, "level=WARN") || !strings.Contains(out, `cannot watch resource`) {
			t.Errorf("backend %s logged %d refusals, want one warning naming the permission:\n%s", id, n, out)
		}
	}
	if cur, ok := a.Elector.Lease(); !ok || cur.Term != l.Term {
		t.Fatalf("the leader's lease %+v (leading %v), want term %d still held", cur, ok, l.Term)
	}
	if ld, ok := b.Elector.Leader(); !ok || ld.Holder != "a" {
		t.Fatalf("the follower's leader %+v (%v), want a", ld, ok)
	}
}
