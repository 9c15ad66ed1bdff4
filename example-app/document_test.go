package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

// flagsDocument returns the flags' document as generic JSON.
func flagsDocument(t *testing.T, o options) map[string]any {
	t.Helper()
	raw, err := o.documentJSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// backendSettings returns the backend module object of the flags'
// document, without its "module" key.
func backendSettings(t *testing.T, o options) map[string]any {
	t.Helper()
	b := flagsDocument(t, o)["elections"].([]any)[0].(map[string]any)["backend"].(map[string]any)
	if b["module"] != "fxelection.backends."+o.backend {
		t.Fatalf("backend module %v, want fxelection.backends.%s", b["module"], o.backend)
	}
	delete(b, "module")
	return b
}

// TestFlagsToDocument: the flags become one election whose timing comes
// from the timing flags and whose backend module gets the settings the
// flag table's backend and setting columns name, typed by the flag's kind;
// the config package accepts the document as it is.
func TestFlagsToDocument(t *testing.T) {
	const blobConn = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1"
	timing := map[string]any{
		"fx_name": flagsFxName, "lease_duration": "15s", "renew_deadline": "10s", "retry_period": "2s",
		"stop_timeout": "10s",
	}
	tests := []struct {
		name     string
		args     []string
		election map[string]any // beyond timing
		backend  map[string]any
	}{
		{"memory", []string{"--backend", "memory", "--id", "a", "--http", ""},
			map[string]any{"name": "example", "identity": "a", "metadata": map[string]any{"http": ""}},
			map[string]any{"module": "fxelection.backends.memory"}},
		{"timing", []string{"--backend", "memory", "--id", "a", "--election", "jobs", "--lease", "2m", "--renew-deadline", "90s",
			"--retry", "40s", "--stop-timeout", "5s"},
			map[string]any{"name": "jobs", "identity": "a", "metadata": map[string]any{"http": "127.0.0.1:8080"},
				"lease_duration": "2m0s", "renew_deadline": "1m30s", "retry_period": "40s", "stop_timeout": "5s"},
			map[string]any{"module": "fxelection.backends.memory"}},
		{"redis", []string{"--backend", "redis", "--id", "a", "--redis-addr", "127.0.0.1:1", "--redis-password", "pw", "--redis-db", "3"},
			map[string]any{"name": "example", "identity": "a", "metadata": map[string]any{"http": "127.0.0.1:8080"}},
			map[string]any{"module": "fxelection.backends.redis", "addr": "127.0.0.1:1", "password": "pw", "db": 3.0, "tls": false}},
		{"postgres", []string{"--backend", "postgres", "--id", "a", "--postgres-dsn", "postgres://u:pw@127.0.0.1:1/db"},
			map[string]any{"name": "example", "identity": "a", "metadata": map[string]any{"http": "127.0.0.1:8080"}},
			map[string]any{"module": "fxelection.backends.postgres", "dsn": "postgres://u:pw@127.0.0.1:1/db"}},
		{"s3", []string{"--backend", "s3", "--id", "a", "--s3-endpoint", "127.0.0.1:9000", "--s3-bucket", "b", "--s3-access-key", "k",
			"--s3-secret-key", "sk", "--s3-region", "r"},
			map[string]any{"name": "example", "identity": "a", "metadata": map[string]any{"http": "127.0.0.1:8080"}},
			map[string]any{"module": "fxelection.backends.s3", "endpoint": "127.0.0.1:9000", "bucket": "b", "access_key": "k",
				"secret_key": "sk", "region": "r", "secure": true}},
		{"blob", []string{"--backend", "blob", "--id", "a", "--lease", "20s", "--blob-container", "c",
			"--blob-connection-string", blobConn},
			map[string]any{"name": "example", "identity": "a", "metadata": map[string]any{"http": "127.0.0.1:8080"}, "lease_duration": "20s"},
			map[string]any{"module": "fxelection.backends.blob", "container": "c", "connection_string": blobConn}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseArgs(tt.args, noEnv)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]any{}
			for k, v := range timing {
				want[k] = v
			}
			for k, v := range tt.election {
				want[k] = v
			}
			want["backend"] = tt.backend
			got := flagsDocument(t, o)["elections"].([]any)
			if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
				t.Fatalf("document election\n got %v\nwant %v", got, want)
			}
			doc, err := o.document()
			if err != nil {
				t.Fatalf("the config package rejects the flags' document: %v", err)
			}
			if len(doc.Elections) != 1 || doc.Elections[0].ElectorConfig().Name != o.election || doc.Elections[0].Backend.Module == nil {
				t.Fatalf("parsed document %+v", doc)
			}
		})
	}
}

