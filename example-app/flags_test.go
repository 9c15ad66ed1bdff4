package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/fxelection/fxelection/fxelection"
)

func noEnv(string) string { return "" }

// TestEveryDurationFlagIsBounded checks every duration flag in the table,
// including ones added later: zero is rejected unless the flag documents a
// meaning for it, and negative and absurd values (1<<62 ns) are rejected
// without overflow, on the command line and from the environment.
func TestEveryDurationFlagIsBounded(t *testing.T) {
	var o options
	n := 0
	for _, d := range o.flagTable() {
		df, ok := d.value.(durationFlag)
		if !ok {
			continue
		}
		n++
		bad := []string{"-1s", "4611686018427387904ns", (maxDuration + 1).String()}
		if !df.zeroOK {
			bad = append(bad, "0", "0s")
		}
		if df.min > time.Nanosecond {
			bad = append(bad, (df.min - 1).String())
		}
		for _, v := range bad {
			_, err := parseArgs([]string{"--" + d.name, v}, noEnv)
			var ue usageError
			if !errors.As(err, &ue) || !strings.HasPrefix(ue.msg, "--"+d.name+" (") {
				t.Errorf("--%s %s: %v, want a usage error naming the flag", d.name, v, err)
			}
			_, err = parseArgs(nil, func(k string) string {
				if k == envName(d.name) {
					return v
				}
				return ""
			})
			if !errors.As(err, &ue) || !strings.HasPrefix(ue.msg, "--"+d.name+" from "+envName(d.name)+" (") {
				t.Errorf("%s=%s: %v, want a usage error naming the flag and the variable", envName(d.name), v, err)
			}
		}
	}
	if n < 6 {
		t.Fatalf("found %d duration flags, want at least 6", n)
	}
}

func TestMinimumRetryAccepted(t *testing.T) {
	o, err := parseArgs([]string{"--backend", "memory", "--lease", "100ms", "--renew-deadline", "50ms", "--retry", minRetryPeriod.String(), "--work-interval", minWorkInterval.String()}, noEnv)
	if err != nil || o.retry != minRetryPeriod || o.workInterval != minWorkInterval {
		t.Fatalf("parse at the floors: %+v, %v", o, err)
	}
	if err := o.config().Validate(); err != nil {
		t.Fatalf("the core rejects what the flags accept: %v", err)
	}
}

func TestSecretFlagsAreMarked(t *testing.T) {
	var o options
	for _, d := range o.flagTable() {
		if strings.Contains(d.name, "password") || strings.Contains(d.name, "secret") || strings.Contains(d.name, "dsn") || strings.Contains(d.name, "connection-string") {
			if !d.secret {
				t.Errorf("--%s is not marked secret", d.name)
			}
		}
	}
}

