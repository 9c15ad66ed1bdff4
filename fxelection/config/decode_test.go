package config_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection/config"
)

// doc wraps election JSON objects in a document.
func doc(elections ...string) string {
	return `{"elections": [` + strings.Join(elections, ",") + `]}`
}

const mem = `{"module": "fxelection.backends.memory"}`

func probe(settings string) string {
	if settings != "" {
		settings = ", " + settings
	}
	return `{"module": "fxelection.backends.probe", "journal": "decode", "tag": "p"` + settings + `}`
}

func TestParseStrict(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want []string // lines of the error, each "path: message" (substring match)
		is   error
	}{
		// Unknown keys.
		{"unknown top-level key", `{"electionz": [], "elections": [{"name": "a", "backend": ` + mem + `}]}`,
			[]string{`electionz: unknown key (did you mean "elections"?)`}, config.ErrUnknownKey},
		{"unknown election key", doc(`{"name": "a", "lease_duraton": "1s", "backend": ` + mem + `}`),
			[]string{`elections[0].lease_duraton: unknown key (did you mean "lease_duration"?)`}, config.ErrUnknownKey},
		{"keys are case-sensitive", doc(`{"Name": "a", "backend": ` + mem + `}`),
			[]string{`elections[0].Name: unknown key (did you mean "name"?)`, `elections[0].name: required`}, config.ErrUnknownKey},
		{"memory module has no settings", doc(`{"name": "a", "backend": {"module": "fxelection.backends.memory", "addr": "x"}}`),
			[]string{`elections[0].backend.addr: unknown key`}, config.ErrUnknownKey},
		{"misspelt module setting", doc(`{"name": "a", "backend": ` + probe(`"prot": 80`) + `}`),
			[]string{`elections[0].backend.prot: unknown key (did you mean "port"?)`}, config.ErrUnknownKey},
		{"odd key is quoted in the path", doc(`{"name": "a", "backend": ` + mem + `, "a b\u0007": 1}`),
			[]string{`elections[0]["a b\a"]: unknown key`}, config.ErrUnknownKey},
		{"duplicate key", doc(`{"name": "a", "name": "b", "backend": ` + mem + `}`),
			[]string{`elections[0].name: duplicate key`}, config.ErrDuplicateKey},

		// Wrong types.
		{"name is a number", doc(`{"name": 5, "backend": ` + mem + `}`),
			[]string{`elections[0].name: wrong type: want string, got number`}, config.ErrWrongType},
		{"elections is an object", `{"elections": {}}`,
			[]string{`elections: wrong type: want an array, got object`}, config.ErrWrongType},
		{"bool as string", doc(`{"name": "a", "keep_lease_on_stop": "yes", "backend": ` + mem + `}`),
			[]string{`elections[0].keep_lease_on_stop: wrong type: want true or false, got string`}, config.ErrWrongType},
		{"metadata value", doc(`{"name": "a", "metadata": {"zone": 1}, "backend": ` + mem + `}`),
			[]string{`elections[0].metadata.zone: wrong type: want string, got number`}, config.ErrWrongType},
		{"backend is a number", doc(`{"name": "a", "backend": 7}`),
			[]string{`elections[0].backend: wrong type: want a module object or the name of an entry in backends, got number`}, config.ErrWrongType},
		{"int as string", doc(`{"name": "a", "backend": ` + probe(`"port": "80"`) + `}`),
			[]string{`elections[0].backend.port: wrong type: want an integer, got string`}, config.ErrWrongType},
		{"int with fraction", doc(`{"name": "a", "backend": ` + probe(`"port": 1.5`) + `}`),
			[]string{`elections[0].backend.port: wrong type: want an integer that fits int`}, config.ErrWrongType},
		{"uint8 overflow", doc(`{"name": "a", "backend": ` + probe(`"count": 256`) + `}`),
			[]string{`elections[0].backend.count: wrong type: want a non-negative integer that fits uint8`}, config.ErrWrongType},
		{"uint negative", doc(`{"name": "a", "backend": ` + probe(`"count": -1`) + `}`),
			[]string{`elections[0].backend.count: wrong type: want a non-negative integer that fits uint8`}, config.ErrWrongType},
		{"float as bool", doc(`{"name": "a", "backend": ` + probe(`"ratio": true`) + `}`),
			[]string{`elections[0].backend.ratio: wrong type: want a number, got boolean`}, config.ErrWrongType},
		{"slice element", doc(`{"name": "a", "backend": ` + probe(`"hosts": ["a", 2]`) + `}`),
			[]string{`elections[0].backend.hosts[1]: wrong type: want string, got number`}, config.ErrWrongType},
		{"secret as number", doc(`{"name": "a", "backend": ` + probe(`"password": 12345`) + `}`),
			[]string{`elections[0].backend.password: wrong type: want string, got number`}, config.ErrWrongType},
		{"module ID as number", doc(`{"name": "a", "backend": {"module": 1}}`),
			[]string{`elections[0].backend.module: wrong type: want a module ID string, got number`}, config.ErrWrongType},

		// Missing required settings.
		{"empty document", `{}`, []string{`elections: required`}, config.ErrRequired},
		{"no elections", `{"elections": []}`, []string{`elections: required`}, config.ErrRequired},
		{"no name", doc(`{"backend": ` + mem + `}`), []string{`elections[0].name: required`}, config.ErrRequired},
		{"empty name", doc(`{"name": "", "backend": ` + mem + `}`), []string{`elections[0].name: required`}, config.ErrRequired},
		{"null name", doc(`{"name": null, "backend": ` + mem + `}`), []string{`elections[0].name: required`}, config.ErrRequired},
		{"no backend", doc(`{"name": "a"}`), []string{`elections[0].backend: required`}, config.ErrRequired},
		{"no module ID", doc(`{"name": "a", "backend": {"addr": "x"}}`), []string{`elections[0].backend.module: required`}, config.ErrRequired},
		{"module setting", doc(`{"name": "a", "backend": {"module": "fxelection.backends.probe", "journal": "decode"}}`),
			[]string{`elections[0].backend.tag: required`}, config.ErrRequired},
		{"duplicate key in a module", doc(`{"name": "a", "backend": `+mem+`}`, `{"name": "b", "backend": `+probe(`"tag": ""`)+`}`),
			[]string{`elections[1].backend.tag: duplicate key`}, config.ErrDuplicateKey},

		// Durations.
		{"duration without unit", doc(`{"name": "a", "lease_duration": "15", "backend": ` + mem + `}`),
			[]string{`elections[0].lease_duration: invalid value: not a duration (want a number with a unit: "1.5s", "300ms", "2m")`}, config.ErrInvalidValue},
		{"duration as number", doc(`{"name": "a", "retry_period": 2, "backend": ` + mem + `}`),
			[]string{`elections[0].retry_period: wrong type: want a duration string such as "1.5s", got number`}, config.ErrWrongType},
		{"module duration", doc(`{"name": "a", "backend": ` + probe(`"timeout": "soon"`) + `}`),
			[]string{`elections[0].backend.timeout: invalid value: not a duration`}, config.ErrInvalidValue},
		{"duration overflow", doc(`{"name": "a", "stop_timeout": "9999999999h", "backend": ` + mem + `}`),
			[]string{`elections[0].stop_timeout: invalid value: not a duration`}, config.ErrInvalidValue},

		// Modules.
		{"unknown module", doc(`{"name": "a", "backend": {"module": "fxelection.backends.nope"}}`),
			[]string{`elections[0].backend.module: unknown module: no such module in namespace fxelection.backends (registered: fxelection.backends.memory, fxelection.backends.probe, fxelection.backends.wrap); import the package that provides it`}, config.ErrUnknownModule},
		{"malformed module ID", doc(`{"name": "a", "backend": {"module": "Redis"}}`),
			[]string{`elections[0].backend.module: invalid module ID: want lower-case labels joined by dots (namespace.name)`}, config.ErrInvalidModuleID},
		{"module from another namespace", doc(`{"name": "a", "backend": {"module": "fxelection.observers.x"}}`),
			[]string{`elections[0].backend.module: unknown module: the module is not in namespace fxelection.backends`}, config.ErrUnknownModule},
		{"module Validate", doc(`{"name": "a", "backend": ` + probe(`"fail_validate": true`) + `}`),
			[]string{`elections[0].backend: fxelection.backends.probe: password  and dsn  rejected`}, nil},

		// Shared backends.
		{"unknown backends entry", `{"backends": {"mem": ` + mem + `}, "elections": [{"name": "a", "backend": "mme"}]}`,
			[]string{`elections[0].backend: invalid value: no backends entry by that name (did you mean "mem"?) (defined: "mem")`, `backends.mem: invalid value: not used by any election`}, config.ErrInvalidValue},
		{"backends entry by name", `{"backends": {"a": "b", "b": ` + mem + `}, "elections": [{"name": "a", "backend": "b"}]}`,
			[]string{`backends.a: wrong type: want a module object`}, config.ErrWrongType},

		// Elector config and fx names.
		{"config validation", doc(`{"name": "a", "lease_duration": "1s", "renew_deadline": "2s", "backend": ` + mem + `}`),
			[]string{`elections[0].renew_deadline: fxelection: RenewDeadline: must be shorter than LeaseDuration (is 2s, LeaseDuration 1s)`}, nil},
		{"negative duration", doc(`{"name": "a", "max_backoff": "-1s", "backend": ` + mem + `}`),
			[]string{`elections[0].max_backoff: fxelection: MaxBackoff: must be positive (is -1s)`}, nil},
		{"metadata too big", doc(`{"name": "a", "metadata": {"k": "` + strings.Repeat("x", 5000) + `"}, "backend": ` + mem + `}`),
			[]string{`elections[0].metadata: fxelection: Metadata: must be at most 4096 bytes of keys and values (is 5001)`}, nil},
		{"identity unprintable", doc(`{"name": "a", "identity": "a\u0001", "backend": ` + mem + `}`),
			[]string{`elections[0].identity: fxelection: Identity: must be printable (byte 1 is a control character)`}, nil},
		{"duplicate fx name", doc(`{"name": "a", "backend": `+mem+`}`, `{"name": "a", "backend": `+mem+`}`),
			[]string{`elections[1].fx_name: invalid value: fx name already used by elections[0]`}, config.ErrInvalidValue},
		{"name unfit for a tag", doc(`{"name": "nightly \"jobs\"", "backend": ` + mem + `}`),
			[]string{`elections[0].fx_name: required: the election name cannot be an fx name tag`}, config.ErrRequired},
		{"bad fx name", doc(`{"name": "a", "fx_name": "a b", "backend": ` + mem + `}`),
			[]string{`elections[0].fx_name: invalid value`}, config.ErrInvalidValue},

		// Syntax.
		{"syntax error", "{\"elections\": [\n  {\"name\": \"a\",, }]}",
			[]string{`syntax error at line 2, column 16: invalid character ',' looking for beginning of object key string`}, config.ErrSyntax},
		{"truncated", `{"elections": [`, []string{`elections: syntax error at line 1, column 16: unexpected end of document`}, config.ErrSyntax},
		{"trailing data", `{"elections": []} {}`, []string{`syntax error at line 1, column 19: data after the document`}, config.ErrSyntax},
		{"invalid UTF-8", "{\"elections\": [\"\xff\"]}", []string{`syntax error: document is not valid UTF-8`}, config.ErrSyntax},
		{"too deep", `{"elections": [{"name": "a", "metadata": ` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}]}`,
			[]string{`syntax error: nested deeper than 64 levels`}, config.ErrSyntax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.doc))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v does not match %v", err, tc.is)
			}
			var pe *config.PathError
			if !errors.As(err, &pe) {
				t.Errorf("error %v is not a *PathError", err)
			}
		})
	}
}

func TestParseReportsEveryError(t *testing.T) {
	_, err := config.Parse([]byte(doc(
		`{"name": "a", "lease_duration": "x", "backend": `+mem+`}`,
		`{"name": 1, "backend": {"module": "fxelection.backends.memory", "x": 1}}`,
		`{"backend": `+probe(`"port": "p"`)+`}`)))
	want := []string{
		"elections[0].lease_duration: invalid value",
		"elections[1].name: wrong type",
		"elections[1].backend.x: unknown key",
		"elections[2].backend.port: wrong type",
		"elections[2].name: required",
	}
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("error %d = %q, want prefix %q", i, lines[i], w)
		}
	}
}

func TestParseValid(t *testing.T) {
	d, err := config.Parse([]byte(`{
		"backends": {"shared": {"module": "fxelection.backends.memory"}},
		"elections": [
			{"name": "billing", "backend": "shared"},
			{"name": "reports", "fx_name": "rep", "identity": "node-1", "metadata": {"addr": "10.0.0.7:8080"},
			 "lease_duration": "30s", "renew_deadline": "20s", "retry_period": "4s", "max_backoff": "1m",
			 "stop_timeout": "5s", "keep_lease_on_stop": true, "no_recampaign": true,
			 "priority": 3, "priority_grace": "9s", "preempt": true, "min_tenure": "1m",
			 "backend": {"module": "fxelection.backends.probe", "journal": "valid", "tag": "t", "port": 6379,
			             "ratio": 0.5, "count": 3, "timeout": "1.5s", "labels": {"a": "b"}, "hosts": ["h1", "h2"],
			             "password": null}}
		]}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Elections[0].Backend.Use != "shared" || d.Backends["shared"].Module == nil {
		t.Fatalf("shared backend: %+v", d)
	}
	c := d.Elections[1].Config()
	if c.Name != "reports" || c.Identity != "node-1" || c.Metadata["addr"] != "10.0.0.7:8080" || c.LeaseDuration != 30*time.Second ||
		c.RenewDeadline != 20*time.Second || c.RetryPeriod != 4*time.Second || c.MaxBackoff != time.Minute ||
		c.StopTimeout != 5*time.Second || !c.KeepLeaseOnStop || !c.NoRecampaign ||
		c.Candidacy.Priority != 3 || c.Candidacy.PriorityGrace != 9*time.Second || !c.Candidacy.Preempt || c.Candidacy.MinTenure != time.Minute {
		t.Fatalf("config = %+v", c)
	}
	p := d.Elections[1].Backend.Module.(*Probe)
	if p.Port != 6379 || p.Ratio != 0.5 || p.Count != 3 || time.Duration(p.Timeout) != 1500*time.Millisecond ||
		p.Labels["a"] != "b" || len(p.Hosts) != 2 || !p.Password.IsZero() {
		t.Fatalf("probe = %+v", p)
	}
	if got := journalFor("valid").events(); len(got) != 1 || got[0] != "t:validate" {
		t.Fatalf("journal = %v, want only validate (nothing provisioned by Parse)", got)
	}
}

