package fxelection_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/fxelection/memory"
)

// One verdict for every text, whoever checks it: Config.Validate (and so
// New), backendkit.AcquireRequest.Validate (before a backend writes) and
// Lease.Validate (on every record read). A Config that New accepts never
// gives a record that followers refuse, and no error quotes the value.
func TestTextRulesAgree(t *testing.T) {
	const secret = "s3cr3t-" // every bad value carries it; no error may
	long := func(n int) string { return secret + strings.Repeat("x", n-len(secret)) }
	texts := []struct {
		name  string
		value string
		ok    bool
		// want is what every error says is wrong (after the field).
		want string
	}{
		{"plain", secret + "web-1", true, ""},
		{"space", secret + "web 1", true, ""},
		{"non-ASCII", secret + "wéb-ü-日本", true, ""},
		{"encoded U+FFFD", secret + "\uFFFD", true, ""},
		{"tab", secret + "a\tb", false, "must be printable (byte 8 is a control character)"},
		{"newline", secret + "line-one\nline-two", false, "must be printable (byte 15 is a control character)"},
		{"ESC", secret + "\x1b[2J", false, "must be printable (byte 7 is a control character)"},
		{"DEL", secret + "a\x7f", false, "must be printable (byte 8 is a control character)"},
		{"C1 control", secret + "a\u0085", false, "must be printable (byte 8 is a control character)"},
		{"bidi override", secret + "a\u202e", false, "must be printable (byte 8 starts a non-printable character)"},
		{"line separator", secret + "a\u2028", false, "must be printable (byte 8 starts a non-printable character)"},
		{"invalid UTF-8", secret + "a\xffb", false, "must be valid UTF-8 (byte 8 is not)"},
		{"truncated UTF-8", secret + "a\xe6\x97", false, "must be valid UTF-8 (byte 8 is not)"},
		{"at the limit", long(200), true, ""},
		{"too long", long(201), false, "must be at most 200 bytes (is 201)"},
	}
	base := func() (fxelection.Config, backendkit.AcquireRequest, fxelection.Lease) {
		return fxelection.Config{Name: "jobs", Identity: "web-1"},
			backendkit.AcquireRequest{Election: "jobs", Identity: "web-1", Duration: time.Second, Incarnation: backendkit.NewIncarnation()},
			fxelection.Lease{Election: "jobs", Holder: "web-1", Term: 1, Duration: time.Second}
	}
	type place struct {
		name string
		set  func(v string, c *fxelection.Config, r *backendkit.AcquireRequest, l *fxelection.Lease)
		// the field each check names, as its errors spell it
		config, request, record string
	}
	places := []place{
		{"name", func(v string, c *fxelection.Config, r *backendkit.AcquireRequest, l *fxelection.Lease) {
			c.Name, r.Election, l.Election = v, v, v
		}, "Name: ", "Election: ", "election: "},
		{"identity", func(v string, c *fxelection.Config, r *backendkit.AcquireRequest, l *fxelection.Lease) {
			c.Identity, r.Identity, l.Holder = v, v, v
		}, "Identity: ", "Identity: ", "holder: "},
		{"metadata value", func(v string, c *fxelection.Config, r *backendkit.AcquireRequest, l *fxelection.Lease) {
			m := map[string]string{"addr": v, "zone": "a"}
			c.Metadata, r.Metadata, l.Metadata = m, m, m
		}, `Metadata: the value of key "addr" `, `Metadata: the value of key "addr" `, `metadata: the value of key "addr" `},
		{"metadata key", func(v string, c *fxelection.Config, r *backendkit.AcquireRequest, l *fxelection.Lease) {
			m := map[string]string{v: "x"}
			c.Metadata, r.Metadata, l.Metadata = m, m, m
		}, "Metadata: a key ", "Metadata: a key ", "metadata: a key "},
	}
	for _, p := range places {
		for _, tt := range texts {
			if strings.HasPrefix(p.name, "metadata") && tt.name == "too long" {
				continue // metadata has a total limit instead (below)
			}
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				c, r, l := base()
				p.set(tt.value, &c, &r, &l)
				check := func(who string, err error, field string) {
					t.Helper()
					if tt.ok {
						if err != nil {
							t.Fatalf("%s refused it: %v", who, err)
						}
						return
					}
					if err == nil {
						t.Fatalf("%s accepted it", who)
					}
					if msg := err.Error(); strings.Contains(msg, secret) || strings.Contains(msg, tt.value) {
						t.Fatalf("%s quotes the value: %s", who, msg)
					}
					if want := field + tt.want; err.Error() != want {
						t.Fatalf("%s = %q, want %q", who, err, want)
					}
				}
				check("Config.Validate", c.Validate(), "fxelection: "+p.config)
				_, err := fxelection.New(c, memory.New())
				check("New", err, "fxelection: "+p.config)
				check("backendkit.AcquireRequest.Validate", r.Validate(), "fxelection: "+p.request)
				lerr := l.Validate()
				check("Lease.Validate", lerr, "fxelection: invalid lease record: "+p.record)
				if lerr != nil && !errors.Is(lerr, backendkit.ErrInvalidRecord) {
					t.Fatalf("Lease.Validate = %v, not backendkit.ErrInvalidRecord", lerr)
				}
			})
		}
	}
}