func TestSettingsFromTable(t *testing.T) {
	o, err := parseArgs([]string{"--backend", "s3", "--s3-endpoint", "127.0.0.1:9000", "--s3-bucket", "b", "--s3-insecure"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	s := backendSettings(t, o)
	if s["endpoint"] != "127.0.0.1:9000" || s["bucket"] != "b" || s["secure"] != false {
		t.Fatalf("settings %v", s)
	}
	o, err = parseArgs([]string{"--backend", "redis", "--redis-addr", "127.0.0.1:1,127.0.0.1:2", "--redis-db", "15", "--redis-tls", "--redis-password", "pw"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	s = backendSettings(t, o)
	if s["addr"] != "127.0.0.1:1,127.0.0.1:2" || s["db"] != 15.0 || s["tls"] != true || s["password"] != "pw" || s["dsn"] != nil {
		t.Fatalf("settings %v", s)
	}
}

// TestCoreProblemKeepsValues: Config field names in the core's messages
// become flag names, but a user's value that contains a field name is
// never rewritten (it was: "LeaseName\t" came out as "Lease--election\t"),
// and the core's messages quote no value at all.
func TestCoreProblemKeepsValues(t *testing.T) {
	o := defaults()
	for _, name := range []string{"LeaseName\t", "Name\x1b[2J", "RetryPeriod\n"} {
		o.election, o.id = name, "id"
		err := o.config().Validate()
		if err == nil {
			t.Fatalf("the core accepted election %q", name)
		}
		got := o.coreProblem(err)
		want := fmt.Sprintf("--election: must be printable (byte %d is a control character)", strings.IndexFunc(name, unicode.IsControl))
		if got != want {
			t.Errorf("coreProblem(%q) = %q, want %q", err, got, want)
		}
		if strings.Contains(got, strings.TrimRightFunc(name, unicode.IsControl)) {
			t.Errorf("coreProblem(%q) = %q quotes the value", err, got)
		}
	}
	o.fromEnv = map[string]string{"lease": "FXELECTION_LEASE"}
	for in, want := range map[string]string{
		"fxelection: RenewDeadline: must be shorter than LeaseDuration (is 5s, LeaseDuration 5s)": "--renew-deadline: must be shorter than --lease from FXELECTION_LEASE (is 5s, --lease from FXELECTION_LEASE 5s)",
		"fxelection: RenewDeadline (5s) must be shorter than LeaseDuration (5s)":                  "--renew-deadline (5s) must be shorter than --lease from FXELECTION_LEASE (5s)",
		`fxelection: Name ("RetryPeriod Name") must be printable`:                                 `--election ("RetryPeriod Name") must be printable`,
		`fxelection: Identity ("a\"Name\"b") must be printable`:                                   `--id ("a\"Name\"b") must be printable`,
		"fxelection: RenewDeadlineX (1s) Names":                                                   "RenewDeadlineX (1s) Names",
		`fxelection: Name ("unterminated`:                                                         `--election ("unterminated`,
	} {
		if got := o.coreProblem(errors.New(in)); got != want {
			t.Errorf("coreProblem(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSettingProblemNamesTheFlag(t *testing.T) {
	o := defaults()
	o.backend, o.redisPassword = "redis", "hunter22"
	for in, want := range map[string]string{
		`fxelection: backend "redis": setting "addr": "x" is not host:port`:                        `--redis-addr: "x" is not host:port`,
		`fxelection: backend "redis": setting "addr": "setting \"db\"" is not host:port`:           `--redis-addr: "setting \"db\"" is not host:port`,
		`fxelection: backend "redis": setting "prefix": bad`:                                       `--backend redis: setting "prefix": bad`,
		`fxelection: backend "redis": auth hunter22 failed`:                                        `--backend redis: auth xxxxx failed`,
		"fxelection: backend \"redis\": dial redis://u:pw@h:1\nforged":                             `--backend redis: dial redis://xxxxx@h:1\nforged`,
		`fxelection: backend "redis": setting "password": "hunter22" is not what the server wants`: `--redis-password: "xxxxx" is not what the server wants`,
	} {
		if got := o.settingProblem(errors.New(in)); got != want {
			t.Errorf("settingProblem(%q) = %q, want %q", in, got, want)
		}
	}
	// A secret too short to replace withholds the details, but the line
	// still names the backend.
	o.redisPassword = "pw"
	if got := o.settingProblem(errors.New(`fxelection: backend "redis": auth pw failed`)); strings.Contains(got, "pw ") || !strings.HasPrefix(got, "--backend redis: ") {
		t.Errorf("short secret: %q", got)
	}
}

func TestParseProblemTwoDashes(t *testing.T) {
	for _, args := range [][]string{{"--nope"}, {"-nope"}, {"--lease"}, {"--redis-tls=x"}, {"---x"}, {"--nope\x1b[2J=1"}} {
		_, err := parseArgs(args, noEnv)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Fatalf("%q: %v", args, err)
		}
		if singleDashFlag.MatchString(ue.msg) || !printable(ue.msg) {
			t.Errorf("%q: %q", args, ue.msg)
		}
	}
}

func TestUsageNamesEveryFlagWithTwoDashes(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--help"}, &out, &errOut, noEnv); code != 0 {
		t.Fatalf("help: code %d", code)
	}
	var o options
	for _, d := range o.flagTable() {
		if !strings.Contains(out.String(), "\n  --"+d.name) || !strings.Contains(out.String(), envName(d.name)) {
			t.Errorf("help lacks --%s or %s:\n%s", d.name, envName(d.name), out.String())
		}
	}
	if singleDashFlag.MatchString(out.String()) {
		t.Errorf("help names a flag with one dash:\n%s", out.String())
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"node-1":            "node-1",
		"ünïcödé 漢字":        "ünïcödé 漢字",
		"\x1b[2J":           `"\x1b[2J"`,
		"a\nleader:   evil": `"a\nleader:   evil"`,
		"a\rb":              `"a\rb"`,
		"\xff\xfe":          `"\xff\xfe"`,
		"a\u202eb":          `"a\u202eb"`,
		"tab\there":         `"tab\there"`,
		`"quoted"`:          `"\"quoted\""`,
		"":                  "",
	} {
		got := escape(in)
		if got != want {
			t.Errorf("escape(%q) = %q, want %q", in, got, want)
		}
		for _, r := range got {
			if !unicode.IsPrint(r) {
				t.Errorf("escape(%q) = %q keeps non-printable %U", in, got, r)
			}
		}
	}
	for in, want := range map[string]string{
		"plain":        "plain",
		"a\nb":         `a\nb`,
		"\x1b[2Jx\xff": `\x1b[2Jx\xff`,
		"ü\r":          `ü\r`,
	} {
		if got := oneLine(in); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPrintLeaseEscapes feeds status's printer a hostile lease (as a store
// that skipped validation would return it): no escape sequence, carriage
// return or forged line reaches the output.
func TestPrintLeaseEscapes(t *testing.T) {
	now := time.Now()
	l := fxelection.Lease{
		Holder: "evil\x1b[2J\nleader:   forged\r",
		Term:   7,
		Metadata: map[string]string{
			"http":        "127.0.0.1:8080\nmetadata: admin=yes",
			"k\x1b]0;t\a": "\xff",
			"a=b":         "c",
			"ok":          "value",
			"\u202ertl":   "x",
		},
		ExpiresAt: now.Add(time.Second),
	}
	var out bytes.Buffer
	printLease(&out, "demo\x1b[31m", l, now)
	s := out.String()
	if strings.ContainsAny(s, "\x1b\r\a\u202e") || !printable(strings.ReplaceAll(s, "\n", "")) {
		t.Fatalf("raw control characters in %q", s)
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) != 4+len(l.Metadata) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), 4+len(l.Metadata), s)
	}
	for _, want := range []string{
		`election: "demo\x1b[31m"`,
		`leader:   "evil\x1b[2J\nleader:   forged\r"`,
		"term:     7",
		`metadata: http="127.0.0.1:8080\nmetadata: admin=yes"`,
		`metadata: "k\x1b]0;t\a"="\xff"`,
		`metadata: "a=b"=c`,
		"metadata: ok=value",
	} {
		if !strings.Contains(s, want+"\n") {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}
