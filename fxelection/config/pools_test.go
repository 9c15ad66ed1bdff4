package config_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/fxelection/pool"
)

// pools wraps pool JSON objects in a document with no elections.
func pools(ps ...string) string {
	return `{"pools": [` + strings.Join(ps, ",") + `]}`
}

// poolTiming is quick enough for a test on real time, and far from the
// timing rules' limits.
const poolTiming = `"lease_duration": "3s", "renew_deadline": "2s", "retry_period": "250ms"`

// eventually polls cond every 20ms for up to 30s: generous, so that an
// overloaded machine passes; it asserts an outcome, never a speed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 30s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settled reports whether p owns exactly shards and has finished a round
// of its loop (it counts itself a member). The tests stop a pool only
// once it is settled: a pool.Pool stopped while its first round is
// reading the member slots can divide by zero in that round (a bug of
// package pool, reported, not fixed here), which these tests are not
// about.
func settled(p *pool.Pool, shards ...string) bool {
	return slices.Equal(ownedNames(p), shards) && p.Status().Members >= 1
}

// ownedNames returns the names of the shards p owns.
func ownedNames(p *pool.Pool) []string {
	var out []string
	for _, s := range p.Owned() {
		out = append(out, s.Name)
	}
	return out
}

// TestPoolDocumentDecode: a pool decodes from JSON and from YAML into the
// same Pool, and its Config numbers shard_count's shards.
func TestPoolDocumentDecode(t *testing.T) {
	const js = `{
		"backends": {"shared": {"module": "fxelection.backends.memory"}},
		"pools": [
			{"name": "orders", "shard_count": 3, "identity": "{env.HOSTNAME}", "max_workers": 4, "max_moves": 2,
			 "lease_duration": "30s", "renew_deadline": "20s", "retry_period": "4s", "backend": "shared"},
			{"name": "tenants", "shards": ["acme", "globex"], "backend": {"module": "fxelection.backends.memory"}}
		]}`
	const ym = `
backends:
  shared: {module: fxelection.backends.memory}
pools:
  - name: orders
    shard_count: 3
    identity: "{env.HOSTNAME}"
    max_workers: 4
    max_moves: 2
    lease_duration: 30s
    renew_deadline: 20s
    retry_period: 4s
    backend: shared
  - name: tenants
    shards: [acme, globex]
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
		if len(d.Elections) != 0 || len(d.Pools) != 2 {
			t.Fatalf("%s: %d elections, %d pools, want 0 and 2", name, len(d.Elections), len(d.Pools))
		}
		p := d.Pools[0]
		if p.Name != "orders" || p.ShardCount != 3 || p.Identity != "host-7" || p.MaxWorkers != 4 || p.MaxMoves != 2 ||
			time.Duration(p.LeaseDuration) != 30*time.Second || time.Duration(p.RenewDeadline) != 20*time.Second ||
			time.Duration(p.RetryPeriod) != 4*time.Second || p.Backend.Use != "shared" {
			t.Errorf("%s: pools[0] = %+v", name, p)
		}
		c := p.Config()
		if !slices.Equal(c.Shards, []string{"0", "1", "2"}) || c.Name != "orders" || c.Identity != "host-7" ||
			c.MaxWorkers != 4 || c.MaxMoves != 2 || c.RetryPeriod != 4*time.Second {
			t.Errorf("%s: pools[0].Config() = %+v", name, c)
		}
		q := d.Pools[1]
		if q.Name != "tenants" || !slices.Equal(q.Config().Shards, []string{"acme", "globex"}) || q.Backend.Module == nil {
			t.Errorf("%s: pools[1] = %+v", name, q)
		}
	}
}

// TestPoolDocumentErrors: every bad pool setting is an error naming its
// path, and nothing else is reported.
func TestPoolDocumentErrors(t *testing.T) {
	const ok = `"shard_count": 2, "backend": ` + mem
	for _, tc := range []struct {
		name string
		doc  string
		want []string // lines of the error, each "path: message" (substring match)
		is   error
	}{
		{"empty document", `{}`, []string{`elections: required: a document needs at least one election (elections), pool (pools) or locker (lockers)`}, config.ErrRequired},
		{"no elections, no pools", `{"elections": [], "pools": []}`, []string{`elections: required`}, config.ErrRequired},
		{"missing name", pools(`{` + ok + `}`), []string{`pools[0].name: required`}, config.ErrRequired},
		{"empty name", pools(`{"name": "", ` + ok + `}`), []string{`pools[0].name: required`}, config.ErrRequired},
		{"name unprintable", pools(`{"name": "a\u0001", ` + ok + `}`),
			[]string{`pools[0].name: invalid value: a pool name is its fx name tag`}, config.ErrInvalidValue},
		{"name unfit for a tag", pools(`{"name": "a b", ` + ok + `}`),
			[]string{`pools[0].name: invalid value: a pool name is its fx name tag`}, config.ErrInvalidValue},
		{"name too long with its shards", pools(`{"name": "` + strings.Repeat("n", 195) + `", ` + ok + `}`),
			[]string{`pools[0].name: fxelection: Name: `}, nil},
		// Every shard is checked, not only the longest; the error names
		// the shard's index and never quotes it.
		{"unprintable shard after a long one", pools(`{"name": "p", "shards": ["a-long-and-valid-shard-name", "x\u0001"], "backend": ` + mem + `}`),
			[]string{`pools[0].shards[1]: invalid value: must be printable (byte 1 is a control character)`}, nil},
		{"shard too long with the name", pools(`{"name": "p", "shards": ["a", "` + strings.Repeat("s", 195) + `"], "backend": ` + mem + `}`),
			[]string{`pools[0].shards[1]: fxelection: Shards[1]: with Name, its election name must be at most 200 bytes`}, nil},
		{"both shards and shard_count", pools(`{"name": "p", "shards": ["a"], ` + ok + `}`),
			[]string{`pools[0].shard_count: invalid value: set shards or shard_count, not both`}, config.ErrInvalidValue},
		{"neither shards nor shard_count", pools(`{"name": "p", "backend": ` + mem + `}`),
			[]string{`pools[0].shards: required: set shards (the shards' names) or shard_count (how many)`}, config.ErrRequired},
		{"empty shards", pools(`{"name": "p", "shards": [], "backend": ` + mem + `}`),
			[]string{`pools[0].shards: required`}, config.ErrRequired},
		{"shard_count too large", pools(`{"name": "p", "shard_count": 100001, "backend": ` + mem + `}`),
			[]string{`pools[0].shard_count: invalid value: at most 100000 (is 100001)`}, config.ErrInvalidValue},
		{"too many shards in all", pools(`{"name": "p", "shard_count": 60000, "backend": `+mem+`}`,
			`{"name": "q", "shard_count": 40001, "backend": `+mem+`}`),
			[]string{`pools[1]: invalid value: the document's pools have more than 100000 shards in all`}, config.ErrInvalidValue},
		{"shard_count negative", pools(`{"name": "p", "shard_count": -3, "backend": ` + mem + `}`),
			[]string{`pools[0].shard_count: invalid value: must be positive (is -3)`}, config.ErrInvalidValue},
		{"shard_count not an integer", pools(`{"name": "p", "shard_count": 1.5, "backend": ` + mem + `}`),
			[]string{`pools[0].shard_count: wrong type: want an integer that fits int`}, config.ErrWrongType},
		{"shard_count overflows", pools(`{"name": "p", "shard_count": 1e30, "backend": ` + mem + `}`),
			[]string{`pools[0].shard_count: wrong type`}, config.ErrWrongType},
		{"empty shard", pools(`{"name": "p", "shards": ["a", ""], "backend": ` + mem + `}`),
			[]string{`pools[0].shards[1]: required`}, config.ErrRequired},
		{"repeated shard", pools(`{"name": "p", "shards": ["a", "b", "a"], "backend": ` + mem + `}`),
			[]string{`pools[0].shards[2]: invalid value: repeats shards[0]`}, config.ErrInvalidValue},
		{"shard is a number", pools(`{"name": "p", "shards": ["a", 2], "backend": ` + mem + `}`),
			[]string{`pools[0].shards[1]: wrong type: want string, got number`}, config.ErrWrongType},
		{"duration without unit", pools(`{"name": "p", "lease_duration": "15", ` + ok + `}`),
			[]string{`pools[0].lease_duration: invalid value: not a duration`}, config.ErrInvalidValue},
		{"duration as number", pools(`{"name": "p", "retry_period": 2, ` + ok + `}`),
			[]string{`pools[0].retry_period: wrong type: want a duration string such as "1.5s", got number`}, config.ErrWrongType},
		{"renew deadline past the lease", pools(`{"name": "p", "lease_duration": "1s", "renew_deadline": "2s", ` + ok + `}`),
			[]string{`pools[0].renew_deadline: fxelection: RenewDeadline: must be shorter than LeaseDuration`}, nil},
		{"negative retry period", pools(`{"name": "p", "retry_period": "-1s", ` + ok + `}`),
			[]string{`pools[0].retry_period: fxelection: RetryPeriod:`}, nil},
		{"max_workers too large", pools(`{"name": "p", "max_workers": 5000, ` + ok + `}`),
			[]string{`pools[0].max_workers: fxelection: MaxWorkers: must be in [1, 1024] (is 5000)`}, nil},
		{"max_moves negative", pools(`{"name": "p", "max_moves": -1, ` + ok + `}`),
			[]string{`pools[0].max_moves: fxelection: MaxMoves: must be positive (is -1)`}, nil},
		{"identity unprintable", pools(`{"name": "p", "identity": "a\u0001", ` + ok + `}`),
			[]string{`pools[0].identity: fxelection: Identity: must be printable`}, nil},
		{"unknown key", pools(`{"name": "p", "shard_cuont": 2, "backend": ` + mem + `}`),
			[]string{`pools[0].shard_cuont: unknown key (did you mean "shard_count"?)`}, config.ErrUnknownKey},
		{"duplicate key", pools(`{"name": "p", "name": "q", ` + ok + `}`),
			[]string{`pools[0].name: duplicate key`}, config.ErrDuplicateKey},
		{"pools is an object", `{"pools": {}}`, []string{`pools: wrong type: want an array, got object`}, config.ErrWrongType},
		{"duplicate pool names", pools(`{"name": "p", `+ok+`}`, `{"name": "q", `+ok+`}`, `{"name": "p", `+ok+`}`),
			[]string{`pools[2].name: invalid value: pool name already used by pools[0]`}, config.ErrInvalidValue},
		{"missing backend", pools(`{"name": "p", "shard_count": 2}`), []string{`pools[0].backend: required`}, config.ErrRequired},
		{"unknown backend name", `{"backends": {"mem": ` + mem + `}, "pools": [{"name": "p", "shard_count": 2, "backend": "mme"}]}`,
			[]string{`pools[0].backend: invalid value: no backends entry by that name (did you mean "mem"?) (defined: "mem")`,
				`backends.mem: invalid value: not used by any election, pool or locker`}, config.ErrInvalidValue},
		{"unknown backend module", pools(`{"name": "p", "shard_count": 2, "backend": {"module": "fxelection.backends.nope"}}`),
			[]string{`pools[0].backend.module: unknown module`}, config.ErrUnknownModule},
		{"backend module Validate", pools(`{"name": "p", "shard_count": 2, "backend": ` + probe(`"fail_validate": true`) + `}`),
			[]string{`pools[0].backend: fxelection.backends.probe:`}, nil},
		{"shard with the reserved character", pools(`{"name": "p", "shards": ["a", "b#0"], "backend": ` + mem + `}`),
			[]string{`pools[0].shards[1]: invalid value: must not contain '#' (byte 1 is;`}, config.ErrInvalidValue},
		{"unprintable shard, not the longest", pools(`{"name": "p", "shards": ["a-long-and-valid-shard-name", "x\u0001"], "backend": ` + mem + `}`),
			[]string{`pools[0].shards[1]: invalid value: must be printable (byte 1 is a control character)`}, config.ErrInvalidValue},
		{"election named as a preemption request", `{"elections": [{"name": "x#preempt", "fx_name": "x", "backend": ` + mem + `}]}`,
			[]string{`elections[0].name: fxelection: Name: must not contain '#' (byte 1 is;`}, nil},
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

// TestPoolDocumentValid: documents with pools that are valid, a pool and
// an election of the same name among them.
func TestPoolDocumentValid(t *testing.T) {
	for name, d := range map[string]string{
		"pools only":      pools(`{"name": "p", "shard_count": 1, "backend": ` + mem + `}`),
		"the most shards": pools(`{"name": "p", "shard_count": 100000, "backend": ` + mem + `}`),
		"the most shards in all": pools(`{"name": "p", "shard_count": 60000, "backend": `+mem+`}`,
			`{"name": "q", "shards": ["a", "b"], "backend": `+mem+`}`, `{"name": "r", "shard_count": 39998, "backend": `+mem+`}`),
		"pool named as an election": `{"elections": [{"name": "p", "backend": ` + mem + `}], "pools": [{"name": "p", "shards": ["x"], "backend": ` + mem + `}]}`,
		"pools with a common prefix": pools(`{"name": "p", "shard_count": 1, "backend": `+mem+`}`,
			`{"name": "pq", "shard_count": 1, "backend": `+mem+`}`),
		// A pool's records are "p#shard/…" and "p#member/…", which no
		// name in a document can be.
		"an election under a pool's name and /": `{"elections": [{"name": "p/shard/0", "fx_name": "e", "backend": ` + mem + `}], "pools": [{"name": "p", "shard_count": 1, "backend": ` + mem + `}]}`,
		"a pool under a pool's name and /": pools(`{"name": "p", "shard_count": 1, "backend": `+mem+`}`,
			`{"name": "p/member", "shard_count": 1, "backend": `+mem+`}`),
	} {
		if _, err := config.Parse([]byte(d)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestMaxPoolShardsIsPools: the bound a document puts on shards is the
// one pool.New enforces.
func TestMaxPoolShardsIsPools(t *testing.T) {
	shards := make([]string, config.MaxPoolShards+1)
	for i := range shards {
		shards[i] = strconv.Itoa(i)
	}
	_, err := pool.New(pool.Config{Name: "p", Shards: shards}, store(t.Name()))
	var ce *fxelection.ConfigError
	if !errors.As(err, &ce) || ce.Field != "Shards" || !strings.Contains(ce.Reason, "at most "+strconv.Itoa(config.MaxPoolShards)+" ") {
		t.Fatalf("pool.New with MaxPoolShards+1 shards: %v", err)
	}
}

// namedPool takes the pool tagged "orders" and the elector tagged
// "billing" from the graph.
type namedPool struct {
	fx.In
	Pool    *pool.Pool          `name:"orders"`
	Elector *fxelection.Elector `name:"billing"`
}

// TestPoolDocumentApp: an fx app from a document with one election and
// one pool on a shared memory backend starts; the elector leads and the
// pool, its only worker, comes to own every shard; the app stops cleanly
// (every shard released, and no goroutine left: goleak).
func TestPoolDocumentApp(t *testing.T) {
	opt, err := config.Load([]byte(`{
		"backends": {"shared": {"module": "fxelection.backends.memory"}},
		"elections": [{"name": "billing", "backend": "shared", ` + poolTiming + `}],
		"pools": [{"name": "orders", "shard_count": 8, "identity": "worker-1", "backend": "shared", ` + poolTiming + `}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	var got namedPool
	app := fxtest.New(t, fx.NopLogger, opt, fx.Populate(&got))
	if got.Pool == nil || got.Elector == nil {
		t.Fatal("the pool or the elector is not in the graph")
	}
	released := make(chan string, 8)
	for i := range 8 {
		e := got.Pool.Elector(strconv.Itoa(i))
		if e == nil {
			t.Fatalf("no elector for shard %d", i)
		}
		e.AddObserver(fxelection.ObserverFunc(func(ev fxelection.Event) {
			if ev.Kind == fxelection.EventOperation && ev.Op == backendkit.OpRelease && ev.Err == nil {
				released <- ev.Election
			}
		}))
	}
	app.RequireStart()
	want := []string{"0", "1", "2", "3", "4", "5", "6", "7"}
	eventually(t, "the pool owns every shard and the elector leads", func() bool {
		return settled(got.Pool, want...) && got.Elector.IsLeader()
	})
	for _, s := range got.Pool.Owned() {
		if s.Lease.Holder != "worker-1" {
			t.Errorf("shard %s held by %q, want worker-1", s.Name, s.Lease.Holder)
		}
	}
	app.RequireStop()
	if n := len(released); n != 8 {
		t.Errorf("%d shards released at stop, want 8", n)
	}
	if got.Pool.Owned() != nil || got.Elector.IsLeader() {
		t.Error("still owning or leading after the app stopped")
	}
}

// TestPoolRuntime: a Runtime runs a document's pools, finds them by name,
// keeps an unchanged pool across Apply, replaces a changed one, and stops
// them on Close.
func TestPoolRuntime(t *testing.T) {
	rt := config.NewRuntime(config.RuntimeOptions{})
	ctx := context.Background()
	t.Cleanup(func() { _ = rt.Close(ctx) })
	first := parseDoc(t, `{
		"backends": {"shared": {"module": "fxelection.backends.memory"}},
		"elections": [{"name": "jobs", "backend": "shared", `+poolTiming+`}],
		"pools": [
			{"name": "jobs", "shards": ["a", "b"], "backend": "shared", `+poolTiming+`},
			{"name": "gone", "shard_count": 1, "backend": {"module": "fxelection.backends.memory"}, `+poolTiming+`}
		]}`)
	if err := rt.Apply(ctx, first); err != nil {
		t.Fatal(err)
	}
	jobs, gone := rt.Pool("jobs"), rt.Pool("gone")
	if jobs == nil || gone == nil || rt.Pool("nope") != nil || len(rt.Pools()) != 2 || len(rt.Electors()) != 1 {
		t.Fatalf("Pool(jobs) = %p, Pool(gone) = %p, Pool(nope) = %p, %d pools, %d electors",
			jobs, gone, rt.Pool("nope"), len(rt.Pools()), len(rt.Electors()))
	}
	eventually(t, "the pools own their shards", func() bool {
		return settled(jobs, "a", "b") && settled(gone, "0")
	})
	// The same pool; "gone" removed; a new pool with a changed setting.
	second := parseDoc(t, `{
		"backends": {"shared": {"module": "fxelection.backends.memory"}},
		"elections": [{"name": "jobs", "backend": "shared", `+poolTiming+`}],
		"pools": [
			{"name": "jobs", "shards": ["a", "b"], "backend": "shared", `+poolTiming+`},
			{"name": "more", "shard_count": 2, "backend": "shared", `+poolTiming+`}
		]}`)
	if err := rt.Apply(ctx, second); err != nil {
		t.Fatal(err)
	}
	if rt.Pool("jobs") != jobs {
		t.Error("an unchanged pool was replaced")
	}
	if rt.Pool("gone") != nil || gone.Owned() != nil {
		t.Error("a removed pool is still there or owns shards")
	}
	more := rt.Pool("more")
	if more == nil {
		t.Fatal("no pool more")
	}
	eventually(t, "the new pool owns its shards", func() bool {
		return settled(more, "0", "1")
	})
	third := parseDoc(t, strings.Replace(string(mustJSON(t, second)), `"shards": [`, `"max_moves": 1, "shards": [`, 1))
	if err := rt.Apply(ctx, third); err != nil {
		t.Fatal(err)
	}
	if rt.Pool("jobs") == jobs || jobs.Owned() != nil {
		t.Error("a changed pool kept running")
	}
	if rt.Pool("more") != more {
		t.Error("an unchanged pool was replaced")
	}
	if p := rt.Pool("jobs"); p != nil {
		eventually(t, "the changed pool owns its shards", func() bool { return settled(p, "a", "b") })
	}
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if rt.Pool("more") != nil || len(rt.Pools()) != 0 || more.Owned() != nil {
		t.Error("pools left after Close")
	}
}

// mustJSON returns d as JSON.
func mustJSON(t *testing.T, d *config.Document) []byte {
	t.Helper()
	raw, err := d.RedactedJSON()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
