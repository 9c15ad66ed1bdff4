package backendkit_test

import (
	"bytes"
	"errors"
	"maps"
	"math"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// Hostile inputs from issue 9, shared by the seeds below.
const (
	badHolder = "\xff\xfe\xfd"
	escHolder = "a\x1b[2J\x1b[31mred"
)

func FuzzUnmarshalRecord(f *testing.F) {
	valid, err := backendkit.MarshalRecord(fxelection.Lease{
		Election: "jobs", Holder: "a", Metadata: map[string]string{"addr": "10.0.0.1:80"}, Term: 7,
		Duration: 15 * time.Second, AcquiredAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
	})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][]byte{
		valid,
		[]byte(`{"fxelection":1,"election":"jobs","holder":"a","term":1,"duration_ms":1}`),
		[]byte(`{"fxelection":1,"holder":"` + badHolder + `","term":3,"duration_ms":60000}`),
		[]byte(`{"fxelection":1,"holder":"\u001b[31mx","term":3,"duration_ms":60000}`),
		[]byte(`{"fxelection":1,"holder":"a","term":3,"duration_ms":9223372036854775807}`),
		[]byte(`{"fxelection":1,"holder":"a","term":3,"duration_ms":9223372036854}`),
		[]byte(`{"fxelection":1,"holder":"a","term":3,"duration_ms":-1}`),
		[]byte(`{"fxelection":1,"holder":"a","term":0,"duration_ms":1000}`),
		[]byte(`{"fxelection":1,"holder":"a","term":9223372036854775807,"duration_ms":1000}`),
		[]byte(`{"fxelection":1,"holder":"a","term":9223372036854775808,"duration_ms":1000}`),
		[]byte(`{"fxelection":1,"holder":"a","term":18446744073709551615,"duration_ms":1000}`),
		[]byte(`{"fxelection":1,"holder":"a","term":1e30,"duration_ms":1000}`),
		[]byte(`{"fxelection":1,"holder":"a","term":1,"duration_ms":1000,"metadata":{"k":"\u001b]0;title\u0007"}}`),
		[]byte(`{"fxelection":1,"holder":"a","term":1,"duration_ms":1000,"metadata":{"":"v"}}`),
		[]byte(`{"fxelection":1,"holder":"a","term":1,"duration_ms":1000,"acquired_at":"9999-12-31T23:59:59.999999999+23:59"}`),
		[]byte(`{"fxelection":1,"holder":"a\u202eb","term":1,"duration_ms":1000}`),
		[]byte(`{"fxelection":2,"holder":"a","term":1,"duration_ms":1000}`),
		[]byte("fxe1|5|3|" + badHolder + "|60000|0|"),
		[]byte("null"), []byte("[]"), []byte("{}"), []byte(""), []byte(`"x"`), []byte("garbage"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := backendkit.UnmarshalRecord(b)
		if err != nil {
			if !errors.Is(err, backendkit.ErrInvalidRecord) {
				t.Fatalf("error %v does not match ErrInvalidRecord", err)
			}
			if !utf8.ValidString(err.Error()) {
				t.Fatalf("error message is not valid UTF-8: %q", err.Error())
			}
			return
		}
		if err := l.Validate(); err != nil {
			t.Fatalf("decoded lease fails Lease.Validate: %v (%+v)", err, l)
		}
		enc, err := backendkit.MarshalRecord(l)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", l, err)
		}
		l2, err := backendkit.UnmarshalRecord(enc)
		if err != nil {
			t.Fatalf("re-encoded record %s does not decode: %v", enc, err)
		}
		if !sameLease(l, l2) {
			t.Fatalf("round trip changed the lease:\n%+v\n%+v", l, l2)
		}
		enc2, err := backendkit.MarshalRecord(l2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable: %s vs %s (%v)", enc, enc2, err)
		}
	})
}

func sameLease(a, b fxelection.Lease) bool {
	return a.Election == b.Election && a.Holder == b.Holder && a.Term == b.Term && a.Duration == b.Duration &&
		a.AcquiredAt.Equal(b.AcquiredAt) && maps.Equal(a.Metadata, b.Metadata)
}

