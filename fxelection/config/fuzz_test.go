package config_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection/config"
)

// FuzzParse: no document makes Parse or Build panic; a document either
// parses into one that validates and builds, or fails with *PathErrors that
// never contain a value substituted for a placeholder. The seed corpus runs
// as a unit test.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `null`, `"x"`, `{"elections": null}`,
		doc(`{"name": "a", "backend": ` + mem + `}`),
		doc(`{"name": "a", "identity": "{env.PW}", "backend": ` + probe(`"password": "{file./x}", "dsn": "{env.PW}", "fail_validate": true`) + `}`),
		doc(`{"name": "a", "lease_duration": "1s", "renew_deadline": "2s", "backend": ` + mem + `}`),
		`{"backends": {"m": ` + mem + `}, "elections": [{"name": "a", "backend": "m"}, {"name": "b", "backend": "n"}]}`,
		doc(`{"name": "a", "metadata": {"k": "{env.NOPE}"}, "backend": {"module": "fxelection.backends.probe", "journal": "fuzz", "tag": 1, "port": 1e999, "count": -0, "labels": {"a": null}}}`),
		`{"elections": [{"name": "a", "name": "a"}]}`,
		"{\"elections\": [{\"name\": \"\\u0000\\ud800\"}]}",
		doc(`{"name": "a", "exit_on_loss": true, "health": {"command": ["true", "{env.PW}"], "interval": "1s", "threshold": 2}, "backend": ` + mem + `}`),
		doc(`{"name": "a", "health": {"http": "http://u:{env.PW}@127.0.0.1:1/h?token={file./x}"}, "backend": ` + mem + `}`),
		doc(`{"name": "a", "health": {"http": "ftp://{env.PW}", "command": [], "intervl": 1}, "backend": ` + mem + `}`),
		`{"pools": [{"name": "p", "shard_count": 3, "identity": "{env.PW}", "max_workers": 2, "max_moves": 1, "lease_duration": "3s", "renew_deadline": "2s", "retry_period": "500ms", "backend": ` + mem + `}]}`,
		`{"backends": {"m": ` + mem + `}, "elections": [{"name": "a", "backend": "m"}], "pools": [{"name": "a", "shards": ["x", "{env.PW}"], "backend": "m"}, {"name": "a/b", "shard_count": 100001, "shards": [], "backend": "n"}]}`,
		`{"pools": [{"name": "p", "shard_count": -1, "max_workers": 99999, "renew_deadline": "1h", "backend": {"module": "fxelection.backends.probe", "journal": "fuzz", "tag": "{file./x}"}}]}`,
		`{"pools": [{"name": "{env.PW}", "shards": ["", "a", "a"], "pools": 1}]}`,
		`{"lockers": [{"name": "l", "identity": "{env.PW}", "lease_duration": "3s", "renew_deadline": "2s", "retry_period": "500ms", "backend": ` + mem + `}]}`,
		`{"backends": {"m": ` + mem + `}, "lockers": [{"name": "l", "backend": "m"}, {"name": "l", "backend": "n"}, {"name": "a b", "retry_period": "1ms", "backend": {"module": "fxelection.backends.probe", "journal": "fuzz", "tag": "{file./x}"}}]}`,
		`{"elections": [{"name": "x", "backend": ` + mem + `}], "pools": [{"name": "x", "shards": ["a"], "backend": ` + mem + `}], "lockers": [{"name": "x", "identity": "{env.NOPE}", "lockers": [], "backend": ` + mem + `}]}`,
	} {
		f.Add([]byte(s))
	}
	l := config.Loader{
		LookupEnv: env(map[string]string{"PW": secret}),
		ReadFile:  func(string) ([]byte, error) { return []byte(secret), nil },
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := l.Parse(data)
		if err != nil {
			if !bytes.Contains(data, []byte(secret)) && strings.Contains(err.Error(), secret) {
				t.Fatalf("substituted secret in error: %v", err)
			}
			var pe *config.PathError
			if !errors.As(err, &pe) && !strings.Contains(err.Error(), "details withheld") {
				t.Fatalf("error is not a *PathError: %v", err)
			}
			return
		}
		if err := d.Validate(); err != nil {
			t.Fatalf("parsed document does not validate: %v", err)
		}
		if _, err := config.Build(d); err != nil {
			t.Fatalf("Build of a valid document: %v", err)
		}
	})
}
