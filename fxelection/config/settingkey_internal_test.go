package config

import (
	"github.com/fxelection/fxelection/fxelection/internal/settings"

	"reflect"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection"
)

// TestSettingKeysFromTags: every setting of fxelection.Config (Timing,
// Health and Candidacy included) that is not tagged "-" is a key of an
// election, found from the json tags with no list kept here, and an error
// naming it by its Go path (as *fxelection.ConfigError does) points at
// that key; a field added to Config is covered without an edit.
func TestSettingKeysFromTags(t *testing.T) {
	n := 0
	var walk func(typ reflect.Type, goPrefix string)
	walk = func(typ reflect.Type, goPrefix string) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case !f.IsExported() || tag == "-" && f.Type.Kind() != reflect.Struct:
				continue
			case f.Type.Kind() == reflect.Struct && f.Type.PkgPath() == typ.PkgPath() && f.Type.Name() != "Callbacks":
				// Timing (embedded), Health, Candidacy: their fields are
				// named through the group ("Health.Interval").
				prefix := goPrefix
				if !f.Anonymous {
					prefix += f.Name + "."
				}
				walk(f.Type, prefix)
				continue
			case tag == "-":
				continue
			}
			n++
			path := goPrefix + f.Name
			key, ok := settingKey(electionDocType, path)
			if !ok || !strings.HasSuffix("."+key, "."+tag) {
				t.Errorf("Config field %s: document key %q (found %v), want one ending in its tag %q", path, key, ok, tag)
			}
			if _, ok := settings.Of(electionDocType).ByKey[key]; !ok && !strings.Contains(key, ".") {
				t.Errorf("Config field %s: key %q is not an election setting", path, key)
			}
		}
	}
	walk(reflect.TypeFor[fxelection.Config](), "")
	if n < 15 {
		t.Fatalf("only %d settings found", n)
	}
	for _, tc := range []struct {
		typ        reflect.Type
		field, key string
	}{
		{electionDocType, "Name", "name"},
		{electionDocType, "RenewDeadline", "renew_deadline"},
		{electionDocType, "Health.Interval", "health.interval"},
		{electionDocType, "Health.Threshold", "health.threshold"},
		{electionDocType, "Candidacy.PriorityGrace", "priority_grace"},
		{electionDocType, "Candidacy.MinTenure", "min_tenure"},
		{poolDocType, "MaxWorkers", "max_workers"},
		{poolDocType, "Shards", "shards"},
		{poolDocType, "RetryPeriod", "retry_period"},
		{lockerDocType, "Identity", "identity"},
		{lockerDocType, "MaxBackoff", "max_backoff"},
	} {
		if key, ok := settingKey(tc.typ, tc.field); !ok || key != tc.key {
			t.Errorf("%s field %s: key %q (%v), want %q", tc.typ.Name(), tc.field, key, ok, tc.key)
		}
	}
	for _, field := range []string{"Callbacks", "Logger", "Candidacy.Defer", "Health.Check", "Nope", ""} {
		if key, ok := settingKey(electionDocType, field); ok {
			t.Errorf("field %q has key %q, want none", field, key)
		}
	}
}

// TestMarshalLoads: a document printed (RedactedJSON) loads again with
// the same settings: durations come out as strings Unmarshal takes.
func TestMarshalLoads(t *testing.T) {
	raw := `{"elections": [{"name": "a", "lease_duration": "30s", "renew_deadline": "20s", "retry_period": "1.5s",
	  "max_backoff": "1m", "stop_timeout": "5s", "priority": 2, "priority_grace": "3s", "preempt": true, "min_tenure": "1m",
	  "health": {"command": ["true"], "interval": "2s", "threshold": 4}, "metadata": {"k": "v"},
	  "backend": {"module": "fxelection.backends.memory"}}],
	 "pools": [{"name": "p", "shard_count": 2, "lease_duration": "30s", "renew_deadline": "20s", "retry_period": "1.5s", "backend": {"module": "fxelection.backends.memory"}}],
	 "lockers": [{"name": "l", "max_backoff": "40s", "backend": {"module": "fxelection.backends.memory"}}]}`
	d, err := Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.RedactedJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"lease_duration": "30s"`) || !strings.Contains(string(out), `"interval": "2s"`) {
		t.Errorf("durations not written as strings:\n%s", out)
	}
	d2, err := Parse(out)
	if err != nil {
		t.Fatalf("printed document does not load: %v\n%s", err, out)
	}
	a, b := d.Elections[0].ElectorConfig(), d2.Elections[0].ElectorConfig()
	a.Health.Check, b.Health.Check = nil, nil
	if !reflect.DeepEqual(a, b) || d.Pools[0].Config().Timing != d2.Pools[0].Config().Timing ||
		d.Lockers[0].Options() != d2.Lockers[0].Options() {
		t.Errorf("settings changed by printing:\n%+v\n%+v", a, b)
	}
}