func FuzzLeaseValidate(f *testing.F) {
	f.Add("jobs", "a", uint64(1), int64(time.Second), "k", "v")
	f.Add("", badHolder, uint64(3), int64(time.Minute), "", "")
	f.Add("jobs", escHolder, uint64(0), int64(-1), "k", "\x1b[31m")
	f.Add("jobs", "a", uint64(math.MaxInt64), int64(backendkit.MaxRecordDuration), "k", "v")
	f.Add("jobs", "a", uint64(math.MaxInt64)+1, int64(backendkit.MaxRecordDuration)+1, "k", "v")
	f.Add("jobs", "a", uint64(math.MaxUint64), int64(math.MaxInt64), "k", "v")
	f.Add("jobs\n", "a\u202e", uint64(5), int64(500*time.Microsecond), "\xff", "v")
	f.Add(strings.Repeat("n", 201), strings.Repeat("h", 201), uint64(5), int64(time.Second), "k", strings.Repeat("v", 5000))
	f.Fuzz(func(t *testing.T, election, holder string, term uint64, durNs int64, mk, mv string) {
		l := fxelection.Lease{Election: election, Holder: holder, Term: term, Duration: time.Duration(durNs)}
		if mk != "" || mv != "" {
			l.Metadata = map[string]string{mk: mv}
		}
		err := l.Validate()
		if err != nil {
			if !errors.Is(err, backendkit.ErrInvalidRecord) || !utf8.ValidString(err.Error()) {
				t.Fatalf("bad error %q", err)
			}
			return
		}
		for _, s := range []string{election, holder} {
			if !utf8.ValidString(s) || len(s) > 200 || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
				t.Fatalf("accepted unprintable or long text %q", s)
			}
		}
		if holder == "" || term == 0 || term > backendkit.MaxTerm || durNs <= 0 || time.Duration(durNs) > backendkit.MaxRecordDuration {
			t.Fatalf("accepted %+v", l)
		}
		if strings.ContainsFunc(mk+mv, unicode.IsControl) || !utf8.ValidString(mk+mv) || mk == "" && mv != "" {
			t.Fatalf("accepted metadata %q=%q", mk, mv)
		}
		// Whatever Lease.Validate accepts can be stored and read back.
		enc, err := backendkit.MarshalRecord(l)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		back, err := backendkit.UnmarshalRecord(enc)
		if err != nil {
			t.Fatalf("a lease Lease.Validate accepts does not survive encoding: %v (%s)", err, enc)
		}
		if back.Holder != l.Holder || back.Term != l.Term || back.Duration < l.Duration || back.Duration-l.Duration >= time.Millisecond {
			t.Fatalf("round trip %+v → %+v", l, back)
		}
	})
}

func FuzzDurationFromMillis(f *testing.F) {
	for _, ms := range []int64{0, 1, -1, math.MinInt64, math.MaxInt64, math.MaxInt64 / 1000, backendkit.MaxRecordDuration.Milliseconds(), backendkit.MaxRecordDuration.Milliseconds() + 1, 9223372036854} {
		f.Add(ms)
	}
	f.Fuzz(func(t *testing.T, ms int64) {
		d, err := backendkit.DurationFromMillis(ms)
		if ms <= 0 || ms > backendkit.MaxRecordDuration.Milliseconds() {
			if err == nil || !errors.Is(err, backendkit.ErrInvalidRecord) || d != 0 {
				t.Fatalf("DurationFromMillis(%d) = %v, %v; want ErrInvalidRecord", ms, d, err)
			}
			return
		}
		if err != nil || d <= 0 || d > backendkit.MaxRecordDuration || d.Milliseconds() != ms || d%time.Millisecond != 0 {
			t.Fatalf("DurationFromMillis(%d) = %v, %v", ms, d, err)
		}
	})
}