// TestFlagsRejectPlaceholders: a flag value is used as it is, never read
// as a placeholder.
func TestFlagsRejectPlaceholders(t *testing.T) {
	for _, args := range [][]string{
		{"--backend", "redis", "--redis-addr", "127.0.0.1:1", "--redis-password", "{env.HOME}"},
		{"--backend", "memory", "--election", "{file./etc/passwd}"},
	} {
		o, err := parseArgs(args, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		_, err = o.document()
		var ue usageError
		if !errors.As(err, &ue) || !strings.HasPrefix(ue.msg, "--") || !strings.Contains(ue.msg, "work only in --config files") {
			t.Errorf("%q: %v", args, err)
		}
	}
}

// TestDocumentProblemNamesTheFlag: an error from the config path is mapped
// from its JSON path (or the setting its module names) back to the flag,
// with secrets withheld.
func TestDocumentProblemNamesTheFlag(t *testing.T) {
	o := defaults()
	o.backend, o.redisPassword = "redis", "hunter22"
	o.fromEnv = map[string]string{"redis-addr": "FXELECTION_REDIS_ADDR"}
	pe := func(path string, err error) error { return &config.PathError{Path: path, Err: err} }
	for _, tt := range []struct {
		err  error
		want string
	}{
		{pe("elections[0].backend.addr", config.ErrRequired), "--redis-addr from FXELECTION_REDIS_ADDR: required"},
		{pe("elections[0].backend.db", config.ErrWrongType), "--redis-db: wrong type"},
		{pe("elections[0].backend.prefix", config.ErrInvalidValue), "--backend redis: prefix: invalid value"},
		{pe("elections[0].lease_duration", config.ErrInvalidValue), "--lease: invalid value"},
		{pe("elections[0].retry_period", config.ErrInvalidValue), "--retry: invalid value"},
		{pe("elections[0].name", config.ErrRequired), "--election: required"},
		{pe("elections[0].renew_deadline", errors.New("fxelection: RenewDeadline (5s) must be shorter than LeaseDuration (5s)")),
			"--renew-deadline (5s) must be shorter than --lease (5s)"},
		{pe("elections[0].backend", errors.New("fxelection.backends.redis: addr: must be host:port")), "--redis-addr from FXELECTION_REDIS_ADDR: must be host:port"},
		{pe("elections[0].backend", errors.New(`fxelection.backends.redis: fxelection: backend "redis": setting "db": too big`)), "--redis-db: too big"},
		{pe("elections[0].backend", errors.New("fxelection.backends.redis: auth hunter22 failed")), "--backend redis: auth xxxxx failed"},
		{pe("elections[0].backend", errors.New("fxelection.backends.redis: redislease: invalid options: db: Redis Cluster has only database 0")),
			"--redis-db: Redis Cluster has only database 0"},
		{pe("elections[0].backend", errors.New(`fxelection.backends.redis: prefix: "a: db: b" has braces`)), `--backend redis: prefix: "a: db: b" has braces`},
		{pe("elections[0].backend.password", errors.New("hunter22 is wrong")), "--redis-password: xxxxx is wrong"},
		{errors.Join(pe("elections[0].backend.addr", config.ErrRequired), pe("elections[0].lease_duration", config.ErrRequired)),
			"--redis-addr from FXELECTION_REDIS_ADDR: required"},
	} {
		if got := o.documentProblem(tt.err); got != tt.want {
			t.Errorf("documentProblem(%q) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestBackendChoicesAreModules: --backend offers the last label of every
// registered fxelection.backends.* module, and every flag-table backend is
// among them.
func TestBackendChoicesAreModules(t *testing.T) {
	names := backendNames()
	var o options
	for _, d := range o.flagTable() {
		if d.backend != "" && !slices.Contains(names, d.backend) {
			t.Errorf("flag --%s feeds backend %q, which no module provides (%v)", d.name, d.backend, names)
		}
	}
	if !slices.Contains(names, "memory") || !slices.IsSorted(names) {
		t.Fatalf("backend choices %v", names)
	}
	if _, err := parseArgs([]string{"--backend", "nope"}, noEnv); err == nil || !strings.Contains(err.Error(), "--backend") {
		t.Fatalf("unknown backend: %v", err)
	}
}

func TestModulesListing(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"modules"}, &out, &errOut, noEnv); code != 0 || errOut.Len() != 0 {
		t.Fatalf("modules: code %d, stderr %q", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	mods := modkit.Modules()
	if len(lines) != len(mods) {
		t.Fatalf("%d lines for %d modules:\n%s", len(lines), len(mods), out.String())
	}
	var ids []string
	for i, l := range lines {
		id, doc, ok := strings.Cut(l, " ")
		if !ok || id != string(mods[i].ID) || strings.TrimSpace(doc) != mods[i].Doc {
			t.Errorf("line %q, want %s and its doc", l, mods[i].ID)
		}
		ids = append(ids, id)
	}
	if !slices.IsSorted(ids) {
		t.Errorf("not sorted: %v", ids)
	}
	for _, b := range []string{"memory", "redis", "postgres", "s3", "blob"} {
		if !slices.Contains(ids, "fxelection.backends."+b) {
			t.Errorf("modules lacks fxelection.backends.%s:\n%s", b, out.String())
		}
	}
	errOut.Reset()
	if code := run([]string{"modules", "--backend", "redis"}, &out, &errOut, noEnv); code != 2 || !strings.Contains(errOut.String(), "modules takes no arguments") {
		t.Fatalf("modules with a flag: code %d, %q", code, errOut.String())
	}
}

// TestConfigExcludesElectionFlags: with --config only the process's flags
// (--http, --log-format, --work-interval) may be set; any other, on the
// command line or from the environment, is an error naming it.
func TestConfigExcludesElectionFlags(t *testing.T) {
	if _, err := parseArgs([]string{"--config", "f.json", "--http", "", "--log-format", "json", "--work-interval", "1s"}, noEnv); err != nil {
		t.Fatalf("process flags with --config: %v", err)
	}
	var o options
	for _, d := range o.flagTable() {
		if withConfig[d.name] || execOnly[d.name] { // exec's own: TestExecUsage
			continue
		}
		v := "x"
		switch d.value.(type) {
		case durationFlag:
			v = "1s"
		case intFlag:
			v = "1"
		case boolFlag:
			v = "true"
		case addrFlag:
			v = "127.0.0.1:1"
		case choiceFlag:
			v = "memory"
		}
		_, err := parseArgs([]string{"--config", "f.json", "--" + d.name + "=" + v}, noEnv)
		var ue usageError
		if !errors.As(err, &ue) || ue.msg != "--"+d.name+" conflicts with --config: set it in the configuration file" {
			t.Errorf("--config with --%s: %v", d.name, err)
		}
	}
	_, err := parseArgs([]string{"--config", "f.json"}, func(k string) string {
		if k == "FXELECTION_LEASE" {
			return "20s"
		}
		return ""
	})
	if err == nil || err.Error() != "--lease from FXELECTION_LEASE conflicts with --config: set it in the configuration file" {
		t.Errorf("--config with FXELECTION_LEASE: %v", err)
	}
	if _, err := parseArgs([]string{"status", "--config", "f.json"}, noEnv); err == nil || !strings.Contains(err.Error(), "--config") {
		t.Errorf("status --config: %v", err)
	}
}

// TestLogContract feeds the log-contract observer one event of each kind:
// leadership and leader changes are logged with the contract's attributes;
// store failures and panics as "election error"; "held by someone else",
// "lease lost", "no lease", cancellations and successes not at all.
func TestLogContract(t *testing.T) {
	var buf bytes.Buffer
	obs := logContract(slog.New(slog.NewJSONHandler(&buf, nil)))
	ev := func(k fxelection.EventKind, f func(*fxelection.Event)) {
		e := fxelection.Event{Kind: k, Election: "jobs", Identity: "node-a", Lease: fxelection.Lease{Holder: "node-b", Term: 7}}
		if f != nil {
			f(&e)
		}
		obs.Observe(e)
	}
	ev(fxelection.EventStartedLeading, nil)
	ev(fxelection.EventStoppedLeading, func(e *fxelection.Event) { e.Reason = fxelection.ReasonStopped })
	ev(fxelection.EventNewLeader, nil)
	ev(fxelection.EventRenewed, nil)
	for _, err := range []error{nil, backendkit.ErrLeaseHeld, backendkit.ErrLeaseLost, backendkit.ErrNoLease, context.Canceled,
		fmt.Errorf("acquire: %w", backendkit.ErrLeaseHeld)} {
		ev(fxelection.EventOperation, func(e *fxelection.Event) { e.Op, e.Err = backendkit.OpAcquire, err })
	}
	ev(fxelection.EventOperation, func(e *fxelection.Event) { e.Op, e.Err = backendkit.OpRenew, errors.New("connection refused") })
	ev(fxelection.EventPanic, func(e *fxelection.Event) { e.Err = errors.New("observer panicked") })

	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		delete(m, "time")
		got = append(got, m)
	}
	want := []map[string]any{
		{"level": "INFO", "msg": "leadership acquired", "election": "jobs", "identity": "node-a", "term": 7.0},
		{"level": "INFO", "msg": "leadership lost", "election": "jobs", "identity": "node-a", "term": 7.0, "reason": "stopped"},
		{"level": "INFO", "msg": "leader observed", "election": "jobs", "identity": "node-a", "leader": "node-b", "term": 7.0},
		{"level": "WARN", "msg": "election error", "election": "jobs", "identity": "node-a", "op": "renew", "error": "connection refused"},
		{"level": "WARN", "msg": "election error", "election": "jobs", "identity": "node-a", "op": "", "error": "observer panicked"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("log lines\n got %v\nwant %v", got, want)
	}
}