// The whole-field rules (required, empty key, total metadata size) agree
// too.
func TestTextLimitsAgree(t *testing.T) {
	big := strings.Repeat("v", backendkit.MaxMetadataBytes-1)
	tests := []struct {
		name                    string
		election, identity      string
		md                      map[string]string
		config, request, record string // "" = accepted
	}{
		{"empty identity", "jobs", "", nil, "", "fxelection: Identity: required", "fxelection: invalid lease record: holder: required"},
		{"empty name", "", "web-1", nil, "fxelection: Name: required", "fxelection: Election: required", ""},
		{"empty metadata key", "jobs", "web-1", map[string]string{"": "s3cr3t"}, "fxelection: Metadata: empty key", "fxelection: Metadata: empty key", "fxelection: invalid lease record: metadata: empty key"},
		{"empty metadata value", "jobs", "web-1", map[string]string{"k": ""}, "", "", ""},
		{"metadata at the limit", "jobs", "web-1", map[string]string{"k": big}, "", "", ""},
		{"metadata over the limit", "jobs", "web-1", map[string]string{"k": big + "v"},
			"fxelection: Metadata: must be at most 4096 bytes of keys and values (is 4097)",
			"fxelection: Metadata: must be at most 4096 bytes of keys and values (is 4097)",
			"fxelection: invalid lease record: metadata: must be at most 4096 bytes of keys and values (is 4097)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fxelection.Config{Name: tt.election, Identity: tt.identity, Metadata: tt.md}
			r := backendkit.AcquireRequest{Election: tt.election, Identity: tt.identity, Metadata: tt.md, Duration: time.Second}
			l := fxelection.Lease{Election: tt.election, Holder: tt.identity, Metadata: tt.md, Term: 1, Duration: time.Second}
			check := func(who string, err error, want string) {
				t.Helper()
				switch {
				case want == "" && err != nil:
					t.Fatalf("%s refused it: %v", who, err)
				case want != "" && (err == nil || err.Error() != want):
					t.Fatalf("%s = %v, want %q", who, err, want)
				case err != nil && strings.Contains(err.Error(), "s3cr3t"):
					t.Fatalf("%s quotes a value: %v", who, err)
				}
			}
			// An empty Identity in a Config means the default identity.
			check("Config.Validate", c.Validate(), tt.config)
			check("backendkit.AcquireRequest.Validate", r.Validate(), tt.request)
			check("Lease.Validate", l.Validate(), tt.record)
		})
	}
}

