package pglease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// TestAcquireBlockedByConcurrentWriter makes Acquire wait on a row lock held
// by another transaction and checks it decides on the row version that
// transaction commits, not on the one its own statement started with.
func TestAcquireBlockedByConcurrentWriter(t *testing.T) {
	d := dsn(t)
	b, app := newBackend(t, d, "blocked", pglease.Options{})
	if err := b.CreateTable(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	adm := admin(t, d)
	req := func(e string) backendkit.AcquireRequest {
		return backendkit.AcquireRequest{Election: e, Identity: "a", Duration: time.Minute}
	}
	cases := []struct {
		name    string
		setup   string // run before, autocommit
		writer  string // run in the blocking transaction
		wantWon bool
	}{
		{"InsertedMeanwhile", ``,
			`INSERT INTO ` + b.Table() + ` (name, holder, term, duration_ms, expires_at) VALUES ($1, 'w', 1, 60000, now() + interval '1 minute')`, false},
		{"TakenAfterRelease", `INSERT INTO ` + b.Table() + ` (name, holder, term, duration_ms, expires_at) VALUES ($1, NULL, 3, 60000, now())`,
			`UPDATE ` + b.Table() + ` SET holder = 'w', term = 4, expires_at = now() + interval '1 minute' WHERE name = $1`, false},
		{"ReleasedMeanwhile", `INSERT INTO ` + b.Table() + ` (name, holder, term, duration_ms, expires_at) VALUES ($1, 'w', 5, 60000, now() + interval '1 minute')`,
			`UPDATE ` + b.Table() + ` SET holder = NULL, expires_at = now() WHERE name = $1`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := election(t)
			if tc.setup != "" {
				if _, err := adm.Exec(ctxT(t), tc.setup, e); err != nil {
					t.Fatal(err)
				}
			}
			tx, err := adm.Begin(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(context.Background()) }()
			if _, err := tx.Exec(ctxT(t), tc.writer, e); err != nil {
				t.Fatal(err)
			}
			type out struct {
				l   fxelection.Lease
				err error
			}
			done := make(chan out, 1)
			go func() {
				l, err := b.Acquire(ctxT(t), req(e))
				done <- out{l, err}
			}()
			// Wait until Acquire is blocked on the writer's lock.
			electiontesting.WaitFor(t, electiontesting.Eventually, "Acquire to wait on the lock", func() bool {
				var n int
				err := adm.QueryRow(ctxT(t), `SELECT count(*) FROM pg_stat_activity
					WHERE application_name = $1 AND wait_event_type = 'Lock'`, app).Scan(&n)
				return err == nil && n > 0
			})
			if err := tx.Commit(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			o := <-done
			if tc.wantWon {
				if o.err != nil || o.l.Holder != "a" || o.l.Term <= 5 {
					t.Fatalf("Acquire = %+v, %v; want a's lease with a term above 5", o.l, o.err)
				}
				return
			}
			var he *backendkit.HeldError
			if !errors.As(o.err, &he) || he.Holder.Holder != "w" {
				t.Fatalf("Acquire = %+v, %v; want HeldError naming w", o.l, o.err)
			}
		})
	}
}