func FuzzNextTerm(f *testing.F) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, seed := range []struct {
		prev     uint64
		sec, nse int64
	}{
		{0, now.Unix(), 0}, {0, 0, 0}, {0, -1, 0}, {1, now.Unix(), 0},
		{uint64(now.UnixMicro()) + 5, now.Unix(), 0},
		{backendkit.MaxTerm - 1, now.Unix(), 0}, {backendkit.MaxTerm, now.Unix(), 0},
		{backendkit.MaxTerm + 1, 0, 0}, {math.MaxUint64, 0, 0},
		{5, math.MaxInt64, 999999999}, {5, math.MinInt64, 0}, {5, 9223372036854, 775807000},
	} {
		f.Add(seed.prev, seed.sec, seed.nse)
	}
	f.Fuzz(func(t *testing.T, prev uint64, sec, nsec int64) {
		at := time.Unix(sec, nsec)
		next, err := backendkit.NextTerm(prev, at)
		if prev >= backendkit.MaxTerm {
			if !errors.Is(err, backendkit.ErrTermExhausted) || next != 0 {
				t.Fatalf("NextTerm(%d) = %d, %v; want ErrTermExhausted", prev, next, err)
			}
			return
		}
		if err != nil || next <= prev || next > backendkit.MaxTerm {
			t.Fatalf("NextTerm(%d, %v) = %d, %v", prev, at, next, err)
		}
		if us := at.UnixMicro(); us > 0 && uint64(us) > prev && next < uint64(us) {
			t.Fatalf("NextTerm(%d, %v) = %d, below the clock %d", prev, at, next, us)
		}
	})
}

func FuzzRedactText(f *testing.F) {
	for _, s := range []string{
		"host=db password = 'hunter2 x' user=u", "postgres://u:p@ss w@h/db", `Get "https://a/b?sv=1&sig=abc%2F": EOF`,
		"BlobEndpoint=https://a/;SharedAccessSignature=sv=2020&sig=abcd", "PGPASSWORD=abcd", `{"password":"abcd"}`,
		"Authorization: Bearer abcd", "password\t=\t\"a\\\"b\"", "redis://:pw@[::1]:6379/0", "\xff\xfepassword=\xfd",
	} {
		f.Add(s, "abcd")
	}
	f.Fuzz(func(t *testing.T, s, secret string) {
		out := backendkit.RedactText(s, secret)
		// A given secret never survives, unless it could be rebuilt from
		// the replacement text itself.
		if len(secret) >= 4 && !strings.ContainsAny(secret, "x@?\"") && strings.Contains(out, secret) {
			t.Fatalf("RedactText(%q, %q) = %q keeps the secret", s, secret, out)
		}
		// Shaped secrets: a password given as key=value never survives.
		const pw = "S3CRETVALUE"
		for _, form := range []string{"password=" + pw, "password = '" + pw + "'", "sig=" + pw, "https://u:" + pw + "@h/"} {
			if out := backendkit.RedactText(s + " " + form); strings.Contains(out, pw) && !strings.Contains(s, pw) {
				t.Fatalf("RedactText(%q) = %q keeps %s", s+" "+form, out, pw)
			}
		}
	})
}

func TestNextTermEdges(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	us := uint64(now.UnixMicro())
	for _, tc := range []struct {
		prev uint64
		at   time.Time
		want uint64
		err  error
	}{
		{0, now, us, nil},             // seeded from the clock
		{0, time.Time{}, 1, nil},      // zero time: before the epoch
		{0, time.Unix(-5, 0), 1, nil}, // clock before the epoch
		{us + 10, now, us + 11, nil},  // the clock lags: prev+1
		{us, now, us + 1, nil},        // same microsecond
		{backendkit.MaxTerm - 1, now, backendkit.MaxTerm, nil},
		{backendkit.MaxTerm, now, 0, backendkit.ErrTermExhausted},
		{backendkit.MaxTerm + 1, now, 0, backendkit.ErrTermExhausted},
		{math.MaxUint64, now, 0, backendkit.ErrTermExhausted}, // never wraps to 0
	} {
		got, err := backendkit.NextTerm(tc.prev, tc.at)
		if got != tc.want || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("NextTerm(%d, %v) = %d, %v; want %d, %v", tc.prev, tc.at, got, err, tc.want, tc.err)
		}
	}
}

