package pglease_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// createCounter is a pgx tracer counting the backend's create-table
// statements.
type createCounter struct{ n atomic.Int64 }

func (c *createCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.Contains(data.SQL, "CREATE TABLE") {
		c.n.Add(1)
	}
	return ctx
}

func (c *createCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestCreateTableOncePerBackend: 200 electors sharing one Backend make
// their first Acquire at once, on a table that does not exist yet; the
// create statement runs once, and every Acquire succeeds. After the table
// is dropped, it is created once more.
func TestCreateTableOncePerBackend(t *testing.T) {
	d := dsn(t)
	adm := admin(t, d)
	const table = "pgl_create_once"
	if _, err := adm.Exec(ctxT(t), `DROP TABLE IF EXISTS `+table); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(d)
	if err != nil {
		t.Fatal(err)
	}
	counter := &createCounter{}
	cfg.ConnConfig.Tracer = counter
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	b, err := pglease.New(pool, pglease.Options{Table: table, DisablePush: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })

	run := func() {
		t.Helper()
		const n = 200
		var wg sync.WaitGroup
		errs := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				_, errs[i] = b.Acquire(ctxT(t), backendkit.AcquireRequest{
					Election: fmt.Sprintf("%s-%d", election(t), i), Identity: "a", Duration: time.Minute,
				})
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("Acquire %d: %v", i, err)
			}
		}
	}
	run()
	if got := counter.n.Load(); got != 1 {
		t.Fatalf("create statement ran %d times for 200 concurrent first Acquires, want 1", got)
	}
	// Dropped under the running backend: the next operation fails and the
	// one after creates it again, once.
	if _, err := adm.Exec(ctxT(t), `DROP TABLE `+table); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctxT(t), "x"); err == nil {
		t.Fatal("Get right after the drop succeeded")
	}
	run()
	if got := counter.n.Load(); got != 2 {
		t.Fatalf("create statement ran %d times in all, want 2", got)
	}
}
