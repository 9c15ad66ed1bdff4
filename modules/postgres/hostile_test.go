package pglease_test

import (
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// hostileRow is a live row a foreign writer planted; the values are SQL.
type hostileRow struct{ name, holder, metadata, duration string }

// hostileRows must each decode to ErrInvalidRecord, in a UTF8 database.
var hostileRows = []hostileRow{
	{"HolderControl", `E'a\nb'`, `'{}'`, `60000`},
	{"HolderTerminalEscape", `E'\x1b[2J\x1b[31mevil'`, `'{}'`, `60000`},
	{"HolderC1Control", `E'a\u0085b'`, `'{}'`, `60000`},
	{"HolderTab", `E'a\tb'`, `'{}'`, `60000`},
	{"HolderTooLong", `repeat('h', 5000)`, `'{}'`, `60000`},
	{"DurationOverflow", `'x'`, `'{}'`, `9223372036854775807`},
	{"DurationOverflowMillis", `'x'`, `'{}'`, `9223372036855`},
	{"DurationTooLong", `'x'`, `'{}'`, `31536000001`},
	{"DurationNegative", `'x'`, `'{}'`, `-60000`},
	{"MetadataControl", `'x'`, `'{"k": "\u001b[31mred"}'`, `60000`},
	{"MetadataKeyControl", `'x'`, `'{"\n": "v"}'`, `60000`},
	{"MetadataEmptyKey", `'x'`, `'{"": "v"}'`, `60000`},
	{"MetadataNotStrings", `'x'`, `'{"k": ["v"]}'`, `60000`},
	{"MetadataTooLarge", `'x'`, `jsonb_build_object('k', repeat('v', 5000))`, `60000`},
}

// checkHostile plants r as a live row of election e in table (through adm)
// and checks that every operation of b refuses it without taking it over.
func checkHostile(t *testing.T, adm *pgxpool.Pool, b *pglease.Backend, e string, r hostileRow) {
	t.Helper()
	_, err := adm.Exec(ctxT(t), `INSERT INTO `+b.Table()+` (name, holder, metadata, term, duration_ms, expires_at)
		VALUES ($1, `+r.holder+`, `+r.metadata+`, 5, `+r.duration+`, now() + interval '1 minute')`, e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctxT(t), e); !errors.Is(err, backendkit.ErrInvalidRecord) {
		t.Fatalf("Get: %v, want ErrInvalidRecord", err)
	}
	for _, id := range []string{"a", "b"} {
		l, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: id, Duration: time.Minute})
		if !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Fatalf("Acquire as %s: %+v, %v; want ErrInvalidRecord", id, l, err)
		}
		for _, raw := range []string{"\x1b", "\n", "\xff", "\u0085"} {
			if strings.Contains(err.Error(), raw) {
				t.Fatalf("error %q quotes stored control text", err)
			}
		}
	}
	var term int64
	if err := adm.QueryRow(ctxT(t), `SELECT term FROM `+b.Table()+` WHERE name = $1 AND expires_at > now()`, e).Scan(&term); err != nil || term != 5 {
		t.Fatalf("the hostile row changed: term %d, %v", term, err)
	}
}

