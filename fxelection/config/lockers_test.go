package config_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/fxelection/pool"
)

// lockers wraps locker JSON objects in a document with nothing else.
func lockers(ls ...string) string {
	return `{"lockers": [` + strings.Join(ls, ",") + `]}`
}

// takeable reports the error of TryAcquire of key by a fresh Locker on b
// (nil: it took the lock at once), releasing what it took.
func takeable(t *testing.T, b fxelection.Backend, key string) error {
	t.Helper()
	l, err := lock.New(b, lock.Options{Identity: "other"})
	if err != nil {
		t.Fatal(err)
	}
	lk, err := l.TryAcquire(context.Background(), key)
	if err != nil {
		return err
	}
	if err := lk.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	return nil
}

// TestLockerDocumentDecode: a locker decodes from JSON and from YAML into
// the same Locker, whose Options carry its settings.
func TestLockerDocumentDecode(t *testing.T) {
	const js = `{
		"backends": {"shared": {"module": "fxelection.backends.memory"}},
		"lockers": [
			{"name": "reports", "identity": "{env.HOSTNAME}", "lease_duration": "30s", "renew_deadline": "20s",
			 "retry_period": "4s", "backend": "shared"},
			{"name": "billing", "backend": {"module": "fxelection.backends.memory"}}
		]}`
	const ym = `
backends:
  shared: {module: fxelection.backends.memory}
lockers:
  - name: reports
    identity: "{env.HOSTNAME}"
    lease_duration: 30s
    renew_deadline: 20s
    retry_period: 4s
    backend: shared
  - name: billing
    backend: {module: fxelection.backends.memory}
`
	l := config.Loader{LookupEnv: env(map[string]string{"HOSTNAME": "host-7"})}
	fromJSON, err := l.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	fromYAML, err := l.ParseYAML([]byte(ym))
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]*config.Document{"JSON": fromJSON, "YAML": fromYAML} {
		if len(d.Elections) != 0 || len(d.Pools) != 0 || len(d.Lockers) != 2 {
			t.Fatalf("%s: %d elections, %d pools, %d lockers, want 0, 0 and 2", name, len(d.Elections), len(d.Pools), len(d.Lockers))
		}
		lk := d.Lockers[0]
		if lk.Name != "reports" || lk.Identity != "host-7" || lk.Backend.Use != "shared" {
			t.Errorf("%s: lockers[0] = %+v", name, lk)
		}
		want := lock.Options{Identity: "host-7", Timing: fxelection.Timing{LeaseDuration: 30 * time.Second, RenewDeadline: 20 * time.Second, RetryPeriod: 4 * time.Second}}
		if o := lk.Options(); o != want {
			t.Errorf("%s: lockers[0].Options() = %+v, want %+v", name, o, want)
		}
		if b := d.Lockers[1]; b.Name != "billing" || b.Backend.Module == nil || b.Options() != (lock.Options{}) {
			t.Errorf("%s: lockers[1] = %+v", name, b)
		}
	}
}

