package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/fxelection/modkit"
)

const secret = "hunter2-very-secret"

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestPlaceholders(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FXELECTION_TEST_NODE", "node-7")
	d, err := config.Parse([]byte(doc(`{"name": "a", "identity": "{env.FXELECTION_TEST_NODE}", "backend": ` +
		probe(`"password": "{file.`+pwFile+`}", "dsn": "postgres://app:{env.FXELECTION_TEST_NODE}@db/{env.FXELECTION_TEST_NODE}", "hosts": ["{env.FXELECTION_TEST_NODE}:{app}"]`) + `}`)))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Elections[0].Identity; got != "node-7" {
		t.Errorf("identity = %q", got)
	}
	p := d.Elections[0].Backend.Module.(*Probe)
	if p.Password.Value() != secret {
		t.Errorf("password from file: trailing newline not trimmed or wrong: %d bytes", len(p.Password.Value()))
	}
	if p.DSN != "postgres://app:node-7@db/node-7" {
		t.Errorf("dsn = %q", p.DSN)
	}
	if p.Hosts[0] != "node-7:{app}" {
		t.Errorf("hosts[0] = %q: other braces (Redis hash tags) must stay literal", p.Hosts[0])
	}
}

func TestPlaceholderErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct{ name, value, want string }{
		{"unset variable", `{env.FXELECTION_TEST_UNSET}`, `elections[0].identity: placeholder: environment variable FXELECTION_TEST_UNSET is not set`},
		{"missing file", `{file.` + missing + `}`, `elections[0].identity: placeholder: file "` + missing + `": no such file or directory`},
		{"directory", `{file.` + os.TempDir() + `}`, `elections[0].identity: placeholder: file "` + os.TempDir() + `": is a directory`},
		{"bad variable name", `{env.A-B}`, `elections[0].identity: placeholder: {env.NAME}: invalid variable name "A-B"`},
		{"empty path", `x{file.}`, `elections[0].identity: placeholder: {file.PATH}: empty path`},
		{"unterminated", `{env.HOME`, `elections[0].identity: placeholder: unterminated placeholder`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(doc(`{"name": "a", "identity": "` + tc.value + `", "backend": ` + mem + `}`)))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, config.ErrPlaceholder) {
				t.Fatalf("error = %v, want %q", err, tc.want)
			}
		})
	}
	// Keys are never placeholders: this is an unknown key, not an unset variable.
	_, err := config.Parse([]byte(doc(`{"name": "a", "{env.FXELECTION_TEST_UNSET}": 1, "backend": ` + mem + `}`)))
	if !errors.Is(err, config.ErrUnknownKey) {
		t.Fatalf("placeholder in a key: %v", err)
	}
	// A file larger than MaxPlaceholderFile is refused, not truncated.
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, make([]byte, config.MaxPlaceholderFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = config.Parse([]byte(doc(`{"name": "a", "identity": "{file.` + big + `}", "backend": ` + mem + `}`)))
	if err == nil || !strings.Contains(err.Error(), "larger than 1048576 bytes") {
		t.Fatalf("big file: %v", err)
	}
}

// TestSecretsNeverInErrors: a module that echoes its settings in errors
// (Validate here; Provision in the life-cycle tests) has them redacted,
// whether they came from a placeholder or were written in the document.
func TestSecretsNeverInErrors(t *testing.T) {
	l := config.Loader{LookupEnv: env(map[string]string{"PW": secret})}
	for _, settings := range []string{
		`"password": "` + secret + `", "dsn": "db"`,
		`"password": "{env.PW}", "dsn": "db"`,
		`"dsn": "postgres://app:{env.PW}@db"`,
	} {
		_, err := l.Parse([]byte(doc(`{"name": "a", "backend": ` + probe(settings+`, "fail_validate": true`) + `}`)))
		if err == nil || strings.Contains(err.Error(), secret) || strings.Contains(fmt.Sprintf("%+v %#v", err, err), secret) {
			t.Fatalf("secret in error (or no error): %v", err)
		}
		if !strings.Contains(err.Error(), "xxxxx") || !strings.Contains(err.Error(), "elections[0].backend: fxelection.backends.probe:") {
			t.Fatalf("error = %v", err)
		}
	}
	// A document built in Go: Build redacts every Secret in it.
	p := &Probe{Journal: "go", Tag: "t", Password: modkit.NewSecret(secret), FailValidate: true}
	_, err := config.Build(&config.Document{Elections: []config.Election{{Config: fxelection.Config{Name: "a"}, Backend: modkit.BackendRef{Module: p}}}})
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "elections[0].backend: fxelection.backends.probe: password xxxxx") {
		t.Fatalf("Build error = %v", err)
	}
}

