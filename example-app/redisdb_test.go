package main

import (
	"strconv"
	"strings"
	"testing"
)

// TestRedisDBOneRule: a document's Redis "db" and --redis-db accept and
// refuse the same numbers (redislease.ValidateDB), and say so alike.
func TestRedisDBOneRule(t *testing.T) {
	addr := listenNoDial(t)
	for _, tt := range []struct {
		db int
		ok bool
	}{{0, true}, {15, true}, {16, false}, {99, false}, {-1, false}} {
		n := strconv.Itoa(tt.db)
		file := writeFile(t, "db.json", `{"elections": [{"name": "a", "backend": {"module": "fxelection.backends.redis", "addr": "`+addr+`", "db": `+n+`}}]}`)
		code, _, docErr := runValidateCmd("--config", file)
		_, flagErr := parseArgs([]string{"--backend", "redis", "--redis-addr", addr, "--redis-db", n}, noEnv)
		const want = "db: must be between 0 and 15"
		switch {
		case tt.ok && (code != 0 || flagErr != nil):
			t.Errorf("db %d: document exit %d %q, flag %v; want both accepted", tt.db, code, docErr, flagErr)
		case !tt.ok && (code != 2 || !strings.Contains(docErr, "elections[0].backend: ") || !strings.Contains(docErr, want)):
			t.Errorf("db %d in a document: exit %d, stderr %q; want 2 with %q", tt.db, code, docErr, want)
		case !tt.ok && (flagErr == nil || flagErr.Error() != "--redis-db ("+n+") must be between 0 and 15"):
			t.Errorf("--redis-db %d: %v", tt.db, flagErr)
		}
	}
}