// TestHostileRows: rows whose holder or metadata is not printable UTF-8 or
// whose duration overflows give ErrInvalidRecord from Get and Acquire and
// are never taken over while live.
func TestHostileRows(t *testing.T) {
	d := dsn(t)
	adm := admin(t, d)
	b, _ := newBackend(t, d, "hostile", pglease.Options{Table: "pgl_hostile"})
	if err := b.CreateTable(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for _, r := range hostileRows {
		t.Run(r.name, func(t *testing.T) { checkHostile(t, adm, b, election(t), r) })
	}
}

// TestHostileRowsNotUTF8: a holder or metadata that is not valid UTF-8.
// A UTF8 database refuses such text, so the rows go into a SQL_ASCII
// database, which stores bytes as given and hands them to clients
// unconverted.
func TestHostileRowsNotUTF8(t *testing.T) {
	srv := server(t)
	adm := admin(t, srv.DSN())
	_, err := adm.Exec(ctxT(t), `CREATE DATABASE pgl_sqlascii ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0`)
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	d := strings.Replace(srv.DSN(), "/postgres?", "/pgl_sqlascii?", 1)
	ascii := admin(t, d)
	b, _ := newBackend(t, d, "ascii", pglease.Options{Table: "pgl_hostile"})
	if err := b.CreateTable(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	// The exact holder of issue 9's reproduction.
	for _, r := range []hostileRow{
		{"HolderNotUTF8", `E'\xff\xfe\xfd'`, `'{}'`, `60000`},
		{"HolderPartlyUTF8", `E'web-1\xc3'`, `'{}'`, `60000`},
		{"MetadataNotUTF8", `'x'`, `E'{"k": "\xff"}'::jsonb`, `60000`},
	} {
		t.Run(r.name, func(t *testing.T) { checkHostile(t, ascii, b, election(t), r) })
	}
	// A valid lease still works there.
	e := election(t)
	l, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: e, Identity: "ok", Duration: time.Minute, Metadata: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctxT(t), e); err != nil || got.Term != l.Term || got.Metadata["k"] != "v" {
		t.Fatalf("Get = %+v, %v", got, err)
	}
}

// FuzzDecodeRow: the row decoder never panics on any combination of field
// values (NULLs included); what it accepts passes CheckLease, and the row
// the backend would write for that lease decodes to an equal lease.
func FuzzDecodeRow(f *testing.F) {
	f.Add("web-1", `{"addr":"10.0.0.1:8080"}`, int64(1764512345678901), int64(15000), int64(1764512345678901), uint8(0))
	f.Add("\xff\xfe\xfd", `{}`, int64(5), int64(60000), int64(0), uint8(0))
	f.Add("a\nb", `{}`, int64(5), int64(60000), int64(0), uint8(0))
	f.Add("\x1b[2Jevil", `{}`, int64(5), int64(60000), int64(0), uint8(0))
	f.Add("x", `{}`, int64(5), int64(9223372036854775807), int64(0), uint8(0))
	f.Add("x", `{}`, int64(5), int64(9223372036855), int64(0), uint8(0))
	f.Add("x", `{}`, int64(0), int64(60000), int64(0), uint8(0))
	f.Add("x", `{}`, int64(-1), int64(60000), int64(0), uint8(0))
	f.Add("x", `{"k":"\u001b[31m"}`, int64(5), int64(60000), int64(0), uint8(0))
	f.Add("x", `{"k":1}`, int64(5), int64(60000), int64(0), uint8(0))
	f.Add("x", `[1,2]`, int64(5), int64(60000), int64(0), uint8(0))
	f.Add("x", `null`, int64(5), int64(60000), int64(0), uint8(0))
	f.Add("x", "{\"k\":\"\xff\"}", int64(5), int64(60000), int64(0), uint8(0))
	f.Add("x", `{}`, int64(9223372036854775807), int64(1), int64(-62135596800000000), uint8(0))
	for _, mask := range []uint8{1, 2, 4, 8, 16, 32, 64} {
		f.Add("x", `{}`, int64(5), int64(60000), int64(0), mask)
	}
	f.Fuzz(func(t *testing.T, holder, metadata string, term, durMS, atMicro int64, mask uint8) {
		// mask: which fields are NULL, and infinite expiries.
		exp := time.Now().Add(time.Minute)
		at := time.UnixMicro(atMicro)
		fields := pglease.RowFields{Holder: &holder, Metadata: &metadata, Term: &term, DurationMS: &durMS, ExpiresAt: &exp, AcquiredAt: &at}
		if mask&1 != 0 {
			fields.Holder = nil
		}
		if mask&2 != 0 {
			fields.Metadata = nil
		}
		if mask&4 != 0 {
			fields.Term = nil
		}
		if mask&8 != 0 {
			fields.DurationMS = nil
		}
		if mask&16 != 0 {
			fields.ExpiresAt = nil
		}
		fields.ExpiresInfinite = mask&32 != 0
		fields.ExpiresNegInfinite = mask&64 != 0
		l, err := pglease.DecodeRow("e", fields)
		if err != nil {
			if !errors.Is(err, backendkit.ErrInvalidRecord) {
				t.Fatalf("error %v does not match ErrInvalidRecord", err)
			}
			return
		}
		if err := l.Validate(); err != nil {
			t.Fatalf("accepted an invalid lease: %v", err)
		}
		// Re-encode as Acquire writes a row, and decode again.
		md := l.Metadata
		if md == nil {
			md = map[string]string{}
		}
		b, err := json.Marshal(md)
		if err != nil {
			t.Fatal(err)
		}
		meta2 := string(b)
		holder2, term2, dur2 := l.Holder, int64(l.Term), l.Duration.Milliseconds()
		exp2, at2 := l.ExpiresAt, l.AcquiredAt
		l2, err := pglease.DecodeRow("e", pglease.RowFields{Holder: &holder2, Metadata: &meta2, Term: &term2, DurationMS: &dur2, ExpiresAt: &exp2, AcquiredAt: &at2})
		if err != nil {
			t.Fatalf("re-encoded row of %+v does not decode: %v", l, err)
		}
		if l2.Holder != l.Holder || l2.Term != l.Term || l2.Duration != l.Duration || !maps.Equal(l2.Metadata, l.Metadata) ||
			!l2.ExpiresAt.Equal(l.ExpiresAt) || !l2.AcquiredAt.Equal(l.AcquiredAt) {
			t.Fatalf("%+v re-decodes to %+v", l, l2)
		}
		if l.Holder != holder || int64(l.Term) != term || l.Duration.Milliseconds() != durMS {
			t.Fatalf("decoded %+v from holder %q term %d duration %d", l, holder, term, durMS)
		}
	})
}