func TestDurationFromMillisEdges(t *testing.T) {
	maxMS := backendkit.MaxRecordDuration.Milliseconds()
	for ms, ok := range map[int64]bool{
		0: false, -1: false, math.MinInt64: false, math.MaxInt64: false, 9223372036854: false,
		1: true, maxMS: true, maxMS + 1: false, 15000: true,
	} {
		d, err := backendkit.DurationFromMillis(ms)
		if ok != (err == nil) || ok && d != time.Duration(ms)*time.Millisecond || !ok && !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Errorf("DurationFromMillis(%d) = %v, %v", ms, d, err)
		}
	}
}

func TestLeaseValidateEdges(t *testing.T) {
	good := fxelection.Lease{Election: "jobs", Holder: "a", Term: 1, Duration: time.Second}
	with := func(f func(*fxelection.Lease)) fxelection.Lease { l := good.Clone(); f(&l); return l }
	for name, tc := range map[string]struct {
		l  fxelection.Lease
		ok bool
	}{
		"good":                 {good, true},
		"empty election":       {with(func(l *fxelection.Lease) { l.Election = "" }), true},
		"unicode holder":       {with(func(l *fxelection.Lease) { l.Holder = "pod-é-世界" }), true},
		"max term":             {with(func(l *fxelection.Lease) { l.Term = backendkit.MaxTerm }), true},
		"max duration":         {with(func(l *fxelection.Lease) { l.Duration = backendkit.MaxRecordDuration }), true},
		"empty holder":         {with(func(l *fxelection.Lease) { l.Holder = "" }), false},
		"invalid utf8 holder":  {with(func(l *fxelection.Lease) { l.Holder = badHolder }), false},
		"escape holder":        {with(func(l *fxelection.Lease) { l.Holder = escHolder }), false},
		"bidi override holder": {with(func(l *fxelection.Lease) { l.Holder = "a\u202eb" }), false},
		"newline election":     {with(func(l *fxelection.Lease) { l.Election = "jobs\nforged 1" }), false},
		"long holder":          {with(func(l *fxelection.Lease) { l.Holder = strings.Repeat("h", 201) }), false},
		"term 0":               {with(func(l *fxelection.Lease) { l.Term = 0 }), false},
		"term > MaxInt64":      {with(func(l *fxelection.Lease) { l.Term = backendkit.MaxTerm + 1 }), false},
		"term max uint64":      {with(func(l *fxelection.Lease) { l.Term = math.MaxUint64 }), false},
		"zero duration":        {with(func(l *fxelection.Lease) { l.Duration = 0 }), false},
		"negative duration":    {with(func(l *fxelection.Lease) { l.Duration = math.MinInt64 }), false},
		"duration too long":    {with(func(l *fxelection.Lease) { l.Duration = backendkit.MaxRecordDuration + 1 }), false},
		"metadata escape":      {with(func(l *fxelection.Lease) { l.Metadata = map[string]string{"k": "\x1b[31m"} }), false},
		"metadata bad utf8":    {with(func(l *fxelection.Lease) { l.Metadata = map[string]string{"k\xff": "v"} }), false},
		"metadata empty key":   {with(func(l *fxelection.Lease) { l.Metadata = map[string]string{"": "v"} }), false},
		"metadata too big":     {with(func(l *fxelection.Lease) { l.Metadata = map[string]string{"k": strings.Repeat("v", 4096)} }), false},
		"metadata at limit":    {with(func(l *fxelection.Lease) { l.Metadata = map[string]string{"k": strings.Repeat("v", 4095)} }), true},
	} {
		err := tc.l.Validate()
		if tc.ok != (err == nil) || err != nil && !errors.Is(err, backendkit.ErrInvalidRecord) {
			t.Errorf("%s: Validate = %v", name, err)
		}
		if err != nil && (!utf8.ValidString(err.Error()) || strings.ContainsAny(err.Error(), "\x1b\n")) {
			t.Errorf("%s: error quotes the raw value: %q", name, err.Error())
		}
	}
}

