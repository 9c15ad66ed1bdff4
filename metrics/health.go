package metrics

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/fxelection/fxelection/fxelection"
)

// DefaultGrace is HealthOptions.Grace's default.
const DefaultGrace = 5 * time.Second

// HealthOptions configures the health handlers. The zero value means the
// documented defaults; its methods build the handlers.
type HealthOptions struct {
	// Grace is how long past LeaseDuration a leader may go without a
	// successful renewal before Liveness fails. Default: 5s.
	Grace time.Duration

	// MaxContactAge is how long ago the store may have last answered an
	// elector (any outcome but a store failure) for Readiness to pass.
	// Default: the elector's LeaseDuration.
	MaxContactAge time.Duration
}

// Liveness is HealthOptions{}.Liveness.
func Liveness(electors ...*fxelection.Elector) http.Handler {
	return HealthOptions{}.Liveness(electors...)
}

// Readiness is HealthOptions{}.Readiness.
func Readiness(electors ...*fxelection.Elector) http.Handler {
	return HealthOptions{}.Readiness(electors...)
}

// LeaderOnly is HealthOptions{}.LeaderOnly.
func LeaderOnly(electors ...*fxelection.Elector) http.Handler {
	return HealthOptions{}.LeaderOnly(electors...)
}

// Liveness returns a handler for a liveness probe. It answers 503 only when
// an elector's campaign loop is wedged, and restarting the process is the
// fix: the loop still holds a leadership (Status.Holding) whose last
// successful renewal started more than LeaseDuration+Grace ago (a normal
// loop steps down at RenewDeadline, well before that), or it has waited
// for one backend call (Status.InFlight) for more than LeaseDuration+Grace
// (the elector bounds every call by RenewDeadline, so the backend ignores
// its context). Everything else, including store outages, stopped electors
// and followers, and an unhealthy candidate (Config.Health.Check), passes:
// a restart would not help.
func (o HealthOptions) Liveness(electors ...*fxelection.Elector) http.Handler {
	return o.handler("liveness", electors, true, o.live)
}

// Readiness returns a handler for a "campaigning" readiness probe. It
// answers 200 while every elector's loop is running, passes its health
// check (Status.Healthy: always, without a Config.Health.Check) and its
// store answered within MaxContactAge; 503 before the store first answers,
// during a store outage longer than that, while an elector is unhealthy
// (it does not campaign; also before its first check passes), and once an
// elector has stopped. With no electors it answers 200.
func (o HealthOptions) Readiness(electors ...*fxelection.Elector) http.Handler {
	return o.handler("readiness", electors, true, o.ready)
}

// LeaderOnly returns a handler that answers 200 only while every elector
// leads (as Elector.IsLeader: the lease is held and the last successful
// renewal started less than RenewDeadline ago), for the readiness probe of
// active/passive Services that must send traffic to the leader alone. With
// no electors it answers 503.
func (o HealthOptions) LeaderOnly(electors ...*fxelection.Elector) http.Handler {
	return o.handler("leader", electors, false, o.leading)
}

// HealthReport is the JSON body the health handlers write.
type HealthReport struct {
	// Check is "liveness", "readiness" or "leader".
	Check string `json:"check"`
	// Status is "ok" (HTTP 200) or "failing" (HTTP 503).
	Status   string         `json:"status"`
	Electors []ElectorCheck `json:"electors"`
}

// ElectorCheck is one elector's part of a HealthReport.
type ElectorCheck struct {
	Election string `json:"election"`
	Identity string `json:"identity"`
	Backend  string `json:"backend"`
	// OK says whether this elector passes the check; Reason says why not.
	OK      bool   `json:"ok"`
	Reason  string `json:"reason,omitempty"`
	Running bool   `json:"running"`
	Leading bool   `json:"leading"`
	// Healthy is Status.Healthy, and HealthError the last failed health
	// check's error (Status.HealthError), if any.
	Healthy     bool   `json:"healthy"`
	HealthError string `json:"health_error,omitempty"`
	// Leader is the identity of the leader last seen, empty if unknown.
	Leader string `json:"leader,omitempty"`
	// Term is the leader's fencing term, 0 if unknown.
	Term uint64 `json:"term,omitempty"`
	// LastRenew is when the last successful acquire or renewal started,
	// while leading.
	LastRenew time.Time `json:"last_renew,omitzero"`
	// LastContact is when the store last answered.
	LastContact time.Time `json:"last_contact,omitzero"`
	// LastError is the last store failure's message, and LastErrorAt when
	// it happened. Store errors can name hosts and users (never
	// passwords, by the backends' contract); serve these handlers on an
	// internal port.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
}

