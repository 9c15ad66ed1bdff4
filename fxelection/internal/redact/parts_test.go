package redact

import (
	"slices"
	"testing"
)

// TestParts: a connection string's secret parts are its password (or a
// token in its userinfo), its secret query values and its secret key=value
// values, never its scheme, host, user or database names; anything else,
// or a part too short to mask alone, is secret whole.
func TestParts(t *testing.T) {
	for _, tt := range []struct {
		in    string
		parts []string
		ok    bool
	}{
		{"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", nil, true},
		{"postgres://app:hunter2-pw@db:5432/postgres", []string{"hunter2-pw"}, true},
		{"postgresql://app:p%40ss-word@db/x?sslpassword=key-secret", []string{"p%40ss-word", "p@ss-word", "key-secret"}, true},
		{"nats://s3cr3t-token@nats:4222", []string{"s3cr3t-token"}, true},
		{"redis://:redis-secret@r:6379/0", []string{"redis-secret"}, true},
		{"https://acct.blob.core.windows.net/c?sv=2020&sig=abc%2Bdef", []string{"abc%2Bdef", "abc+def"}, true},
		{"host=db user=postgres password='pa ss-word' dbname=postgres", []string{"pa ss-word"}, true},
		{"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5LWtleQ==;EndpointSuffix=core.windows.net", []string{"a2V5LWtleQ=="}, true},
		{"postgres://app:pw@db/x", nil, false}, // a password too short to mask alone
		{"host=db password=pw", nil, false},
		{"plain-password", nil, false},
		{"dG9rZW4tdmFsdWU=", nil, false}, // base64, not key=value
	} {
		parts, ok := Parts(tt.in)
		if ok != tt.ok || !slices.Equal(parts, tt.parts) {
			t.Errorf("Parts(%q) = %q, %v; want %q, %v", tt.in, parts, ok, tt.parts, tt.ok)
		}
	}
}
