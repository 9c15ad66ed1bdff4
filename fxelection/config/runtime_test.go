package config_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
)

// runtimeLog records, per election, the leadership events of every elector
// a Runtime attached, and which electors were detached.
type runtimeLog struct {
	mu       sync.Mutex
	lost     map[string]int // "leadership lost" events by election
	detached []string
}

func (l *runtimeLog) attach(e *fxelection.Elector) (func(), error) {
	name := e.Status().Election
	e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
		if ev.Kind == fxelection.EventStoppedLeading {
			l.mu.Lock()
			l.lost[name]++
			l.mu.Unlock()
		}
	}))
	return func() {
		l.mu.Lock()
		l.detached = append(l.detached, name)
		l.mu.Unlock()
	}, nil
}

func (l *runtimeLog) lostCount(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost[name]
}

func parseDoc(t *testing.T, doc string) *config.Document {
	t.Helper()
	d, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// byName returns the running electors by election name.
func byName(rt *config.Runtime) map[string]*fxelection.Elector {
	m := map[string]*fxelection.Elector{}
	for _, e := range rt.Electors() {
		m[e.Status().Election] = e
	}
	return m
}

func term(e *fxelection.Elector) uint64 { return e.Status().Lease.Term }

func TestRuntimeApplyKeepsUnchangedElections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := journalFor(t.Name())
		st := "rt-" + t.Name()
		log := &runtimeLog{lost: map[string]int{}}
		rt := config.NewRuntime(config.RuntimeOptions{Attach: log.attach})
		ctx := context.Background()
		shared := probeIn(t.Name(), "s", `"store": "`+st+`"`)
		first := parseDoc(t, `{
			"backends": {"shared": `+shared+`},
			"elections": [
				{"name": "keep", "backend": "shared", `+timing+`},
				{"name": "change", "backend": "shared", `+timing+`},
				{"name": "remove", "backend": `+probeIn(t.Name(), "r", `"store": "`+st+`"`)+`, `+timing+`}
			]}`)
		if err := rt.Apply(ctx, first); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		before := byName(rt)
		for name, e := range before {
			if !e.IsLeader() {
				t.Fatalf("%s: not leader after the first Apply", name)
			}
		}
		keepTerm, changeTerm := term(before["keep"]), term(before["change"])

		second := parseDoc(t, `{
			"backends": {"shared": `+shared+`},
			"elections": [
				{"name": "add", "backend": `+probeIn(t.Name(), "a", `"store": "`+st+`"`)+`, `+timing+`},
				{"name": "keep", "backend": "shared", `+timing+`},
				{"name": "change", "backend": "shared", "lease_duration": "4s", "renew_deadline": "2s", "retry_period": "500ms"}
			]}`)
		if err := rt.Apply(ctx, second); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		after := byName(rt)
		if got := []string{rt.Electors()[0].Status().Election, rt.Electors()[1].Status().Election, rt.Electors()[2].Status().Election}; !slices.Equal(got, []string{"add", "keep", "change"}) {
			t.Errorf("Electors in order %v, want the document's", got)
		}
		if after["keep"] != before["keep"] || term(after["keep"]) != keepTerm || !after["keep"].IsLeader() {
			t.Errorf("unchanged election: same elector %v, term %d (was %d), leader %v",
				after["keep"] == before["keep"], term(after["keep"]), keepTerm, after["keep"].IsLeader())
		}
		if n := log.lostCount("keep"); n != 0 {
			t.Errorf("unchanged election lost leadership %d times", n)
		}
		if after["change"] == before["change"] || !after["change"].IsLeader() || term(after["change"]) <= changeTerm {
			t.Errorf("changed election: new elector %v, leader %v, term %d (was %d)",
				after["change"] != before["change"], after["change"].IsLeader(), term(after["change"]), changeTerm)
		}
		if log.lostCount("change") != 1 || log.lostCount("remove") != 1 {
			t.Errorf("lost: change %d, remove %d; want 1 each", log.lostCount("change"), log.lostCount("remove"))
		}
		if _, ok := after["remove"]; ok || before["remove"].Status().Running {
			t.Error("removed election still running")
		}
		if _, err := store(st).Get(ctx, "remove"); !errors.Is(err, backendkit.ErrNoLease) {
			t.Errorf("removed election's lease: %v, want released (ErrNoLease)", err)
		}
		if !after["add"].IsLeader() {
			t.Error("added election not leader")
		}
		want := []string{"s:provision", "s:backend", "r:provision", "r:backend", "a:provision", "a:backend", "r:cleanup"}
		got := slices.DeleteFunc(j.events(), func(ev string) bool { return strings.HasSuffix(ev, ":validate") })
		if !slices.Equal(got, want) {
			t.Errorf("module life cycle:\n got %v\nwant %v (the shared module provisioned once)", got, want)
		}

		if err := rt.Close(ctx); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"keep", "change", "add"} {
			if _, err := store(st).Get(ctx, name); !errors.Is(err, backendkit.ErrNoLease) {
				t.Errorf("%s after Close: %v, want released", name, err)
			}
		}
		if len(rt.Electors()) != 0 || rt.Document() != nil {
			t.Error("Close left electors or a document")
		}
		if err := rt.Apply(ctx, second); !errors.Is(err, config.ErrRuntimeClosed) {
			t.Errorf("Apply after Close: %v", err)
		}
	})
}

