package pglease

// createTableSQL is the lease table's DDL (see CreateTableStatement).
// incarnation is the incarnation token (backendkit.AcquireRequest) that
// acquired the row's term, NULL when the request named none; every
// statement that writes a term writes it too.
func createTableSQL(table string) string {
	return `CREATE TABLE IF NOT EXISTS ` + table + ` (
	name             text        PRIMARY KEY,
	holder           text,
	metadata         jsonb       NOT NULL DEFAULT '{}',
	term             bigint      NOT NULL DEFAULT 0,
	duration_ms      bigint      NOT NULL DEFAULT 0,
	acquired_at      timestamptz,
	renewed_at       timestamptz,
	expires_at       timestamptz NOT NULL DEFAULT '-infinity',
	incarnation      text
)`
}

// statements are the backend's SQL, built once per table by
// buildStatements.
type statements struct {
	ensure, acquire, renew, renewBatch, release, transfer, get string
}

// clockTermSQL is the server's clock in microseconds since the Unix epoch,
// taken when the statement computes the new row; maxTermSQL is
// backendkit.MaxTerm, the largest bigint.
const (
	clockTermSQL = `floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint`
	maxTermSQL   = `9223372036854775807`
)

// buildStatements returns the SQL for table.
func buildStatements(table string) statements {
	// The advisory lock serialises creators across processes: a plain
	// CREATE TABLE IF NOT EXISTS can still fail with a unique violation on
	// pg_type when two sessions run it at once. The existence check comes
	// first so that a role without CREATE on the schema can use a table an
	// operator created.
	ensure := `DO $fxelection$
BEGIN
	IF to_regclass('` + table + `') IS NULL THEN
		PERFORM pg_advisory_xact_lock(hashtext('fxelection create ` + table + `'));
		IF to_regclass('` + table + `') IS NULL THEN
			` + createTableSQL(table) + `;
		END IF;
	END IF;
END
$fxelection$`

	// One statement: take the lease if the row is missing, released, expired
	// by the server's clock, or ours; otherwise return the row as the
	// statement's snapshot saw it (won = false). The lease continues (keeps
	// its term and acquired_at) only when the row is ours, live, and $5 is
	// empty or the row's incarnation (backendkit.AcquireRequest.Continues).
	// Any other lease starts anew: it
	// gets the larger of the row's term plus one and the server's clock in
	// microseconds (the new row's term, computed once), so terms keep
	// rising when the row is deleted, and our own live row taken by a new
	// incarnation gets a term above its own. A new lease is not started at
	// the largest bigint (Acquire then reports ErrTermExhausted) rather
	// than overflow.
	cont := `l.holder = excluded.holder AND l.expires_at > now()` +
		` AND (excluded.incarnation IS NULL OR l.incarnation = excluded.incarnation)`
	// startTerm is the term of a lease that starts anew on row l, given
	// the server's clock term read once for the statement (clockTermSQL);
	// the caller keeps l.term below maxTermSQL.
	startTerm := func(clock string) string { return `greatest(l.term + 1, ` + clock + `)` }
	newTerm := `CASE WHEN ` + cont + ` THEN l.term ELSE ` + startTerm(`excluded.term`) + ` END`
	acquire := `WITH up AS (
	INSERT INTO ` + table + ` AS l (name, holder, metadata, term, duration_ms, acquired_at, renewed_at, expires_at, incarnation)
	SELECT $1::text, $2::text, $3::text::jsonb, c.t, $4::bigint, now(), now(), now() + $4::bigint * interval '1 millisecond', nullif($5::text, '')
	FROM (SELECT ` + clockTermSQL + ` AS t) AS c
	ON CONFLICT (name) DO UPDATE SET
		holder      = excluded.holder,
		metadata    = excluded.metadata,
		duration_ms = excluded.duration_ms,
		renewed_at  = excluded.renewed_at,
		expires_at  = excluded.expires_at,
		term        = ` + newTerm + `,
		acquired_at = CASE WHEN ` + cont + ` THEN l.acquired_at ELSE excluded.acquired_at END,
		incarnation = excluded.incarnation
	WHERE (l.holder = excluded.holder AND l.expires_at > now() AND l.term > 0 AND ((` + cont + `) OR l.term < ` + maxTermSQL + `))
		OR ((l.holder IS NULL OR l.expires_at <= now()) AND coalesce(l.term, 0) < ` + maxTermSQL + `)
	RETURNING l.holder, l.metadata::text AS metadata, l.term, l.duration_ms, l.acquired_at, l.expires_at, l.incarnation
)
SELECT true, holder, metadata, term, duration_ms, acquired_at, expires_at, incarnation, true FROM up
UNION ALL
SELECT false, holder, metadata::text, term, duration_ms, acquired_at, expires_at, incarnation, coalesce(expires_at > now(), true)
FROM ` + table + ` WHERE name = $1 AND NOT EXISTS (SELECT 1 FROM up)`

	renew := `UPDATE ` + table + `
SET renewed_at = now(), duration_ms = $4::bigint, expires_at = now() + $4::bigint * interval '1 millisecond'
WHERE name = $1 AND holder = $2 AND term = $3::bigint AND expires_at > now()
RETURNING expires_at`

	// Renew for many leases at once: the same conditions per row, matched
	// against arrays of names, holders, terms and durations.
	renewBatch := `UPDATE ` + table + ` AS l
SET renewed_at = now(), duration_ms = v.d, expires_at = now() + v.d * interval '1 millisecond'
FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) AS v(name, holder, term, d)
WHERE l.name = v.name AND l.holder = v.holder AND l.term = v.term AND l.expires_at > now()
RETURNING l.name, l.holder, l.term, l.expires_at`

	// NOTIFY payloads are limited to 8000 bytes; longer names go unannounced
	// (followers then poll) rather than failing the release. $5 is the
	// releaser's expires_at (NULL: not checked): any acquire or renewal
	// since the releaser last heard from the store moved it, so a stale
	// release (a delayed statement of an earlier incarnation) matches nothing.
	release := `WITH r AS (
	UPDATE ` + table + `
	SET holder = NULL, metadata = '{}', renewed_at = now(), expires_at = now()
	WHERE name = $1 AND holder = $2 AND term = $3::bigint
		AND ($5::timestamptz IS NULL OR expires_at = $5::timestamptz)
	RETURNING name
)
SELECT pg_notify($4::text, name) FROM r WHERE octet_length(name) < 8000`

	// Release ($1 to $5 as there) and, in the same UPDATE, the row Acquire
	// writes on a free lease for holder $6 with metadata $7 for $8
	// milliseconds (and incarnation $9): a new term by Acquire's rule, one
	// clock reading for the whole statement. The row must be the caller's
	// as Release matches it, and live by the server's clock; a row at the
	// largest term is left alone (the caller reports ErrTermExhausted). The
	// final SELECT reads n, so the notification is sent whenever a row was
	// transferred (on commit, like Release's).
	transfer := `WITH t AS (
	UPDATE ` + table + ` AS l
	SET holder      = $6::text,
		metadata    = $7::text::jsonb,
		term        = ` + startTerm(`c.t`) + `,
		duration_ms = $8::bigint,
		acquired_at = now(),
		renewed_at  = now(),
		expires_at  = now() + $8::bigint * interval '1 millisecond',
		incarnation = nullif($9::text, '')
	FROM (SELECT ` + clockTermSQL + ` AS t) AS c
	WHERE l.name = $1 AND l.holder = $2 AND l.term = $3::bigint
		AND ($5::timestamptz IS NULL OR l.expires_at = $5::timestamptz)
		AND l.expires_at > now() AND l.term < ` + maxTermSQL + `
	RETURNING l.name, l.holder, l.metadata::text AS metadata, l.term, l.duration_ms, l.acquired_at, l.expires_at, l.incarnation
), n AS (
	SELECT pg_notify($4::text, name) FROM t WHERE octet_length(name) < 8000
)
SELECT holder, metadata, term, duration_ms, acquired_at, expires_at, incarnation, true, (SELECT count(*) FROM n)
FROM t`

	get := `SELECT holder, metadata::text, term, duration_ms, acquired_at, expires_at, incarnation, coalesce(expires_at > now(), true)
FROM ` + table + ` WHERE name = $1`

	return statements{ensure: ensure, acquire: acquire, renew: renew, renewBatch: renewBatch, release: release, transfer: transfer, get: get}
}