// TestLockerDocumentErrors: every bad locker setting is an error naming
// its path, and nothing else is reported.
func TestLockerDocumentErrors(t *testing.T) {
	const ok = `"backend": ` + mem
	for _, tc := range []struct {
		name string
		doc  string
		want []string // lines of the error, each "path: message" (substring match)
		is   error
	}{
		{"empty document", `{"lockers": []}`,
			[]string{`elections: required: a document needs at least one election (elections), pool (pools) or locker (lockers)`}, config.ErrRequired},
		{"missing name", lockers(`{` + ok + `}`), []string{`lockers[0].name: required`}, config.ErrRequired},
		{"empty name", lockers(`{"name": "", ` + ok + `}`), []string{`lockers[0].name: required`}, config.ErrRequired},
		{"name unfit for a tag", lockers(`{"name": "a b", ` + ok + `}`),
			[]string{`lockers[0].name: invalid value: a locker name is its fx name tag: want 1 to 200 ASCII letters, digits or _.-:/`}, config.ErrInvalidValue},
		{"name with a quote", lockers(`{"name": "a\"b", ` + ok + `}`),
			[]string{`lockers[0].name: invalid value: a locker name is its fx name tag`}, config.ErrInvalidValue},
		{"name unprintable", lockers(`{"name": "a\u0001", ` + ok + `}`),
			[]string{`lockers[0].name: invalid value: a locker name is its fx name tag`}, config.ErrInvalidValue},
		{"name too long", lockers(`{"name": "` + strings.Repeat("n", 201) + `", ` + ok + `}`),
			[]string{`lockers[0].name: invalid value: a locker name is its fx name tag`}, config.ErrInvalidValue},
		{"name is a number", lockers(`{"name": 7, ` + ok + `}`),
			[]string{`lockers[0].name: wrong type: want string, got number`}, config.ErrWrongType},
		{"duplicate locker names", lockers(`{"name": "l", `+ok+`}`, `{"name": "m", `+ok+`}`, `{"name": "l", `+ok+`}`),
			[]string{`lockers[2].name: invalid value: locker name already used by lockers[0]`}, config.ErrInvalidValue},
		{"identity unprintable", lockers(`{"name": "l", "identity": "a\u0001", ` + ok + `}`),
			[]string{`lockers[0].identity: fxelection: Identity: must be printable`}, nil},
		{"identity too long", lockers(`{"name": "l", "identity": "` + strings.Repeat("i", lock.MaxIdentityLen+1) + `", ` + ok + `}`),
			[]string{`lockers[0].identity: fxelection: Identity: must be at most ` + strconv.Itoa(lock.MaxIdentityLen) + ` bytes`}, nil},
		{"duration without unit", lockers(`{"name": "l", "lease_duration": "15", ` + ok + `}`),
			[]string{`lockers[0].lease_duration: invalid value: not a duration`}, config.ErrInvalidValue},
		{"duration overflows", lockers(`{"name": "l", "lease_duration": "9999999999999h", ` + ok + `}`),
			[]string{`lockers[0].lease_duration: invalid value: not a duration`}, config.ErrInvalidValue},
		{"duration as number", lockers(`{"name": "l", "retry_period": 2, ` + ok + `}`),
			[]string{`lockers[0].retry_period: wrong type: want a duration string such as "1.5s", got number`}, config.ErrWrongType},
		{"renew deadline past the lease", lockers(`{"name": "l", "lease_duration": "1s", "renew_deadline": "2s", ` + ok + `}`),
			[]string{`lockers[0].renew_deadline: fxelection: RenewDeadline: `}, nil},
		{"retry period past the renew deadline", lockers(`{"name": "l", "retry_period": "9s", ` + ok + `}`),
			[]string{`lockers[0].renew_deadline: fxelection: RenewDeadline: must be longer than 1.2 × RetryPeriod`}, nil},
		{"retry period too short", lockers(`{"name": "l", "retry_period": "1ms", ` + ok + `}`),
			[]string{`lockers[0].retry_period: fxelection: RetryPeriod: `}, nil},
		{"negative lease duration", lockers(`{"name": "l", "lease_duration": "-1s", ` + ok + `}`),
			[]string{`lockers[0].lease_duration: fxelection: LeaseDuration: `}, nil},
		{"unknown key", lockers(`{"name": "l", "lease_duraton": "3s", ` + ok + `}`),
			[]string{`lockers[0].lease_duraton: unknown key (did you mean "lease_duration"?)`}, config.ErrUnknownKey},
		{"an election's key", lockers(`{"name": "l", "exit_on_loss": true, ` + ok + `}`),
			[]string{`lockers[0].exit_on_loss: unknown key`}, config.ErrUnknownKey},
		{"duplicate key", lockers(`{"name": "l", "name": "m", ` + ok + `}`),
			[]string{`lockers[0].name: duplicate key`}, config.ErrDuplicateKey},
		{"lockers is an object", `{"lockers": {}}`, []string{`lockers: wrong type: want an array, got object`}, config.ErrWrongType},
		{"a locker is a string", `{"lockers": ["reports"]}`, []string{`lockers[0]: wrong type: want an object, got string`}, config.ErrWrongType},
		{"missing backend", lockers(`{"name": "l"}`), []string{`lockers[0].backend: required`}, config.ErrRequired},
		{"unknown backend name", `{"backends": {"mem": ` + mem + `}, "lockers": [{"name": "l", "backend": "mme"}]}`,
			[]string{`lockers[0].backend: invalid value: no backends entry by that name (did you mean "mem"?) (defined: "mem")`,
				`backends.mem: invalid value: not used by any election, pool or locker`}, config.ErrInvalidValue},
		{"unknown backend module", lockers(`{"name": "l", "backend": {"module": "fxelection.backends.nope"}}`),
			[]string{`lockers[0].backend.module: unknown module`}, config.ErrUnknownModule},
		{"backend module Validate", lockers(`{"name": "l", "backend": ` + probe(`"fail_validate": true`) + `}`),
			[]string{`lockers[0].backend: fxelection.backends.probe:`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.doc))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
				}
			}
			if lines := strings.Count(err.Error(), "\n") + 1; lines != len(tc.want) {
				t.Errorf("%d errors, want %d:\n%v", lines, len(tc.want), err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v does not match %v", err, tc.is)
			}
			var pe *config.PathError
			if !errors.As(err, &pe) {
				t.Errorf("error %v is not a *PathError", err)
			}
		})
	}
}

