package metrics_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/metrics"
)

// hostileHolder is the holder from issue 9: not valid UTF-8. client_golang
// panics when it is used as a label value.
const hostileHolder = "\xff\xfe\xfd"

// hostileBackend reports a holder and a name no decoder checked, as a
// custom backend might.
type hostileBackend struct {
	fxelection.Backend
	holder string
}

func (h hostileBackend) BackendName() string { return "cu\xffstom\x1b[31m" }

func (h hostileBackend) Acquire(context.Context, backendkit.AcquireRequest) (fxelection.Lease, error) {
	return fxelection.Lease{}, &backendkit.HeldError{Holder: fxelection.Lease{Election: "jobs", Holder: h.holder, Term: 5, Duration: time.Minute}}
}

// checkLabels gathers reg (which must not panic or fail) and checks that
// every label value is printable UTF-8.
func checkLabels(t *testing.T, reg *prometheus.Registry) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				v := l.GetValue()
				if !utf8.ValidString(v) {
					t.Fatalf("%s: label %s=%q is not valid UTF-8", mf.GetName(), l.GetName(), v)
				}
				for _, r := range v {
					if !unicode.IsPrint(r) {
						t.Fatalf("%s: label %s=%q has a non-printable character", mf.GetName(), l.GetName(), v)
					}
				}
			}
		}
	}
}

// A holder that is not valid UTF-8 (or full of escapes) reaching the
// metrics observer through a real elector must not panic: before the fix,
// WithLabelValues panicked on the elector's goroutine and killed the
// process.
func TestHostileHolderDoesNotPanic(t *testing.T) {
	for _, holder := range []string{hostileHolder, "a\x1b[2J\x1b[31mred\r\nforged 1", string(make([]byte, 1000))} {
		t.Run("", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reg, m := newMetrics(t)
				e := newElector(t, "jobs", "a", hostileBackend{Backend: memory.New(), holder: holder})
				defer m.Attach(e)()
				start(t, e)
				time.Sleep(3 * retryPeriod)
				synctest.Wait()
				if l, ok := e.Leader(); !ok || l.Holder != holder {
					t.Fatalf("leader %+v %v, want the hostile holder", l, ok)
				}
				checkLabels(t, reg)
				if got := series(t, reg, metrics.NameLeaderInfo); len(got) != 1 {
					t.Fatalf("leader_info %v, want one series", got)
				}
				stop(t, e)
			})
		})
	}
}

// rawRecordBackend holds one election's raw stored value, decoded with the
// shared record codec on every read as a store-backed backend does.
type rawRecordBackend struct {
	fxelection.Backend
	raw []byte
}

func (r rawRecordBackend) decode() error {
	l, err := backendkit.UnmarshalRecord(r.raw)
	if err != nil {
		return err
	}
	return &backendkit.HeldError{Holder: l}
}

func (r rawRecordBackend) Acquire(context.Context, backendkit.AcquireRequest) (fxelection.Lease, error) {
	return fxelection.Lease{}, r.decode()
}

func (r rawRecordBackend) Get(context.Context, string) (fxelection.Lease, error) {
	return fxelection.Lease{}, r.decode()
}

// The record from the issue, planted raw in a store: the elector must
// survive it (the decoder refuses or cleans it), and so must the metrics.
func TestRawHostileRecord(t *testing.T) {
	for name, raw := range map[string][]byte{
		"redis-style": []byte("fxe1|5|3|" + hostileHolder + "|60000|0|"),
		"json":        []byte(`{"fxelection":1,"election":"jobs","holder":"` + hostileHolder + `","term":3,"duration_ms":60000}`),
		"json-escape": []byte(`{"fxelection":1,"election":"jobs","holder":"\u001b[31mx","term":3,"duration_ms":60000}`),
		"huge-ms":     []byte(`{"fxelection":1,"election":"jobs","holder":"x","term":3,"duration_ms":9223372036854775807}`),
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reg, m := newMetrics(t)
				store := rawRecordBackend{Backend: memory.New(), raw: raw}
				var errs []error
				c := testConfig("jobs", "a")
				c.Callbacks.OnError = func(err error) { errs = append(errs, err) }
				e, err := fxelection.New(c, store)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Attach(e)()
				start(t, e)
				time.Sleep(5 * retryPeriod)
				synctest.Wait()
				checkLabels(t, reg)
				if e.IsLeader() {
					t.Fatal("took over a record that has not expired")
				}
				if l, ok := e.Leader(); ok && !utf8.ValidString(l.Holder) {
					t.Fatalf("elector reports holder %q", l.Holder)
				}
				for _, err := range errs {
					if !errors.Is(err, backendkit.ErrInvalidRecord) {
						t.Fatalf("error %v, want ErrInvalidRecord", err)
					}
				}
				if !e.Status().Running {
					t.Fatal("the elector stopped running")
				}
				stop(t, e)
			})
		})
	}
}
