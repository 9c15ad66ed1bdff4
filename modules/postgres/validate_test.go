package pglease_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection/config"
	pglease "github.com/fxelection/fxelection/modules/postgres"
)

// TestMalformedDSNRefusedByLoad: a DSN pgx cannot parse is refused when the
// document is loaded (Validate), before anything is provisioned, with an
// error that names the setting and quotes no part of the DSN.
func TestMalformedDSNRefusedByLoad(t *testing.T) {
	const pw = "Sup3r-Secret_pw"
	for name, dsn := range map[string]string{
		"URLBadPort":        "postgres://u:" + pw + "@127.0.0.1:notaport/db",
		"KeyValueBadNumber": "host=127.0.0.1 password=" + pw + " connect_timeout=soon",
		"UnknownSSLMode":    "postgres://u:" + pw + "@127.0.0.1/db?sslmode=sometimes",
		"BadPoolSetting":    "postgres://u:" + pw + "@127.0.0.1/db?pool_max_conns=many",
		"Unterminated":      "host=127.0.0.1 password='" + pw,
	} {
		t.Run(name, func(t *testing.T) {
			q, _ := json.Marshal(dsn)
			_, err := config.Load([]byte(`{"elections": [{"name": "e", "backend":
				{"module": "fxelection.backends.postgres", "dsn": ` + string(q) + `}}]}`))
			if err == nil {
				t.Fatal("Load accepted a malformed DSN")
			}
			if !errors.Is(err, pglease.ErrInvalidSettings) || !strings.Contains(err.Error(), "elections[0].backend: ") || !strings.Contains(err.Error(), "dsn: ") {
				t.Fatalf("error %q: want ErrInvalidSettings naming elections[0].backend and dsn", err)
			}
			for _, part := range []string{pw, "127.0.0.1", "notaport", "soon", "sometimes", "many"} {
				if strings.Contains(err.Error(), part) {
					t.Fatalf("error %q quotes the DSN (%q)", err, part)
				}
			}
		})
	}
}

// TestNegativeCloseTimeout: close_timeout must not be negative.
func TestNegativeCloseTimeout(t *testing.T) {
	_, err := config.Load([]byte(`{"elections": [{"name": "e", "backend":
		{"module": "fxelection.backends.postgres", "dsn": "postgres://127.0.0.1/db", "close_timeout": "-1s"}}]}`))
	if !errors.Is(err, pglease.ErrInvalidSettings) || !strings.Contains(err.Error(), "close_timeout: ") {
		t.Fatalf("error %v: want ErrInvalidSettings naming close_timeout", err)
	}
}