// TestLockerDocumentValid: documents with lockers that are valid.
func TestLockerDocumentValid(t *testing.T) {
	for name, d := range map[string]string{
		"lockers only":                          lockers(`{"name": "l", "backend": ` + mem + `}`),
		"a backends entry used only by lockers": `{"backends": {"m": ` + mem + `}, "lockers": [{"name": "l", "backend": "m"}, {"name": "k", "backend": "m"}]}`,
		"the shortest timing":                   lockers(`{"name": "l", "lease_duration": "30ms", "renew_deadline": "20ms", "retry_period": "10ms", "backend": ` + mem + `}`),
		"the longest identity":                  lockers(`{"name": "l", "identity": "` + strings.Repeat("i", lock.MaxIdentityLen) + `", "backend": ` + mem + `}`),
		"named as an election and a pool": `{"elections": [{"name": "x", "backend": ` + mem + `}], "pools": [{"name": "x", "shards": ["a"], "backend": ` + mem + `}],
			"lockers": [{"name": "x", "backend": ` + mem + `}]}`,
		"named under a pool's name":  `{"pools": [{"name": "p", "shards": ["a"], "backend": ` + mem + `}], "lockers": [{"name": "p/shard/a", "backend": ` + mem + `}]}`,
		"names with a common prefix": lockers(`{"name": "l", "backend": `+mem+`}`, `{"name": "l/x", "backend": `+mem+`}`),
	} {
		if _, err := config.Parse([]byte(d)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// lockRecorder journals the lock events of every Locker it observes.
type lockRecorder struct{ j *journal }

func (r lockRecorder) ObserveLock(ev lock.Event) {
	switch ev.Kind {
	case lock.EventAcquire:
		r.j.add("acquire %s %s", ev.Key, ev.Outcome)
	case lock.EventRelease:
		r.j.add("release %s", ev.Key)
	case lock.EventLost:
		r.j.add("lost %s", ev.Key)
	}
}

// namedLockers takes the document's lockers and elector from the graph.
type namedLockers struct {
	fx.In
	Reports *lock.Locker        `name:"reports"`
	Billing *lock.Locker        `name:"billing"`
	Elector *fxelection.Elector `name:"billing"`
	Pool    *pool.Pool          `name:"billing" optional:"true"`
}

// TestLockerDocumentApp: an fx app from a document with two lockers (one
// on a backends entry shared with an election, one inline) provides each
// Locker under its name; locks taken in an OnStart hook are held while
// the app runs (another Locker on the same store cannot take them); the
// app's stop releases them before the modules are cleaned up; the graph's
// lock.Observer sees every Locker's events. Before the app starts the
// backend is not provisioned: a TryAcquire in an fx.Invoke fails.
func TestLockerDocumentApp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := journalFor(t.Name())
		st := "locks-" + t.Name()
		opt, err := config.Load([]byte(`{
			"backends": {"shared": ` + probeIn(t.Name(), "s", `"store": "`+st+`"`) + `},
			"elections": [{"name": "billing", "backend": "shared", ` + timing + `}],
			"lockers": [
				{"name": "reports", "identity": "reporter", "backend": "shared", ` + timing + `},
				{"name": "billing", "identity": "biller", "backend": ` + probeIn(t.Name(), "i", `"store": "`+st+`"`) + `, ` + timing + `}
			]}`))
		if err != nil {
			t.Fatal(err)
		}
		var (
			got   namedLockers
			held  []*lock.Lock
			early error
		)
		app := fxtest.New(t, fx.NopLogger, opt,
			fx.Supply(fx.Annotate(lockRecorder{j}, fx.As(new(lock.Observer)))),
			fx.Populate(&got),
			fx.Invoke(func(g namedLockers) {
				_, early = g.Reports.TryAcquire(context.Background(), "too-early")
			}),
			fx.Invoke(func(lc fx.Lifecycle, g namedLockers) {
				lc.Append(fx.StartHook(func(ctx context.Context) error {
					for _, l := range []*lock.Locker{g.Reports, g.Billing} {
						lk, err := l.Acquire(ctx, "nightly-"+l.Options().Identity)
						if err != nil {
							return err
						}
						held = append(held, lk)
					}
					return nil
				}))
			}),
		)
		if got.Reports == nil || got.Billing == nil || got.Elector == nil || got.Pool != nil {
			t.Fatalf("graph: %+v", got)
		}
		if !errors.Is(early, config.ErrNotProvisioned) {
			t.Errorf("TryAcquire in an fx.Invoke: %v, want ErrNotProvisioned", early)
		}
		if o := got.Reports.Options(); o.Identity != "reporter" || o.LeaseDuration != 3*time.Second || o.RetryPeriod != 500*time.Millisecond {
			t.Errorf("reports' Options = %+v", o)
		}
		app.RequireStart()
		if len(held) != 2 {
			t.Fatalf("%d locks taken on start, want 2", len(held))
		}
		time.Sleep(10 * time.Second) // fake time: renewed many times over
		for _, lk := range held {
			if lk.Context().Err() != nil {
				t.Errorf("lock %s ended while the app runs: %v", lk.Key(), context.Cause(lk.Context()))
			}
			if err := takeable(t, store(st), lk.Key()); !errors.Is(err, lock.ErrLocked) {
				t.Errorf("TryAcquire(%s) by another Locker while the app runs: %v, want ErrLocked", lk.Key(), err)
			}
		}
		app.RequireStop() // fails the test if a release failed
		for _, lk := range held {
			if cause := context.Cause(lk.Context()); !errors.Is(cause, lock.ErrReleased) {
				t.Errorf("lock %s: Context cause %v after stop, want ErrReleased", lk.Key(), cause)
			}
			if err := takeable(t, store(st), lk.Key()); err != nil {
				t.Errorf("TryAcquire(%s) after the app stopped: %v", lk.Key(), err)
			}
		}
		if _, err := got.Reports.TryAcquire(context.Background(), "later"); !errors.Is(err, lock.ErrClosed) {
			t.Errorf("TryAcquire after the app stopped: %v, want ErrClosed", err)
		}
		want := []string{
			"acquire too-early error",
			"s:provision", "s:backend", "i:provision", "i:backend",
			"acquire nightly-reporter acquired", "acquire nightly-biller acquired",
			"release nightly-biller", "i:cleanup", "release nightly-reporter", "s:cleanup",
			"acquire later closed",
		}
		if got := j.events()[2:]; !slices.Equal(got, want) {
			t.Errorf("life cycle:\n got %v\nwant [validate validate] %v", got, want)
		}
	})
}

