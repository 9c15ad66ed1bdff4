package main

import (
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection/config"
)

// TestDSNRedactionMasksOnlyThePassword: a PostgreSQL DSN's password is
// withheld, but not the word postgres in what surrounds it: the module ID
// in GET /config's document, and the hint of the error for a bad DSN
// ("a postgres:// URL"), given on the flag or in a document.
func TestDSNRedactionMasksOnlyThePassword(t *testing.T) {
	const dsn = "postgres://postgres:hunter2-secret@127.0.0.1:1/postgres"
	doc, err := config.Parse([]byte(`{"elections": [{"name": "a", "backend": {"module": "fxelection.backends.postgres", "dsn": "` + dsn + `"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := doc.RedactedJSON()
	if err != nil {
		t.Fatal(err)
	}
	if js := string(raw); !strings.Contains(js, `"module": "fxelection.backends.postgres"`) || strings.Contains(js, "hunter2") {
		t.Errorf("GET /config's document:\n%s", js)
	}

	bad := dsn + "?pool_max_conns=x"
	o, err := parseArgs([]string{"--backend", "postgres", "--postgres-dsn", bad}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = o.flagsDocument(); err == nil {
		t.Fatal("a bad DSN was accepted")
	}
	file := writeFile(t, "bad.json", `{"elections": [{"name": "a", "backend": {"module": "fxelection.backends.postgres", "dsn": "`+bad+`"}}]}`)
	code, _, docErr := runValidateCmd("--config", file)
	for _, msg := range []string{err.Error(), docErr} {
		if !strings.Contains(msg, "a postgres:// URL") || strings.Contains(msg, "hunter2") {
			t.Errorf("bad DSN: %q; want the hint whole and no password", msg)
		}
	}
	if code != 2 || !strings.Contains(docErr, "elections[0].backend: fxelection.backends.postgres") {
		t.Errorf("validate: exit %d, %q", code, docErr)
	}
}
