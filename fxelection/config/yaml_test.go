package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/config"
)

func TestParseYAML(t *testing.T) {
	l := config.Loader{LookupEnv: env(map[string]string{"PW": secret, "NODE": "node-7"})}
	_, err := l.ParseYAML([]byte(`
backends:
  shared: {module: fxelection.backends.memory}
timing: &timing
  lease_duration: 30s
elections:
  - name: billing
    identity: "{env.NODE}"
    lease_duration: 30s
    renew_deadline: "20s"
    retry_period: 4s
    keep_lease_on_stop: true
    metadata: {addr: "10.0.0.7:8080", port: "8080"}
    backend: shared
  - name: reports
    backend:
      module: fxelection.backends.probe
      journal: yaml
      tag: t
      password: "{env.PW}"
      port: 0x1F
      count: 1_0
      ratio: 1e-1
      hosts: [a, b]
`))
	if err == nil || !strings.Contains(err.Error(), "timing: unknown key") {
		t.Fatalf("anchor holder at top level: %v", err)
	}
	d, err := l.ParseYAML([]byte(`
backends:
  shared: {module: fxelection.backends.memory}
elections:
  - name: billing
    identity: "{env.NODE}"
    lease_duration: 30s
    renew_deadline: "20s"
    retry_period: 4s
    keep_lease_on_stop: true
    metadata: &md {addr: "10.0.0.7:8080", port: "8080"}
    backend: shared
  - name: reports
    metadata: *md
    backend:
      module: fxelection.backends.probe
      journal: yaml
      tag: t
      password: "{env.PW}"
      port: 0x1F
      count: 1_0
      ratio: 1e-1
      hosts: [a, b]
`))
	if err != nil {
		t.Fatal(err)
	}
	c := d.Elections[0].ElectorConfig()
	if c.Identity != "node-7" || c.LeaseDuration != 30*time.Second || c.RenewDeadline != 20*time.Second ||
		!c.KeepLeaseOnStop || c.Metadata["port"] != "8080" || d.Elections[1].Metadata["addr"] != "10.0.0.7:8080" {
		t.Fatalf("config = %+v", c)
	}
	p := d.Elections[1].Backend.Module.(*Probe)
	if p.Password.Value() != secret || p.Port != 31 || p.Count != 10 || p.Ratio != 0.1 || len(p.Hosts) != 2 {
		t.Fatalf("probe = %+v", p)
	}
}

func TestParseYAMLErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
		is              error
	}{
		{"empty", ``, `elections: required`, config.ErrRequired},
		{"unknown key", "elections:\n  - name: a\n    lease_duraton: 1s\n    backend: {module: fxelection.backends.memory}\n",
			`elections[0].lease_duraton: unknown key (did you mean "lease_duration"?)`, config.ErrUnknownKey},
		{"unquoted number as duration", "elections:\n  - name: a\n    retry_period: 2\n    backend: {module: fxelection.backends.memory}\n",
			`elections[0].retry_period: wrong type: want a duration string such as "1.5s", got number`, config.ErrWrongType},
		{"unquoted placeholder is a flow mapping", "elections:\n  - name: a\n    identity: {env.NODE}\n    backend: {module: fxelection.backends.memory}\n",
			`elections[0].identity: wrong type: want string, got object`, config.ErrWrongType},
		{"bool for string", "elections:\n  - name: true\n    backend: {module: fxelection.backends.memory}\n",
			`elections[0].name: wrong type: want string, got boolean`, config.ErrWrongType},
		{"duplicate key", "elections:\n  - name: a\n    name: b\n", `elections[0].name: duplicate key`, config.ErrDuplicateKey},
		{"syntax", "elections:\n  - name: a\n   bad: [\n", `syntax error: yaml: line`, config.ErrSyntax},
		{"two documents", "elections: []\n---\nelections: []\n", `more than one YAML document`, config.ErrSyntax},
		{"merge key", "base: &b {name: a}\nelections:\n  - <<: *b\n", `elections[0]: syntax error at line 3: merge keys (<<) are not supported`, config.ErrSyntax},
		{"infinite float", "elections:\n  - name: .inf\n", `elections[0].name: syntax error at line 2: want a finite number`, config.ErrSyntax},
		{"binary", "elections:\n  - name: !!binary aGk=\n", `elections[0].name: syntax error at line 2: unsupported YAML type !!binary`, config.ErrSyntax},
		{"billion laughs", `a: &a [x, x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
f: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
`, `document too large: more than 1048576 values`, config.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Loader{}.ParseYAML([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.is) {
				t.Fatalf("error = %v, want %q", err, tc.want)
			}
		})
	}
}

func FuzzParseYAML(f *testing.F) {
	for _, s := range []string{
		"", "elections: []", "elections:\n  - name: a\n    backend: {module: fxelection.backends.memory}\n",
		"a: &a [1]\nb: [*a, *a]\n", "elections:\n  - name: \"{env.PW}\"\n    lease_duration: 1x\n",
	} {
		f.Add([]byte(s))
	}
	l := config.Loader{LookupEnv: env(map[string]string{"PW": secret})}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := l.ParseYAML(data)
		if err != nil {
			if !strings.Contains(string(data), secret) && strings.Contains(err.Error(), secret) {
				t.Fatalf("secret in error: %v", err)
			}
			return
		}
		if err := d.Validate(); err != nil {
			t.Fatalf("parsed document does not validate: %v", err)
		}
	})
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	jsonFile := write("a.json", doc(`{"name": "a", "backend": `+mem+`}`))
	yamlFile := write("a.YML", "elections:\n  - name: a\n    backend: {module: fxelection.backends.memory}\n")
	badFile := write("bad.yaml", "elections:\n  - name: a\n    backend: {module: fxelection.backends.memory, addr: x}\n")
	for _, p := range []string{jsonFile, yamlFile} {
		if _, err := (config.Loader{}).LoadFile(p); err != nil {
			t.Errorf("LoadFile(%s): %v", p, err)
		}
		if d, err := (config.Loader{}).ParseFile(p); err != nil || d.Elections[0].Name != "a" {
			t.Errorf("ParseFile(%s): %v", p, err)
		}
	}
	_, err := config.Loader{}.LoadFile(badFile)
	if err == nil || err.Error() != badFile+": elections[0].backend.addr: unknown key" || !errors.Is(err, config.ErrUnknownKey) {
		t.Errorf("LoadFile(bad) = %v", err)
	}
	if _, err := (config.Loader{}).LoadFile(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadFile(missing) = %v", err)
	}
	big := write("big.json", strings.Repeat(" ", config.MaxDocumentBytes+1))
	if _, err := (config.Loader{}).ParseFile(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("ParseFile(big) = %v", err)
	}
}
