package pglease

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fxelection/fxelection/fxelection/backendkit"
)

var _ backendkit.BatchAcquirer = (*Backend)(nil)

// acquireAll is AcquireBatch (see backendkit.RedactingBatches), implementing
// backendkit.BatchAcquirer: the acquire statement of every request in one
// pipeline on one connection (one round trip), each statement followed by a
// Sync, so that each runs in a transaction of its own, in the order given,
// exactly as Acquire's would. A batch in one transaction (a pgx.Batch) would
// instead hold every row lock it took until its end: a follower's poll would
// hold up the renewals of other processes' leaders, and could deadlock with
// them. Each request gets what Acquire would have returned for it; where
// Acquire would read the row again (a refusal its statement's snapshot does
// not explain), that request goes on as Acquire does, on its own. A failure
// of the connection fails every request not yet answered.
func (b *Backend) acquireAll(ctx context.Context, reqs []backendkit.AcquireRequest) []backendkit.AcquireResult {
	out := make([]backendkit.AcquireResult, len(reqs))
	b.acquireBatch(ctx, reqs, out)
	return out
}

// answer is one acquire statement's outcome in a pipeline.
type answer struct {
	won, found bool
	r          row
	err        error
}

func (b *Backend) acquireBatch(ctx context.Context, reqs []backendkit.AcquireRequest, out []backendkit.AcquireResult) {
	failAll := func(idx []int, err error) {
		for _, i := range idx {
			out[i].Err = err
		}
	}
	mds := make([]string, len(reqs))
	var idx []int // the requests that pass checkAcquire
	for i, req := range reqs {
		var err error
		if mds[i], err = checkAcquire(req); err != nil {
			out[i].Err = err
			continue
		}
		idx = append(idx, i)
	}
	if len(idx) == 0 {
		return
	}
	if err := ctx.Err(); err != nil {
		failAll(idx, fmt.Errorf("acquire lease: %w", err))
		return
	}
	if err := b.ensureTable(ctx); err != nil {
		failAll(idx, fmt.Errorf("acquire lease: %w", err))
		return
	}
	sql := b.stmts()
	answers, err := b.pipelineAcquire(ctx, sql, reqs, mds, idx)
	if err != nil {
		failAll(idx, b.storeErr("acquire lease", err))
		return
	}
	for k, i := range idx {
		a := answers[k]
		if a.err != nil {
			out[i].Err = b.storeErr("acquire lease", a.err)
			continue
		}
		var again bool
		out[i].Lease, out[i].Err, again = b.acquired(ctx, reqs[i], a.won, a.found, a.r)
		if again {
			out[i].Lease, out[i].Err = b.acquire(ctx, reqs[i])
		}
	}
}

// pipelineAcquire runs the acquire statement for reqs[i], i in idx, in one
// pipeline, a Sync after each, and returns their answers in idx's order.
// err is a failure of the connection or the pipeline as a whole; a
// statement's own error is in its answer.
func (b *Backend) pipelineAcquire(ctx context.Context, sql *statements, reqs []backendkit.AcquireRequest, mds []string, idx []int) (_ []answer, err error) {
	conn, err := b.db.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	types := conn.Conn().TypeMap()
	// Prepared once per connection (pgx keeps it, named after the SQL, as
	// it does for QueryRow), so the server does not parse every statement.
	sd, err := conn.Conn().Prepare(ctx, sql.acquire, sql.acquire)
	if err != nil {
		return nil, err
	}
	pl := conn.Conn().PgConn().StartPipeline(ctx)
	defer func() {
		if cerr := pl.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	for _, i := range idx {
		params, err := textParams(acquireArgs(reqs[i], mds[i]))
		if err != nil {
			return nil, err
		}
		pl.SendQueryStatement(sd, params, nil, nil)
		pl.SendPipelineSync()
	}
	if err := pl.Flush(); err != nil {
		return nil, err
	}
	answers := make([]answer, len(idx))
	for k := range idx {
		a := &answers[k]
		res, err := pl.GetResults()
		if err != nil {
			if !isStatementErr(err) {
				return nil, err // the connection, not the statement
			}
			a.err = err
		} else if err := readAnswer(res, types, a); err != nil {
			return nil, err
		}
		if res, err := pl.GetResults(); err != nil {
			return nil, err
		} else if _, ok := res.(*pgconn.PipelineSync); !ok {
			return nil, fmt.Errorf("pipeline: got %T, want its sync", res)
		}
	}
	return answers, nil
}

// readAnswer reads one acquire statement's result res into a. Its error
// is a failure of the connection or the pipeline; a statement's own error
// goes in a.err.
func readAnswer(res any, types *pgtype.Map, a *answer) error {
	rr, ok := res.(*pgconn.ResultReader)
	if !ok {
		return fmt.Errorf("pipeline: got %T, want a result", res)
	}
	for rr.NextRow() {
		if a.found || a.err != nil { // one row at most; more is not our statement's answer
			continue
		}
		a.found = true
		fds, vals := rr.FieldDescriptions(), rr.Values()
		dest := append([]any{&a.won}, a.r.dest()...)
		if len(fds) != len(dest) {
			a.err = fmt.Errorf("acquire statement returned %d columns, want %d", len(fds), len(dest))
			continue
		}
		for c := range dest {
			if err := types.Scan(fds[c].DataTypeOID, fds[c].Format, vals[c], dest[c]); err != nil {
				a.err = fmt.Errorf("column %s: %w", fds[c].Name, err)
				break
			}
		}
	}
	if _, err := rr.Close(); err != nil {
		if !isStatementErr(err) {
			return err
		}
		a.err = err
	}
	return nil
}

// isStatementErr reports whether err is the server's error for one
// statement (the pipeline goes on at its Sync) rather than a failure of
// the connection.
func isStatementErr(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr)
}

// textParams encodes the acquire statement's arguments (strings and an
// int64, as acquireArgs gives them) in the text format; the statement
// casts each one.
func textParams(args []any) ([][]byte, error) {
	out := make([][]byte, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = []byte(v)
		case int64:
			out[i] = strconv.AppendInt(nil, v, 10)
		default:
			return nil, fmt.Errorf("acquire argument %d: unexpected type %T", i+1, a)
		}
	}
	return out, nil
}
