package config_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection/config"
)

// plantedSecret has what escaping changes (a newline, quotes, a backslash,
// a control byte, non-ASCII) and is longer than the 64 bytes modules and
// paths shorten values to.
const plantedSecret = "line-one-secret\nline-two-secret \"quoted\" back\\slash \a bell ünïcødé tail-of-the-secret-0123456789"

// secretRuns returns the 8-byte runs of s.
func secretRuns(s string) []string {
	var out []string
	for i := 0; i+8 <= len(s); i++ {
		out = append(out, s[i:i+8])
	}
	return out
}

// secretPositions are documents with PLANT where a placeholder can go: every
// string setting of an election, a pool and a locker, their backends and
// the probe module's settings (echoed by the module in each spelling).
var secretPositions = []string{
	doc(`{"name": "PLANT", "backend": ` + mem + `}`),
	doc(`{"name": "a", "identity": "PLANT", "backend": ` + mem + `}`),
	doc(`{"name": "a", "fx_name": "PLANT", "backend": ` + mem + `}`),
	doc(`{"name": "a", "metadata": {"k": "PLANT"}, "backend": ` + mem + `}`),
	doc(`{"name": "a", "lease_duration": "PLANT", "backend": ` + mem + `}`),
	doc(`{"name": "a", "backend": "PLANT"}`),
	doc(`{"name": "a", "backend": {"module": "PLANT"}}`),
	doc(`{"name": "a", "backend": {"module": "fxelection.backends.PLANT"}}`),
	doc(`{"name": "a", "backend": ` + probe(`"dsn": "PLANT", "fail_validate": true`) + `}`),
	doc(`{"name": "a", "backend": ` + probe(`"password": "PLANT", "fail_validate": true`) + `}`),
	doc(`{"name": "a", "backend": ` + probe(`"dsn": "PLANT", "echo": "q"`) + `}`),
	doc(`{"name": "a", "backend": ` + probe(`"dsn": "PLANT", "echo": "+q"`) + `}`),
	doc(`{"name": "a", "backend": ` + probe(`"dsn": "PLANT", "echo": "prefix"`) + `}`),
	doc(`{"name": "a", "backend": ` + probe(`"dsn": "PLANT", "echo": "json"`) + `}`),
	doc(`{"name": "a", "backend": ` + probe(`"dsn": "PLANT", "echo": "yaml"`) + `}`),
	doc(`{"name": "a", "backend": ` + probe(`"dsn": "PLANT", "echo": "all"`) + `}`),
	doc(`{"name": "a", "backend": ` + probe(`"tag": 1, "hosts": ["PLANT", 2], "timeout": "PLANT", "port": "PLANT"`) + `}`),
	doc(`{"name": "a", "backend": ` + probe(`"labels": {"x": "PLANT"}, "echo": "q", "dsn": "x{env.S}y"`) + `}`),
	`{"backends": {"m": ` + mem + `}, "elections": [{"name": "a", "backend": "PLANT"}]}`,
	`{"extensions": [{"module": "PLANT"}], "elections": [{"name": "a", "backend": ` + mem + `}]}`,
	`{"pools": [{"name": "PLANT", "shard_count": 2, "backend": ` + mem + `}]}`,
	`{"pools": [{"name": "p", "identity": "PLANT", "shard_count": 2, "backend": ` + mem + `}]}`,
	`{"pools": [{"name": "p", "shards": ["a", "PLANT", "PLANT"], "backend": ` + mem + `}]}`,
	`{"pools": [{"name": "p", "shard_count": "PLANT", "retry_period": "PLANT", "backend": ` + mem + `}]}`,
	`{"pools": [{"name": "p", "shard_count": 2, "backend": "PLANT"}]}`,
	`{"pools": [{"name": "p", "shard_count": 2, "backend": ` + probe(`"dsn": "PLANT", "echo": "all"`) + `}]}`,
	`{"elections": [{"name": "PLANT/shard/0", "backend": ` + mem + `}], "pools": [{"name": "PLANT", "shard_count": 2, "backend": ` + mem + `}]}`,
	`{"lockers": [{"name": "PLANT", "backend": ` + mem + `}]}`,
	`{"lockers": [{"name": "l", "identity": "PLANT", "backend": ` + mem + `}]}`,
	`{"lockers": [{"name": "l", "lease_duration": "PLANT", "retry_period": "PLANT", "backend": ` + mem + `}]}`,
	`{"lockers": [{"name": "l", "backend": "PLANT"}]}`,
	`{"lockers": [{"name": "l", "backend": ` + probe(`"dsn": "PLANT", "echo": "all"`) + `}]}`,
	`{"lockers": [{"name": "PLANT", "backend": ` + mem + `}, {"name": "PLANT", "backend": ` + mem + `}]}`,
}

// FuzzDocumentSecrets: whatever the document (JSON, or YAML when isYAML),
// with a secret planted through {env.S} or {file.S}, no error contains any
// 8-byte run of the secret that the document itself does not contain. The
// seed corpus plants the secret in every position of secretPositions, both
// ways, in both syntaxes, and runs as a unit test.
func FuzzDocumentSecrets(f *testing.F) {
	for _, d := range secretPositions {
		for _, ph := range []string{"{env.S}", "{file.S}", "pre-{env.S}-post"} {
			js := strings.ReplaceAll(d, "PLANT", ph)
			f.Add([]byte(js), false)
			f.Add([]byte(js), true) // JSON is YAML too
		}
	}
	f.Add([]byte("elections:\n  - name: a\n    identity: \"{file.S}\"\n    backend: {module: fxelection.backends.probe, journal: j, tag: t, dsn: \"{env.S}\", echo: all}\n"), true)
	l := config.Loader{
		LookupEnv: func(k string) (string, bool) { return plantedSecret, k == "S" },
		ReadFile: func(p string) ([]byte, error) {
			if p == "S" {
				return []byte(plantedSecret), nil
			}
			return nil, &pathError{p}
		},
	}
	runs := secretRuns(plantedSecret)
	f.Fuzz(func(t *testing.T, data []byte, isYAML bool) {
		var err error
		if isYAML {
			_, err = l.ParseYAML(data)
		} else {
			_, err = l.Parse(data)
		}
		if err == nil {
			return
		}
		msg := err.Error()
		for _, r := range runs {
			if strings.Contains(msg, r) && !bytes.Contains(data, []byte(r)) {
				t.Fatalf("error contains %q of the secret:\n%s", r, msg)
			}
		}
	})
}

type pathError struct{ p string }

func (e *pathError) Error() string { return "no such file" }
