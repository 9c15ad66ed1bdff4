package pglease_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/internal/electiontesting"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// pwSpellings are DSNs spelling the password pw every way libpq and pgx
// accept, each pointing at addr.
func pwSpellings(pw, pwSpaced, host, port string) map[string]string {
	return map[string]string{
		"KeyValue":              "host=" + host + " port=" + port + " user=u dbname=db password=" + pw + " connect_timeout=2",
		"SpacesAroundEquals":    "host=" + host + " port=" + port + " user=u dbname=db password = " + pw + " connect_timeout=2",
		"SpaceAfterEquals":      "host=" + host + " port=" + port + " user=u dbname=db password= '" + pwSpaced + "' connect_timeout=2",
		"SpaceBeforeEquals":     "host=" + host + " port=" + port + " user=u dbname=db password ='" + pw + "' connect_timeout=2",
		"Tabs":                  "host=" + host + "\tport=" + port + "\tuser=u\tdbname=db\tpassword\t=\t" + pw + "\tconnect_timeout=2",
		"QuotedEscapedQuote":    "host=" + host + " port=" + port + ` user=u dbname=db password='it\'s-` + pw + `' connect_timeout=2`,
		"PasswordFirst":         "password=" + pw + " host=" + host + " port=" + port + " user=u dbname=db connect_timeout=2",
		"Newlines":              "host=" + host + "\nport=" + port + "\npassword =\n" + pw + "\nuser=u\nconnect_timeout=2",
		"URLUserInfo":           "postgres://u:" + pw + "@" + host + ":" + port + "/db?connect_timeout=2",
		"URLUserInfoEncoded":    "postgres://u:" + strings.ReplaceAll(pwSpaced, " ", "%20") + "@" + host + ":" + port + "/db?connect_timeout=2",
		"URLQuery":              "postgresql://u@" + host + ":" + port + "/db?password=" + pw + "&connect_timeout=2",
		"URLQueryEncodedSpaced": "postgresql://u@" + host + ":" + port + "/db?connect_timeout=2&password=" + strings.ReplaceAll(pwSpaced, " ", "+"),
	}
}

// leaks reports whether s contains pw or one of its word-parts (a partly
// redacted password still leaks).
func leaks(s string, pws ...string) bool {
	for _, pw := range pws {
		for _, part := range append([]string{pw}, strings.Fields(pw)...) {
			if len(part) >= 4 && strings.Contains(s, part) {
				return true
			}
		}
	}
	return false
}

// TestConfigModuleRedactsEverySpelling: with each spelling of the password,
// a DSN that cannot be parsed (bad port) gives a constructor error without
// the password, and a parsable DSN to a port nobody listens on gives
// operation errors without it.
func TestConfigModuleRedactsEverySpelling(t *testing.T) {
	const pw, pwSpaced = "Sup3r-Secret_pw", "Sup3r Secret-pw"
	for name, dsn := range pwSpellings(pw, pwSpaced, "127.0.0.1", "notaport") {
		t.Run("Unparsable/"+name, func(t *testing.T) {
			_, _, err := provision(t, map[string]any{"dsn": dsn + " sslmode=bogus"})
			if err == nil {
				t.Fatal("broken DSN accepted")
			}
			if leaks(err.Error(), pw, pwSpaced) {
				t.Fatalf("error leaks the password: %v", err)
			}
			if !strings.Contains(err.Error(), "dsn:") {
				t.Fatalf("error does not name the setting: %v", err)
			}
		})
	}
	for name, dsn := range pwSpellings(pw, pwSpaced, "127.0.0.1", "1") {
		t.Run("ClosedPort/"+name, func(t *testing.T) {
			b, _, err := provision(t, map[string]any{"dsn": dsn, "disable_push": true})
			if err != nil {
				t.Fatalf("valid DSN refused: %v", err)
			}
			_, err = b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: "e", Identity: "a", Duration: time.Minute})
			if err == nil || errors.Is(err, backendkit.ErrLeaseHeld) {
				t.Fatalf("Acquire against a closed port: %v", err)
			}
			if leaks(err.Error(), pw, pwSpaced) {
				t.Fatalf("error leaks the password: %v", err)
			}
		})
	}
}

