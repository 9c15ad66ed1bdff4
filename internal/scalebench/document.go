package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"go.uber.org/fx"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/fxelection/modkit"
	"github.com/fxelection/fxelection/internal/testserver"
)

func init() { modkit.RegisterModule(counted{}) }

// counted is the module fxelection.backends.counted: it provisions the
// backend module in its "inner" setting and hands out that backend wrapped
// in counting (countingBatch when the inner backend batches), published in
// lastCounted for the measurement.
type counted struct {
	Inner modkit.BackendRef `json:"inner" config:"required"`
	b     fxelection.Backend
}

// lastCounted is the counting wrapper of the one counted module a
// -document child runs.
var lastCounted atomic.Pointer[counting]

func (counted) ElectionModule() modkit.ModuleInfo {
	return modkit.ModuleInfo{ID: "fxelection.backends.counted", Doc: "scalebench: counts the calls to the backend module in inner",
		New: func() modkit.Module { return new(counted) }}
}

func (c *counted) Provision(ctx modkit.Context) error {
	inner, err := ctx.ProvisionBackend(c.Inner)
	if err != nil {
		return fmt.Errorf("inner: %w", err)
	}
	var be *counting
	c.b, be = countCalls(inner)
	lastCounted.Store(be)
	return nil
}

func (c *counted) Backend() (fxelection.Backend, error) {
	if c.b == nil {
		return nil, errors.New("not provisioned")
	}
	return c.b, nil
}

// moduleFor starts the store for kind and returns the settings of its
// backend module and a function that stops the store.
func moduleFor(kind string) (map[string]any, func(), error) {
	switch kind {
	case "memory":
		return map[string]any{"module": "fxelection.backends.memory"}, func() {}, nil
	case "redis":
		srv, err := testserver.StartRedis(testserver.RedisOptions{})
		if err != nil {
			return nil, nil, err
		}
		return map[string]any{"module": "fxelection.backends.redis", "addr": srv.Addr()}, func() { _ = srv.Close() }, nil
	case "postgres":
		srv, err := testserver.StartPostgres(testserver.PostgresOptions{})
		if err != nil {
			return nil, nil, err
		}
		return map[string]any{"module": "fxelection.backends.postgres", "dsn": srv.DSN()}, func() { _ = srv.Close() }, nil
	}
	return nil, nil, fmt.Errorf("unknown backend %q", kind)
}

// documentFor is the configuration document of n elections, one candidate
// each, on one shared backends entry wrapping inner.
func documentFor(o options, n int, inner map[string]any) ([]byte, error) {
	mod, err := json.Marshal(map[string]any{"module": "fxelection.backends.counted", "inner": inner})
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"backends": {"shared": %s}, "elections": [`, mod)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name": "e%d", "identity": "bench", "lease_duration": %q, "renew_deadline": %q, "retry_period": %q, "backend": "shared"}`,
			i, o.lease.String(), o.deadline.String(), o.retry.String())
	}
	b.WriteString("]}")
	return []byte(b.String()), nil
}

// documentGroup collects the electors of a built document.
type documentGroup struct {
	fx.In
	All []*fxelection.Elector `group:"fxelection.electors"`
}

// documentApp builds the fx app of n configured elections on the backend
// module inner: the electors are constructed (by fx.New) but not started.
func documentApp(o options, inner map[string]any, n int) (*fx.App, []*fxelection.Elector, error) {
	raw, err := documentFor(o, n, inner)
	if err != nil {
		return nil, nil, err
	}
	opt, err := config.Load(raw)
	if err != nil {
		return nil, nil, err
	}
	var g documentGroup
	app := fx.New(fx.NopLogger, opt, fx.Populate(&g), fx.StartTimeout(o.leadTimeout), fx.StopTimeout(o.leadTimeout))
	if err := app.Err(); err != nil {
		return nil, nil, err
	}
	if len(g.All) != n {
		return nil, nil, fmt.Errorf("document built %d electors, want %d", len(g.All), n)
	}
	return app, g.All, nil
}