// TestLockerRuntime: a Runtime runs a document's lockers and finds them by
// name; Apply keeps an unchanged locker (the same *lock.Locker, its locks
// held), closes a removed one and replaces a changed one (releasing their
// locks, before their inline module is cleaned up), and replaces the
// lockers of a backends entry whose settings changed; Close closes every
// locker.
func TestLockerRuntime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := journalFor(t.Name())
		st := "rt-locks-" + t.Name()
		rt := config.NewRuntime(config.RuntimeOptions{LockObserver: lockRecorder{j}})
		ctx := context.Background()
		shared := probeIn(t.Name(), "s", `"store": "`+st+`"`)
		first := parseDoc(t, `{
			"backends": {"shared": `+shared+`},
			"lockers": [
				{"name": "keep", "identity": "k", "backend": "shared", `+timing+`},
				{"name": "change", "identity": "c", "backend": "shared", `+timing+`},
				{"name": "gone", "backend": `+probeIn(t.Name(), "g", `"store": "`+st+`"`)+`, `+timing+`}
			]}`)
		if err := rt.Apply(ctx, first); err != nil {
			t.Fatal(err)
		}
		keep, change, gone := rt.Locker("keep"), rt.Locker("change"), rt.Locker("gone")
		if keep == nil || change == nil || gone == nil || rt.Locker("nope") != nil || len(rt.Lockers()) != 3 || len(rt.Electors()) != 0 {
			t.Fatalf("Locker(keep) = %p, Locker(change) = %p, Locker(gone) = %p, %d lockers, %d electors",
				keep, change, gone, len(rt.Lockers()), len(rt.Electors()))
		}
		take := func(l *lock.Locker, key string) *lock.Lock {
			t.Helper()
			lk, err := l.TryAcquire(ctx, key)
			if err != nil {
				t.Fatalf("TryAcquire(%s): %v", key, err)
			}
			return lk
		}
		k1, c1, g1 := take(keep, "k1"), take(change, "c1"), take(gone, "g1")
		second := parseDoc(t, `{
			"backends": {"shared": `+shared+`},
			"lockers": [
				{"name": "keep", "identity": "k", "backend": "shared", `+timing+`},
				{"name": "change", "identity": "c2", "backend": "shared", `+timing+`},
				{"name": "new", "backend": "shared", `+timing+`}
			]}`)
		if err := rt.Apply(ctx, second); err != nil {
			t.Fatal(err)
		}
		if rt.Locker("keep") != keep || k1.Context().Err() != nil {
			t.Error("an unchanged locker was replaced, or its lock ended")
		}
		if rt.Locker("gone") != nil || rt.Locker("new") == nil || len(rt.Lockers()) != 3 {
			t.Errorf("after the second Apply: gone %p, new %p, %d lockers", rt.Locker("gone"), rt.Locker("new"), len(rt.Lockers()))
		}
		if c := rt.Locker("change"); c == change || c == nil || c.Options().Identity != "c2" {
			t.Errorf("a changed locker was not replaced: %p", c)
		}
		for _, lk := range []*lock.Lock{c1, g1} {
			if cause := context.Cause(lk.Context()); !errors.Is(cause, lock.ErrReleased) {
				t.Errorf("lock %s of a closed locker: cause %v, want ErrReleased", lk.Key(), cause)
			}
			if err := takeable(t, store(st), lk.Key()); err != nil {
				t.Errorf("TryAcquire(%s) after its locker was closed: %v", lk.Key(), err)
			}
		}
		for _, l := range []*lock.Locker{change, gone} {
			if _, err := l.TryAcquire(ctx, "x"); !errors.Is(err, lock.ErrClosed) {
				t.Errorf("TryAcquire on a closed locker: %v, want ErrClosed", err)
			}
		}
		if ev := j.events(); !before(ev, "release g1", "g:cleanup") {
			t.Errorf("the removed locker's lock was not released before its module's cleanup: %v", ev)
		}
		// The shared module's settings change: every locker on it is replaced.
		third := parseDoc(t, strings.Replace(string(mustJSON(t, second)), `"store"`, `"port": 1, "store"`, 1))
		if err := rt.Apply(ctx, third); err != nil {
			t.Fatal(err)
		}
		if rt.Locker("keep") == keep || !errors.Is(context.Cause(k1.Context()), lock.ErrReleased) {
			t.Error("a locker on a changed module kept running")
		}
		k2 := take(rt.Locker("keep"), "k2")
		if err := rt.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if rt.Locker("keep") != nil || len(rt.Lockers()) != 0 || !errors.Is(context.Cause(k2.Context()), lock.ErrReleased) {
			t.Error("lockers left, or a lock held, after Close")
		}
		if err := takeable(t, store(st), "k2"); err != nil {
			t.Errorf("TryAcquire(k2) after Close: %v", err)
		}
	})
}