// TestDSNSecrets: the password is found in every spelling, so it can be
// redacted even where pgx's own redaction misses it.
func TestDSNSecrets(t *testing.T) {
	const pw, pwSpaced = "Sup3r-Secret_pw", "Sup3r Secret-pw"
	for name, dsn := range pwSpellings(pw, pwSpaced, "127.0.0.1", "notaport") {
		got := pglease.DSNSecrets(dsn)
		if !slices.Contains(got, pw) && !slices.Contains(got, pwSpaced) && !slices.Contains(got, "it's-"+pw) {
			t.Errorf("%s: secrets %q do not include the password", name, got)
		}
	}
}

// TestRedactsPGPASSWORD: a password from PGPASSWORD (not in the DSN) is
// redacted too: here it is, by a configuration mistake, also the host name,
// so the connection error quotes it.
func TestRedactsPGPASSWORD(t *testing.T) {
	const pw = "pgpass-host-7c1e.invalid"
	t.Setenv("PGPASSWORD", pw)
	b, _, err := provision(t, map[string]any{"dsn": "host=" + pw + " port=1 user=u dbname=db connect_timeout=2", "disable_push": true})
	if err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Acquire": func() error {
			_, err := b.Acquire(ctxT(t), backendkit.AcquireRequest{Election: "e", Identity: "a", Duration: time.Minute})
			return err
		}(),
		"Get": func() error { _, err := b.Get(ctxT(t), "e"); return err }(),
	} {
		if err == nil {
			t.Fatalf("%s against a host that does not exist succeeded", name)
		}
		if strings.Contains(err.Error(), pw) {
			t.Fatalf("%s: error leaks the PGPASSWORD password: %v", name, err)
		}
	}
}

// TestWrongPasswordRealServer: a real server that requires a password for
// a role refuses a wrong one; the error says so and contains the password
// in none of its spellings. (The test server trusts local roles; the test
// adds a pg_hba.conf line for its own role only, and reloads.)
func TestWrongPasswordRealServer(t *testing.T) {
	srv := server(t)
	adm := admin(t, srv.DSN())
	const right = "the-Right-pw-1"
	if _, err := adm.Exec(ctxT(t), `DO $$ BEGIN
		IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pgl_pw') THEN CREATE ROLE pgl_pw LOGIN; END IF;
	END $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.Exec(ctxT(t), `ALTER ROLE pgl_pw PASSWORD '`+right+`'`); err != nil {
		t.Fatal(err)
	}
	const line = "host all pgl_pw all scram-sha-256\n"
	_, err := adm.Exec(ctxT(t), `DO $$
	DECLARE f text := current_setting('hba_file'); c text; o oid;
	BEGIN
		c := pg_read_file(f);
		IF position('pgl_pw' in c) = 0 THEN
			o := lo_from_bytea(0, convert_to('`+line+`' || c, 'UTF8'));
			PERFORM lo_export(o, f);
			PERFORM lo_unlink(o);
			PERFORM pg_reload_conf();
		END IF;
	END $$`)
	if err != nil {
		t.Fatal(err)
	}
	hostPort := strings.SplitN(strings.SplitN(srv.DSN(), "@", 2)[1], "/", 2)[0]
	host, port, _ := strings.Cut(hostPort, ":")
	const pw, pwSpaced = "wrong-Secret-pw-42", "wrong Secret-pw-42"
	for name, dsn := range pwSpellings(pw, pwSpaced, host, port) {
		t.Run(name, func(t *testing.T) {
			dsn = strings.NewReplacer("user=u", "user=pgl_pw", "dbname=db", "dbname=postgres", "u:", "pgl_pw:", "u@", "pgl_pw@", "/db?", "/postgres?sslmode=disable&").Replace(dsn)
			b, _, err := provision(t, map[string]any{"dsn": dsn, "disable_push": true})
			if err != nil {
				t.Fatal(err)
			}
			var gerr error
			electiontesting.WaitFor(t, electiontesting.Eventually, "the reloaded pg_hba.conf", func() bool {
				_, gerr = b.Get(ctxT(t), "e")
				return gerr != nil && strings.Contains(gerr.Error(), "password authentication failed")
			})
			if leaks(gerr.Error(), pw, pwSpaced) {
				t.Fatalf("error leaks the password: %v", gerr)
			}
		})
	}
	ok, _, err := provision(t, map[string]any{"dsn": "postgres://pgl_pw:" + right + "@" + hostPort + "/postgres?sslmode=disable", "disable_push": true})
	if err != nil {
		t.Fatal(err)
	}
	// The role may not create the table; it authenticates, which is the point.
	if _, err := ok.Get(ctxT(t), "e"); err != nil && strings.Contains(err.Error(), "password authentication failed") {
		t.Fatalf("Get with the right password: %v", err)
	}
}
