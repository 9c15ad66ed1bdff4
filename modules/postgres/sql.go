package pglease

// createTableSQL is the lease table's DDL (see CreateTableStatement).
func createTableSQL(table string) string {
	return `CREATE TABLE IF NOT EXISTS ` + table + ` (
	name        text        PRIMARY KEY,
	holder      text,
	metadata    jsonb       NOT NULL DEFAULT '{}',
	term        bigint      NOT NULL DEFAULT 0,
	duration_ms bigint      NOT NULL DEFAULT 0,
	acquired_at timestamptz,
	renewed_at  timestamptz,
	expires_at  timestamptz NOT NULL DEFAULT '-infinity'
)`
}

// statements are the backend's SQL, built once per table by
// buildStatements.
type statements struct {
	ensure, acquire, renew, renewBatch, release, get string
}

// clockTermSQL is the server's clock in microseconds since the Unix epoch,
// taken when the statement computes the new row; maxTermSQL is
// fxelection.MaxTerm, the largest bigint.
const (
	clockTermSQL = `floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint`
	maxTermSQL   = `9223372036854775807`
)

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
		` + createTableSQL(table) + `;
	END IF;
END
$fxelection$`

	// One statement: take the lease if the row is missing, released, expired
	// by the server's clock, or ours; otherwise return the row as the
	// statement's snapshot saw it (won = false). A lease that starts anew
	// gets the larger of the row's term plus one and the server's clock in
	// microseconds (the new row's term), so terms keep rising when the row
	// is deleted. A row at the largest bigint is not taken (Acquire then
	// reports ErrTermExhausted) rather than overflow.
	acquire := `WITH up AS (
	INSERT INTO ` + table + ` AS l (name, holder, metadata, term, duration_ms, acquired_at, renewed_at, expires_at)
	VALUES ($1, $2, $3::text::jsonb, ` + clockTermSQL + `, $4::bigint, now(), now(), now() + $4::bigint * interval '1 millisecond')
	ON CONFLICT (name) DO UPDATE SET
		holder      = excluded.holder,
		metadata    = excluded.metadata,
		duration_ms = excluded.duration_ms,
		renewed_at  = excluded.renewed_at,
		expires_at  = excluded.expires_at,
		term        = CASE WHEN l.holder = excluded.holder AND l.expires_at > now() THEN l.term ELSE greatest(l.term + 1, excluded.term) END,
		acquired_at = CASE WHEN l.holder = excluded.holder AND l.expires_at > now() THEN l.acquired_at ELSE excluded.acquired_at END
	WHERE (l.holder = excluded.holder AND l.expires_at > now() AND l.term > 0)
		OR ((l.holder IS NULL OR l.expires_at <= now()) AND coalesce(l.term, 0) < ` + maxTermSQL + `)
	RETURNING l.holder, l.metadata::text AS metadata, l.term, l.duration_ms, l.acquired_at, l.expires_at
)
SELECT true, holder, metadata, term, duration_ms, acquired_at, expires_at, true FROM up
UNION ALL
SELECT false, holder, metadata::text, term, duration_ms, acquired_at, expires_at, coalesce(expires_at > now(), true)
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

	get := `SELECT holder, metadata::text, term, duration_ms, acquired_at, expires_at, coalesce(expires_at > now(), true)
FROM ` + table + ` WHERE name = $1`

	return statements{ensure: ensure, acquire: acquire, renew: renew, renewBatch: renewBatch, release: release, get: get}
}
