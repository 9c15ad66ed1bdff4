package config

import (
	"errors"
	"strings"
	"testing"
)

// TestRedactConnectionStringParts: a connection string among the secrets
// masks its password wherever a run of it appears, and not its scheme,
// user or database names: a module ID or a hint naming postgres stays.
func TestRedactConnectionStringParts(t *testing.T) {
	for _, dsn := range []string{
		"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"postgres://postgres:hunter2-secret@db.internal:5432/postgres",
		"host=db.internal user=postgres password=hunter2-secret dbname=postgres",
	} {
		err := pathErr("elections[0].backend", errors.New("fxelection.backends.postgres: dsn: not a valid connection string "+
			"(key=value pairs or a postgres:// URL), got postgres://postgres:hunter2-sec… for user postgres"))
		msg := redact(err, []string{dsn}).Error()
		for _, want := range []string{"fxelection.backends.postgres: dsn", "a postgres:// URL", "got postgres://postgres:", "for user postgres"} {
			if !strings.Contains(msg, want) {
				t.Errorf("DSN %q: %q lacks %q", dsn, msg, want)
			}
		}
		if strings.Contains(dsn, "hunter2") && (strings.Contains(msg, "hunter2") || strings.Contains(msg, "er2-sec")) {
			t.Errorf("DSN %q: %q leaks the password", dsn, msg)
		}
	}
	// A plain secret is masked by every 8-byte run, as before.
	if msg := redact(errors.New("bad token hunter2-secret-token (hunter2-sec…)"), []string{"hunter2-secret-token"}).Error(); strings.Contains(msg, "hunter2") {
		t.Errorf("plain secret: %q", msg)
	}
}