// backendkit.AcquireRequest.Validate checks the whole request: a duration Lease.Validate
// would refuse, and the incarnation token.
func TestAcquireRequestValidate(t *testing.T) {
	ok := backendkit.AcquireRequest{Election: "jobs", Identity: "web-1", Duration: time.Second}
	for _, tt := range []struct {
		name string
		mod  func(*backendkit.AcquireRequest)
		want string
	}{
		{"ok", func(*backendkit.AcquireRequest) {}, ""},
		{"no incarnation", func(r *backendkit.AcquireRequest) { r.Incarnation = "" }, ""},
		{"zero duration", func(r *backendkit.AcquireRequest) { r.Duration = 0 }, "fxelection: Duration: must be positive (is 0s)"},
		{"huge duration", func(r *backendkit.AcquireRequest) { r.Duration = backendkit.MaxRecordDuration + 1 }, "fxelection: Duration: must be at most 8760h0m0s (is 8760h0m0.000000001s)"},
		{"bad incarnation", func(r *backendkit.AcquireRequest) { r.Incarnation = "s3cr3t\n" }, "fxelection: Incarnation: must be at most 64 ASCII letters, digits, '-', '_' or '.'"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := ok
			r.Incarnation = backendkit.NewIncarnation()
			tt.mod(&r)
			err := r.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Validate = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestOneTextRule: Config.Validate, AcquireRequest.Validate and
// Lease.Validate accept and refuse the same names, identities and metadata
// (one rule, backendkit's text rules, behind all three).
func TestOneTextRule(t *testing.T) {
	long := strings.Repeat("x", backendkit.MaxNameLen+1)
	cases := []struct {
		name, id string
		md       map[string]string
	}{
		{"a", "b", nil},
		{"a", "b", map[string]string{"k": ""}},
		{"a", "b", map[string]string{"": "v"}},
		{"a", "b", map[string]string{"k": "v\n"}},
		{"a", "b", map[string]string{"k\x00": "v"}},
		{"a", "b", map[string]string{"k": strings.Repeat("v", backendkit.MaxMetadataBytes)}},
		{"a", "b", map[string]string{"k": strings.Repeat("v", backendkit.MaxMetadataBytes-1)}},
		{long, "b", nil},
		{"a", long, nil},
		{"a\t", "b", nil},
		{"a", "b\xff", nil},
		{"a", "\u00e9\ufffd", nil},
	}
	for i, c := range cases {
		cfg := fxelection.Config{Name: c.name, Identity: c.id, Metadata: c.md}.Validate()
		req := backendkit.AcquireRequest{Election: c.name, Identity: c.id, Metadata: c.md, Duration: time.Second}.Validate()
		rec := backendkit.Lease{Election: c.name, Holder: c.id, Metadata: c.md, Term: 1, Duration: time.Second}.Validate()
		if (cfg == nil) != (req == nil) || (req == nil) != (rec == nil) {
			t.Errorf("case %d: Config %v, AcquireRequest %v, Lease %v", i, cfg, req, rec)
		}
	}
}

// TestReservedNames: '#' names the library's own records ("<X>#preempt",
// semaphore slots, pool shards and members), so no election may be named
// with it: an election named "X#preempt" would be read as election X's
// preemption request. Config.Validate, New and Group.New refuse it with a
// ConfigError naming Name, without quoting the name; records and requests,
// which carry derived names, still accept it.
func TestReservedNames(t *testing.T) {
	const secret = "s3cr3t"
	for _, name := range []string{"X#preempt", secret + "#0", "#", secret + "#shard/a"} {
		cfg := fxelection.Config{Name: name, Identity: "id"}
		_, newErr := fxelection.New(cfg, memory.New())
		g, err := fxelection.NewGroup(memory.New())
		if err != nil {
			t.Fatal(err)
		}
		_, groupErr := g.New(cfg)
		for who, err := range map[string]error{"Config.Validate": cfg.Validate(), "New": newErr, "Group.New": groupErr} {
			var ce *fxelection.ConfigError
			if !errors.As(err, &ce) || ce.Field != "Name" {
				t.Fatalf("%s(Name %q) = %v, want a ConfigError naming Name", who, name, err)
			}
			if msg := err.Error(); !strings.Contains(msg, "must not contain '#'") || strings.Contains(msg, secret) {
				t.Fatalf("%s(Name %q) = %q: want the reserved character named, the value never quoted", who, name, msg)
			}
		}
		req := backendkit.AcquireRequest{Election: name, Identity: "id", Duration: time.Second}
		rec := backendkit.Lease{Election: name, Holder: "id", Term: 1, Duration: time.Second}
		if err := errors.Join(req.Validate(), rec.Validate()); err != nil {
			t.Fatalf("a derived name %q refused in a request or record: %v", name, err)
		}
	}
}
