// Command pgfencing guards writes to PostgreSQL with the fencing term: the
// leader debits an account in a transaction that pgfence checks first, then
// a write under an older term, as a deposed leader that was paused would
// make it, is refused. It creates the tables accounts and fxelection_fence
// (and the lease table) if they are missing.
//
//	DATABASE_URL=postgres://app@localhost:5432/app go run ./examples/pgfencing
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/fence"
	pglease "github.com/fxelection/fxelection/modules/postgres"
	"github.com/fxelection/fxelection/modules/postgres/pgfence"
)

func main() {
	// An empty DATABASE_URL means libpq's defaults (PGHOST, PGUSER, …).
	if err := run(context.Background(), os.Getenv("DATABASE_URL"), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, dsn string, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS accounts (id text PRIMARY KEY, balance bigint NOT NULL);
		INSERT INTO accounts VALUES ('alice', 100) ON CONFLICT (id) DO NOTHING`); err != nil {
		return err
	}
	backend, err := pglease.New(pool, pglease.Options{})
	if err != nil {
		return err
	}
	defer backend.Close()
	elector, err := fxelection.New(fxelection.Config{Name: "billing"}, backend)
	if err != nil {
		return err
	}
	if err := elector.Start(ctx); err != nil {
		return err
	}
	defer func() {
		if err := elector.Stop(ctx); err != nil {
			log.Print(err)
		}
	}()
	if leading, err := elector.TryAcquire(ctx); err != nil || !leading {
		return fmt.Errorf("not leading (another instance leads?): %w", err)
	}

	guard, err := pgfence.New(pgfence.Options{}) // table "fxelection_fence"; names validated, quoted
	if err != nil {
		return err
	}
	err = guard.CreateTable(ctx, pool) // or let operators run pgfence.CreateTableStatement
	if err != nil {
		return err
	}
	amount, id := 25, "alice"
	_, err = elector.RunIfLeader(ctx, func(ctx context.Context) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if err := guard.Check(ctx, tx); err != nil { // fence.ErrStaleTerm: we were deposed
				return err
			}
			_, err := tx.Exec(ctx, `UPDATE accounts SET balance = balance - $1 WHERE id = $2`, amount, id)
			return err
		})
	})
	if err != nil {
		return err
	}
	lease, _ := elector.Lease()
	fmt.Fprintf(out, "debited %d from %s under term %d\n", amount, id, lease.Term)

	// A deposed leader's late write carries an older term than the fence
	// table has seen: the check refuses it and rolls the transaction back.
	late := fence.WithToken(ctx, fence.Token{Election: "billing", Term: lease.Term - 1})
	err = pgx.BeginFunc(late, pool, func(tx pgx.Tx) error {
		if err := guard.Check(late, tx); err != nil {
			return err
		}
		_, err := tx.Exec(late, `UPDATE accounts SET balance = balance - $1 WHERE id = $2`, amount, id)
		return err
	})
	fmt.Fprintf(out, "late write refused: %v\n", errors.Is(err, fence.ErrStaleTerm))
	var balance int64
	if err := pool.QueryRow(ctx, `SELECT balance FROM accounts WHERE id = $1`, id).Scan(&balance); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s's balance: %d\n", id, balance)
	return nil
}