// before reports whether a occurs in evs, and before b.
func before(evs []string, a, b string) bool {
	i, k := slices.Index(evs, a), slices.Index(evs, b)
	return i >= 0 && k > i
}

// manyLockers returns a document of n lockers on one backends entry,
// named by name(i).
func manyLockers(n int, name func(int) string) string {
	var b strings.Builder
	b.WriteString(`{"backends": {"m": ` + mem + `}, "lockers": [`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"name": "` + name(i) + `", "backend": "m"}`)
	}
	b.WriteString("]}")
	return b.String()
}

// TestLockerHostileCounts: what a document's lockers cost grows linearly
// with their number, valid (Load builds them all) or not (every duplicate
// name reported, each at its path); no bound of their own is needed
// beyond the document's (a locker holds no goroutine and no lock until
// asked).
func TestLockerHostileCounts(t *testing.T) {
	distinct := func(i int) string { return "l" + strconv.Itoa(i) }
	same := func(int) string { return "l" }
	var err error
	small := allocated(func() { _, err = config.Load([]byte(manyLockers(1_000, distinct))) })
	if err != nil {
		t.Fatal(err)
	}
	large := allocated(func() { _, err = config.Load([]byte(manyLockers(4_000, distinct))) })
	if err != nil {
		t.Fatal(err)
	}
	if large > 6*small || large > lotsBound {
		t.Errorf("Load of 1,000 lockers allocated %d KiB, of 4,000 %d KiB: want linear growth", small>>10, large>>10)
	}
	smallDups := allocated(func() { _, err = config.Parse([]byte(manyLockers(500, same))) })
	if !errors.Is(err, config.ErrInvalidValue) {
		t.Fatalf("500 lockers of one name: %.300v", err)
	}
	dups := allocated(func() { _, err = config.Parse([]byte(manyLockers(2_000, same))) })
	if !errors.Is(err, config.ErrInvalidValue) || strings.Count(err.Error(), "\n") != 2_000-2 ||
		!strings.Contains(err.Error(), "lockers[1999].name: invalid value: locker name already used by lockers[0]") {
		t.Errorf("2,000 lockers of one name: %.300v", err)
	}
	// Each error passes the redaction path (its regexps allocate much more
	// under -race, where sync.Pool keeps nothing): like is compared with
	// like.
	if dups > 6*smallDups || dups > lotsBound {
		t.Errorf("500 duplicate names allocated %d KiB, 2,000 %d KiB: want linear growth", smallDups>>10, dups>>10)
	}
}

// TestLockerHostileValues: values that are hostile in a locker's settings
// are refused at their paths, never quoted, within the document's budget.
func TestLockerHostileValues(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name string
		doc  string
		want string
		is   error
	}{
		{"a 1 MiB name", lockers(`{"name": "` + long + `", "backend": ` + mem + `}`),
			"lockers[0].name: invalid value", config.ErrInvalidValue},
		{"a 1 MiB identity", lockers(`{"name": "l", "identity": "` + long + `", "backend": ` + mem + `}`),
			"lockers[0].identity: fxelection: Identity: must be at most", nil},
		{"a 1 MiB duration", lockers(`{"name": "l", "retry_period": "` + long + `", "backend": ` + mem + `}`),
			"lockers[0].retry_period: invalid value: not a duration", config.ErrInvalidValue},
		{"a 1 MiB backend name", lockers(`{"name": "l", "backend": "` + long + `"}`),
			"lockers[0].backend: invalid value: no backends entry by that name", config.ErrInvalidValue},
		{"nesting past MaxDepth", lockers(`{"name": "l", "backend": ` + probe(`"extra": `+strings.Repeat("[", config.MaxDepth+1)+strings.Repeat("]", config.MaxDepth+1)) + `}`),
			"syntax error: nested deeper than " + strconv.Itoa(config.MaxDepth) + " levels", config.ErrSyntax},
		{"a locker nested in a locker", lockers(`{"name": "l", "lockers": [{"name": "m"}], "backend": ` + mem + `}`),
			"lockers[0].lockers: unknown key", config.ErrUnknownKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("error %.300v, want %q", err, tc.want)
			}
			if len(err.Error()) > 1000 {
				t.Errorf("error of %d bytes: a value is quoted", len(err.Error()))
			}
		})
	}
}

// TestLockerHostilePlaceholders: a placeholder's value in every locker's
// identity is charged to the document's budget, and the variable looked
// up once.
func TestLockerHostilePlaceholders(t *testing.T) {
	var lookups int
	l := config.Loader{LookupEnv: func(k string) (string, bool) { lookups++; return strings.Repeat("v", 100_000), k == "BIG" }}
	_, err := l.Parse([]byte(manyLockers(50, func(i int) string { return "l" + strconv.Itoa(i) + `", "identity": "{env.BIG}` })))
	if !errors.Is(err, config.ErrTooLarge) || lookups != 1 {
		t.Fatalf("50 identities of 100 KB: %d lookups, error %.300v", lookups, err)
	}
}