// A backend module whose settings changed is provisioned anew, and every
// election on it restarts; a secret read from a file counts as a setting.
func TestRuntimeReprovisionsChangedModules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := journalFor(t.Name())
		st := "rt-" + t.Name()
		secret := "first-password"
		loader := config.Loader{ReadFile: func(string) ([]byte, error) { return []byte(secret), nil }}
		doc := func(port string) *config.Document {
			d, err := loader.Parse([]byte(`{"elections": [{"name": "x", ` + timing + `, "backend": ` +
				probeIn(t.Name(), "m", `"store": "`+st+`", "password": "{file.pw}", "port": `+port) + `}]}`))
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		rt := config.NewRuntime(config.RuntimeOptions{})
		ctx := context.Background()
		defer rt.Close(ctx)
		provisions := func() int {
			n := 0
			for _, ev := range j.events() {
				if ev == "m:provision" {
					n++
				}
			}
			return n
		}
		steps := []struct {
			name, port, secret string
			want               int // provisions so far
		}{
			{"first", "1", "first-password", 1},
			{"same settings", "1", "first-password", 1},
			{"port changed", "2", "first-password", 2},
			{"secret file changed", "2", "second-password", 3},
		}
		var prev *fxelection.Elector
		for _, s := range steps {
			secret = s.secret
			if err := rt.Apply(ctx, doc(s.port)); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			synctest.Wait()
			if got := provisions(); got != s.want {
				t.Errorf("%s: %d provisions, want %d", s.name, got, s.want)
			}
			e := rt.Electors()[0]
			if restarted := e != prev; restarted != (s.want != 1 || prev == nil) {
				t.Errorf("%s: elector restarted %v", s.name, restarted)
			}
			if !e.IsLeader() {
				t.Errorf("%s: not leader", s.name)
			}
			prev = e
		}
	})
}

// A document that fails validation or provisioning changes nothing.
func TestRuntimeBadDocumentChangesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := journalFor(t.Name())
		var detached []string
		rt := config.NewRuntime(config.RuntimeOptions{Attach: func(e *fxelection.Elector) (func(), error) {
			name := e.Status().Election
			if name == "refused" {
				return nil, errors.New("refused by Attach")
			}
			return func() { detached = append(detached, name) }, nil
		}})
		ctx := context.Background()
		defer rt.Close(ctx)
		good := parseDoc(t, `{"elections": [{"name": "x", `+timing+`, "backend": `+probeIn(t.Name(), "g", "")+`}]}`)
		if err := rt.Apply(ctx, good); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		e := rt.Electors()[0]
		termBefore := term(e)

		bad := []struct {
			name, doc, want string
		}{
			{"provision fails", `{"elections": [
				{"name": "x", ` + timing + `, "backend": ` + probeIn(t.Name(), "g", "") + `},
				{"name": "y", ` + timing + `, "backend": ` + probeIn(t.Name(), "p", `"fail_provision": true, "dsn": "postgres://u:hunter2hunter2@h/db"`) + `}]}`,
				"elections[1].backend"},
			{"extensions", `{"elections": [{"name": "x", ` + timing + `, "backend": ` + probeIn(t.Name(), "g", "") + `}],
				"extensions": [{"module": "fxelection.extensions.census", "journal": "` + t.Name() + `"}]}`,
				"extensions[0]"},
			{"Attach refuses an elector", `{"elections": [
				{"name": "x", ` + timing + `, "backend": ` + probeIn(t.Name(), "g", "") + `},
				{"name": "y", ` + timing + `, "backend": ` + probeIn(t.Name(), "a", "") + `},
				{"name": "refused", ` + timing + `, "backend": ` + probeIn(t.Name(), "a2", "") + `}]}`,
				"elections[2]: refused by Attach"},
		}
		for _, b := range bad {
			d, err := config.Parse([]byte(b.doc))
			if err != nil {
				t.Fatalf("%s: %v", b.name, err)
			}
			err = rt.Apply(ctx, d)
			if err == nil || !strings.Contains(err.Error(), b.want) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("%s: Apply error %v, want one naming %s and no secret", b.name, err, b.want)
			}
			synctest.Wait()
			if got := rt.Electors(); len(got) != 1 || got[0] != e || !e.IsLeader() || term(e) != termBefore {
				t.Errorf("%s: the running election changed", b.name)
			}
			if rt.Document() != good {
				t.Errorf("%s: the running document changed", b.name)
			}
		}
		got := j.events()
		count := func(ev string) int {
			n := 0
			for _, g := range got {
				if g == ev {
					n++
				}
			}
			return n
		}
		if count("g:provision") != 1 || count("g:cleanup") != 0 || count("p:provision") != 1 || count("p:cleanup") != 1 ||
			count("a:provision") != 1 || count("a:cleanup") != 1 || count("a2:cleanup") != 1 {
			t.Errorf("module life cycle %v: want the running module provisioned once and kept, the failed ones cleaned up", got)
		}
		if len(detached) != 1 || detached[0] != "y" {
			t.Errorf("detached %v, want y (attached before refused was refused)", detached)
		}
	})
}

func TestDocumentRedactedJSON(t *testing.T) {
	loader := config.Loader{LookupEnv: func(string) (string, bool) { return "from-the-environment", true }}
	doc, err := loader.Parse([]byte(`{"elections": [{"name": "x", "identity": "{env.ID}", "backend": ` +
		probeIn(t.Name(), "g", `"password": "literal-password", "dsn": "{env.DSN}"`) + `}]}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := doc.RedactedJSON()
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	for _, secret := range []string{"literal-password", "from-the-environment", "environment"} {
		if strings.Contains(s, secret) {
			t.Errorf("RedactedJSON shows %q:\n%s", secret, s)
		}
	}
	if !strings.Contains(s, `"fxelection.backends.probe"`) || !strings.Contains(s, `"name": "x"`) {
		t.Errorf("RedactedJSON lost the document:\n%s", s)
	}
}