func TestSecretNeverPrints(t *testing.T) {
	s := modkit.NewSecret(secret)
	if s.Value() != secret || s.IsZero() || !modkit.NewSecret("").IsZero() {
		t.Fatal("Value/IsZero")
	}
	holder := struct {
		P  modkit.Secret
		PP *modkit.Secret
		M  map[string]modkit.Secret
	}{s, &s, map[string]modkit.Secret{"k": s}}
	type unexported struct{ p modkit.Secret } // fmt cannot call Format on p
	var out []string
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		out = append(out, fmt.Sprintf(f, unexported{s}), fmt.Sprintf(f, []unexported{{s}}))
	}
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%10s", "%-5v", "%d", "%T"} {
		out = append(out, fmt.Sprintf(f, s), fmt.Sprintf(f, holder), fmt.Sprintf(f, &s))
	}
	out = append(out, fmt.Sprint(s), fmt.Sprintln(holder), s.String(), s.GoString())
	for _, v := range []any{s, holder, &s} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "secret", s, "holder", holder)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "secret", s)
	out = append(out, buf.String())
	for _, o := range out {
		if strings.Contains(o, secret) || strings.Contains(o, "hunter") || strings.Contains(o, "68756e74") {
			t.Errorf("secret printed: %s", o)
		}
	}
	if got := fmt.Sprintf("%v|%q|%#v", s, s, s); got != `xxxxx|"xxxxx"|modkit.Secret("xxxxx")` {
		t.Errorf("formats = %s", got)
	}

	var back modkit.Secret
	if err := json.Unmarshal([]byte(`"`+secret+`"`), &back); err != nil || back.Value() != secret {
		t.Fatalf("UnmarshalJSON: %v", err)
	}
	if err := json.Unmarshal([]byte(`12345678`), &back); err == nil || strings.Contains(err.Error(), "12345678") {
		t.Fatalf("UnmarshalJSON of a number: %v", err)
	}
}

// TestParsedDocumentNeverPrintsSecrets: printing or marshalling a loaded
// document (for a --print-config) shows no secret.
func TestParsedDocumentNeverPrintsSecrets(t *testing.T) {
	l := config.Loader{LookupEnv: env(map[string]string{"PW": secret})}
	d, err := l.Parse([]byte(doc(`{"name": "a", "backend": ` + probe(`"password": "{env.PW}"`) + `}`)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []string{string(b), fmt.Sprintf("%v %+v %#v", *d, *d, *d), fmt.Sprintf("%+v", *d.Elections[0].Backend.Module.(*Probe))} {
		if strings.Contains(o, secret) {
			t.Errorf("secret printed: %s", o)
		}
	}
	if !strings.Contains(string(b), `"module":"fxelection.backends.probe"`) || !strings.Contains(string(b), `"password":"xxxxx"`) {
		t.Errorf("marshalled document = %s", b)
	}
}

// TestRefusePlaceholders: with Loader.RefusePlaceholders every placeholder
// is an error at its path naming its kind only (neither the variable, the
// file nor a value), matching ErrPlaceholderRefused and ErrPlaceholder, and
// nothing is looked up or read; a brace that opens no placeholder is still
// literal.
func TestRefusePlaceholders(t *testing.T) {
	looked := false
	l := config.Loader{
		RefusePlaceholders: true,
		LookupEnv:          func(string) (string, bool) { looked = true; return secret, true },
		ReadFile:           func(string) ([]byte, error) { looked = true; return []byte(secret), nil },
	}
	_, err := l.Parse([]byte(doc(`{"name": "a", "identity": "{env.FXELECTION_TEST_NODE}", "backend": ` +
		probe(`"password": "{file./etc/shadow}", "hosts": ["x:{app}"]`) + `}`)))
	if !errors.Is(err, config.ErrPlaceholderRefused) || !errors.Is(err, config.ErrPlaceholder) {
		t.Fatalf("err = %v, want ErrPlaceholderRefused", err)
	}
	msg := err.Error()
	for _, want := range []string{"elections[0].identity: placeholder: {env.NAME}: not allowed here", "elections[0].backend.password: placeholder: {file.PATH}: not allowed here"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "FXELECTION_TEST_NODE") || strings.Contains(msg, "shadow") || strings.Contains(msg, "hosts") || looked {
		t.Errorf("error %q names a variable or file, or something was looked up (%v)", msg, looked)
	}
	if _, err := l.ParseYAML([]byte("elections:\n  - name: a\n    identity: '{file.x}'\n    backend: {module: fxelection.backends.memory}\n")); !errors.Is(err, config.ErrPlaceholderRefused) {
		t.Errorf("YAML: %v", err)
	}
}
