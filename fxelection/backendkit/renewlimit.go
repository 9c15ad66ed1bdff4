package backendkit

import "time"

// RenewDeadlineLimiter is the optional capability of a backend whose store
// ends a holder's lease by itself a fixed time after it last heard from the
// holder's client, whatever the lease's Duration: ZooKeeper deletes a
// session's ephemeral znodes when the session expires. A leader stops
// believing RenewDeadline after the start of its last successful renewal;
// the store hears from it no earlier than that start, so the leader stops
// believing before the store can end its lease only if RenewDeadline is
// shorter than the limit. An Elector (fxelection.New, Group.New, and so
// every pool shard), a lock.Locker and a configuration document refuse a
// RenewDeadline that is not, with RenewDeadlineProblem. The configuration
// module of such a backend implements it too, from its settings, so that
// a document is refused before anything is provisioned.
type RenewDeadlineLimiter interface {
	// RenewDeadlineLimit returns the time after which the store may end a
	// lease on its own, and the name of the setting it comes from as the
	// caller knows it ("Options.SessionTimeout", "session_timeout"); a
	// limit of 0 means unknown, and nothing is checked.
	RenewDeadlineLimit() (limit time.Duration, setting string)
}

// RenewDeadlineProblem says what is wrong with renewDeadline (the
// effective one, defaults filled in) on b, a Backend or a configuration
// module: "" when b is not a RenewDeadlineLimiter, states no limit, or
// renewDeadline is shorter than the limit. The text names the backend's
// setting and quotes no value.
func RenewDeadlineProblem(b any, renewDeadline time.Duration) string {
	l, ok := b.(RenewDeadlineLimiter)
	if !ok {
		return ""
	}
	limit, setting := l.RenewDeadlineLimit()
	if limit <= 0 || renewDeadline < limit {
		return ""
	}
	return "must be shorter than the backend's " + setting + " (the store ends the lease by itself after it, so a leader must stop believing first)"
}