// settings exercises Unmarshal on types modules may use.
type settings struct {
	common
	Name    string            `json:"name" config:"required"`
	Wait    time.Duration     `json:"wait"`
	Addr    netip.Addr        `json:"addr"`
	Ptr     *int              `json:"ptr"`
	Any     any               `json:"any"`
	Nested  struct{ X int }   `json:"nested"`
	Skipped string            `json:"-"`
	Untyped map[string]any    `json:"untyped"`
	Ints    map[string]uint16 `json:"ints"`
	private int
}

type common struct {
	Region string `json:"region"`
}

func TestUnmarshal(t *testing.T) {
	var s settings
	err := config.Unmarshal([]byte(`{"name": "n", "region": "eu", "wait": "2s", "addr": "10.0.0.1", "ptr": 7,
		"any": [1, "x"], "nested": {"X": 3}, "untyped": {"a": {"b": true}}, "ints": {"a": 65535}}`), &s)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "n" || s.Region != "eu" || s.Wait != 2*time.Second || s.Addr.String() != "10.0.0.1" || *s.Ptr != 7 ||
		s.Nested.X != 3 || s.Ints["a"] != 65535 {
		t.Fatalf("decoded %+v", s)
	}
	for _, tc := range []struct{ doc, want string }{
		{`{"name": "n", "wait": 5}`, `wait: wrong type: want a duration string such as "1.5s", got number`},
		{`{"name": "n", "addr": "10.0.0.999"}`, `addr: invalid value: `},
		{`{"name": "n", "addr": 1}`, `addr: wrong type: want string, got number`},
		{`{"name": "n", "nested": {"x": 1}}`, `nested.x: unknown key (did you mean "X"?)`},
		{`{"name": "n", "Skipped": "x"}`, `Skipped: unknown key`},
		{`{"name": "n", "private": 1}`, `private: unknown key`},
		{`{"name": "n", "ints": {"a": 65536}}`, `ints.a: wrong type: want a non-negative integer that fits uint16`},
		{`{"region": "eu"}`, `name: required`},
		{`[]`, `wrong type: want an object, got array`},
	} {
		var s settings
		err := config.Unmarshal([]byte(tc.doc), &s)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Unmarshal(%s) = %v, want %q", tc.doc, err, tc.want)
		}
		if s.private != 0 {
			t.Errorf("Unmarshal(%s) set the unexported field to %d", tc.doc, s.private)
		}
	}
	if err := config.Unmarshal([]byte(`{}`), settings{}); err == nil {
		t.Error("Unmarshal into a non-pointer: no error")
	}
}