func TestRedactTextEdges(t *testing.T) {
	const pw = "S3CRETVALUE"
	for _, in := range []string{
		"https://user:pa ss" + pw + "@host/x",         // unencoded space in the password
		"https://user:p@ss" + pw + "@host/x",          // unencoded "@" in the password
		"redis://default:" + pw + " x@host:6379",      // space, as typed in a flag
		"PGPASSWORD=" + pw,                            // environment variable
		"REDIS_PASSWORD = " + pw,                      //
		`{"password":"` + pw + `","user":"u"}`,        // JSON body in an SDK error
		`{"AccountKey": "` + pw + `"}`,                //
		"sig%3D" + pw,                                 // URL-encoded "="
		"password%3d" + pw,                            //
		"Authorization: SharedKey acct:" + pw,         // a dumped header
		"requirepass " + pw + " ignored; pass=" + pw,  // only the key=value form is known
		"api_key=" + pw + "&apikey=" + pw,             //
		"password='" + pw + "\\' still' user=u",       // escaped quote inside a quoted libpq value
		"host=db\npassword=" + pw + "\n",              // across lines
		"postgres://u:" + pw + "@h/db?password=" + pw, // both at once
	} {
		out := backendkit.RedactText(in)
		if in == "requirepass "+pw+" ignored; pass="+pw {
			if strings.Count(out, pw) != 1 {
				t.Errorf("RedactText(%q) = %q", in, out)
			}
			continue
		}
		if strings.Contains(out, pw) || strings.Contains(out, "ss"+pw[:3]) {
			t.Errorf("RedactText(%q) = %q: secret leaked", in, out)
		}
	}
	// Harmless text is left alone, including URLs without credentials.
	for _, in := range []string{
		"dial tcp 127.0.0.1:6379: connection refused",
		"https://host:443/path: 503 Service Unavailable",
		`lease "jobs" held by "a" (term 7)`,
		"password authentication failed for user \"u\"",
	} {
		if out := backendkit.RedactText(in); out != in {
			t.Errorf("RedactText(%q) = %q, want it unchanged", in, out)
		}
	}
}

// FuzzUnmarshalValue: any bytes give a validated lease that survives a
// round trip, or an error matching ErrInvalidRecord; never a panic.
func FuzzUnmarshalValue(f *testing.F) {
	good, _ := backendkit.MarshalValue(fxelection.Lease{Election: "jobs", Holder: "a", Term: 2, Duration: time.Second}, false)
	f.Add(good, "jobs")
	f.Add([]byte(`{"fxelection_value":1,"released":true,"write":"x","record":{"fxelection":1,"election":"jobs","holder":"a","term":3,"duration_ms":1000}}`), "")
	f.Add([]byte(`{"fxelection_value":1,"record":{"fxelection":1,"election":"j","holder":"\u001b[31m","term":3,"duration_ms":1}}`), "j")
	f.Add([]byte("\xff\xfe"), "")
	f.Fuzz(func(t *testing.T, b []byte, election string) {
		v, err := backendkit.UnmarshalValue(b, election)
		l, released := v.Lease, v.Released
		if err != nil {
			if !errors.Is(err, backendkit.ErrInvalidRecord) || !utf8.ValidString(err.Error()) {
				t.Fatalf("bad error %q", err)
			}
			return
		}
		if err := l.Validate(); err != nil || l.Election == "" || election != "" && l.Election != election {
			t.Fatalf("accepted %+v: %v", l, err)
		}
		enc, err := backendkit.MarshalValue(l, released)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		bv, err := backendkit.UnmarshalValue(enc, l.Election)
		back, rel2 := bv.Lease, bv.Released
		if err != nil || rel2 != released || !sameLease(back, l) || bv.Write == v.Write {
			t.Fatalf("round trip %+v → %+v (%v)", l, back, err)
		}
	})
}
