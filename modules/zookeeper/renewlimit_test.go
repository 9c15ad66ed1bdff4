package zklease

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/config"
	"github.com/fxelection/fxelection/fxelection/lock"
	"github.com/fxelection/fxelection/fxelection/pool"
)

// TestRenewDeadlineBelowSessionTimeout: ZooKeeper ends a lease when the
// session expires, so an elector (alone, in a group, a pool's shard) and a
// Locker on a Backend whose Options state the session timeout refuse a
// RenewDeadline that is not shorter, with an error naming both settings
// and quoting neither value; a shorter one, and any on a Backend that
// does not state it, is accepted.
func TestRenewDeadlineBelowSessionTimeout(t *testing.T) {
	conn := dial(t, testSession, server(t)) // one that answers: see TestConfigModuleDefaults
	const session = 4 * time.Second
	b, err := New(conn, Options{SessionTimeout: session})
	if err != nil {
		t.Fatal(err)
	}
	unstated, err := New(conn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	timing := func(renew time.Duration) fxelection.Config {
		return fxelection.Config{Name: "e", Identity: "a", Timing: fxelection.Timing{LeaseDuration: 2 * renew, RenewDeadline: renew, RetryPeriod: 500 * time.Millisecond}}
	}
	refused := func(what string, err error) {
		t.Helper()
		var ce *fxelection.ConfigError
		switch {
		case !errors.As(err, &ce) || ce.Field != "RenewDeadline":
			t.Errorf("%s: %v, want a ConfigError for RenewDeadline", what, err)
		case !strings.Contains(err.Error(), "Options.SessionTimeout") || !strings.Contains(err.Error(), "session_timeout"):
			t.Errorf("%s: %q does not name the session timeout", what, err)
		case strings.Contains(err.Error(), session.String()):
			t.Errorf("%s: %q quotes a value", what, err)
		}
	}
	for _, renew := range []time.Duration{session, session + time.Millisecond, 10 * time.Second} {
		_, err := fxelection.New(timing(renew), b)
		refused("New with RenewDeadline "+renew.String(), err)
		g, err := fxelection.NewGroup(b)
		if err != nil {
			t.Fatal(err)
		}
		_, err = g.New(timing(renew))
		refused("Group.New", err)
		c := timing(renew)
		_, err = pool.New(pool.Config{Name: "p", Shards: []string{"s"}, Timing: fxelection.Timing{LeaseDuration: c.LeaseDuration, RenewDeadline: renew, RetryPeriod: c.RetryPeriod}}, b)
		refused("pool.New", err)
		_, err = lock.New(b, lock.Options{Timing: fxelection.Timing{LeaseDuration: c.LeaseDuration, RenewDeadline: renew, RetryPeriod: c.RetryPeriod}})
		refused("lock.New", err)
		if _, err := fxelection.New(timing(renew), unstated); err != nil {
			t.Errorf("New on a Backend without SessionTimeout: %v", err)
		}
	}
	// The defaults (RenewDeadline 10s) refused under a 4s session.
	_, err = fxelection.New(fxelection.Config{Name: "e"}, b)
	refused("New with the default RenewDeadline", err)
	_, err = lock.New(b, lock.Options{})
	refused("lock.New with the default RenewDeadline", err)
	if _, err := fxelection.New(timing(session-time.Millisecond), b); err != nil {
		t.Errorf("New with RenewDeadline just below the session timeout: %v", err)
	}
	if _, err := lock.New(b, lock.Options{Timing: fxelection.Timing{LeaseDuration: session, RenewDeadline: session / 2, RetryPeriod: 500 * time.Millisecond}}); err != nil {
		t.Errorf("lock.New with RenewDeadline below the session timeout: %v", err)
	}
	for _, bad := range []time.Duration{time.Millisecond, 11 * time.Minute, -time.Second} {
		if _, err := New(conn, Options{SessionTimeout: bad}); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "Options.SessionTimeout") || strings.Contains(err.Error(), bad.String()) {
			t.Errorf("New with SessionTimeout %v: %v, want ErrInvalidOptions naming Options.SessionTimeout", bad, err)
		}
	}
}

// TestDocumentRenewDeadlineBelowSessionTimeout: a configuration document
// whose election, pool or locker has a renew_deadline (stated or the
// default 10s) not shorter than its ZooKeeper module's session_timeout
// (stated or the default 15s) is refused by validation, before anything
// is provisioned, at the renew_deadline's path, naming session_timeout
// and quoting no value.
func TestDocumentRenewDeadlineBelowSessionTimeout(t *testing.T) {
	zkm := func(session string) string {
		m := `{"module": "fxelection.backends.zookeeper", "servers": ["h:1"]`
		if session != "" {
			m += `, "session_timeout": "` + session + `"`
		}
		return m + `}`
	}
	timing := func(renew string) string {
		if renew == "" {
			return ""
		}
		return `"lease_duration": "30s", "renew_deadline": "` + renew + `", "retry_period": "1s", `
	}
	for _, tc := range []struct {
		name, doc, at string // at: the path of the refusal, "" when accepted
	}{
		{"election equal", `{"backends": {"zk": ` + zkm("4s") + `}, "elections": [{"name": "e", ` + timing("4s") + `"backend": "zk"}]}`, "elections[0].renew_deadline"},
		{"election longer, inline", `{"elections": [{"name": "e", ` + timing("5s") + `"backend": ` + zkm("4s") + `}]}`, "elections[0].renew_deadline"},
		{"election default renew", `{"elections": [{"name": "e", "backend": ` + zkm("10s") + `}]}`, "elections[0].renew_deadline"},
		{"pool", `{"backends": {"zk": ` + zkm("4s") + `}, "pools": [{"name": "p", "shard_count": 2, ` + timing("6s") + `"backend": "zk"}]}`, "pools[0].renew_deadline"},
		{"locker", `{"backends": {"zk": ` + zkm("4s") + `}, "lockers": [{"name": "l", ` + timing("4s") + `"backend": "zk"}]}`, "lockers[0].renew_deadline"},
		{"election shorter", `{"backends": {"zk": ` + zkm("4s") + `}, "elections": [{"name": "e", ` + timing("3500ms") + `"backend": "zk"}]}`, ""},
		{"defaults", `{"elections": [{"name": "e", "backend": ` + zkm("") + `}]}`, ""},
	} {
		_, err := config.Parse([]byte(tc.doc))
		switch {
		case tc.at == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.at == "":
		case !errors.Is(err, config.ErrInvalidValue) || !strings.Contains(err.Error(), tc.at) || !strings.Contains(err.Error(), "session_timeout"):
			t.Errorf("%s: %v, want ErrInvalidValue at %s naming session_timeout", tc.name, err, tc.at)
		case strings.Contains(err.Error(), "4s") || strings.Contains(err.Error(), "10s"):
			t.Errorf("%s: %q quotes a value", tc.name, err)
		}
	}
}