// handler serves one check over electors. vacuous is the answer when there
// are none.
func (o HealthOptions) handler(check string, electors []*fxelection.Elector, vacuous bool,
	eval func(fxelection.Status, time.Time) (bool, string)) http.Handler {
	list := make([]*fxelection.Elector, 0, len(electors))
	for _, e := range electors {
		if e != nil {
			list = append(list, e)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		rep := HealthReport{Check: check, Electors: make([]ElectorCheck, 0, len(list))}
		ok := vacuous || len(list) > 0
		for _, e := range list {
			s := e.Status()
			c := report(s)
			c.OK, c.Reason = eval(s, time.Now())
			ok = ok && c.OK
			rep.Electors = append(rep.Electors, c)
		}
		code := http.StatusOK
		rep.Status = "ok"
		if !ok {
			code, rep.Status = http.StatusServiceUnavailable, "failing"
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(rep) // the client went away; nothing to do
	})
}

// report fills the descriptive part of an ElectorCheck.
func report(s fxelection.Status) ElectorCheck {
	c := ElectorCheck{
		Election: s.Election, Identity: s.Identity, Backend: s.Backend,
		Running: s.Running, Leading: s.Leading, Healthy: s.Healthy,
		LastRenew: s.LastRenew, LastContact: s.LastContact, LastErrorAt: s.LastErrorAt,
	}
	switch {
	case s.Leading:
		c.Leader, c.Term = s.Lease.Holder, s.Lease.Term
	case s.LeaderKnown:
		c.Leader, c.Term = s.Leader.Holder, s.Leader.Term
	}
	if s.LastError != nil {
		c.LastError = s.LastError.Error()
	}
	if s.HealthError != nil {
		c.HealthError = s.HealthError.Error()
	}
	return c
}

// live fails only a wedged loop.
func (o HealthOptions) live(s fxelection.Status, now time.Time) (bool, string) {
	grace := o.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	if s.Holding && !s.LastRenew.IsZero() {
		if since := now.Sub(s.LastRenew); since > s.LeaseDuration+grace {
			return false, fmt.Sprintf("leading but no successful renewal for %v (lease duration %v + grace %v)",
				since.Round(time.Millisecond), s.LeaseDuration, grace)
		}
	}
	if s.InFlight != "" && !s.InFlightSince.IsZero() {
		if since := now.Sub(s.InFlightSince); since > s.LeaseDuration+grace {
			return false, fmt.Sprintf("backend %s call running for %v (lease duration %v + grace %v)",
				s.InFlight, since.Round(time.Millisecond), s.LeaseDuration, grace)
		}
	}
	return true, ""
}

// ready passes a running elector whose store answered recently.
func (o HealthOptions) ready(s fxelection.Status, now time.Time) (bool, string) {
	if !s.Running {
		return false, "elector not running"
	}
	if !s.Healthy {
		if s.HealthError == nil {
			return false, "health check has not passed yet"
		}
		return false, "health check failing"
	}
	if s.LastContact.IsZero() {
		return false, "store has not answered yet"
	}
	limit := o.MaxContactAge
	if limit <= 0 {
		limit = s.LeaseDuration
	}
	if since := now.Sub(s.LastContact); since > limit {
		return false, fmt.Sprintf("store has not answered for %v (limit %v)", since.Round(time.Millisecond), limit)
	}
	return true, ""
}

// leading passes an elector that leads, by IsLeader's rule.
func (o HealthOptions) leading(s fxelection.Status, now time.Time) (bool, string) {
	switch {
	case !s.Leading:
		return false, "not leading"
	case !now.Before(s.LastRenew.Add(s.RenewDeadline)):
		return false, fmt.Sprintf("renewal overdue: last successful renewal %v ago (renew deadline %v)",
			now.Sub(s.LastRenew).Round(time.Millisecond), s.RenewDeadline)
	}
	return true, ""
}
