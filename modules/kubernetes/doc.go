// Package kubelease is the Kubernetes backend of fxelection: each election
// is a coordination.k8s.io/v1 Lease object, written as client-go's
// LeaseLock writes it, so that fxelection candidates and client-go
// leaderelection.LeaderElector instances on the same Lease never both
// lead, at any RetryPeriod on either side. The lease algorithm is the one
// every compare-and-swap store shares (backendkit/caslease); this package
// maps its records onto Lease objects. It is its own Go module (github.com/fxelection/fxelection/modules/kubernetes),
// so client-go's dependencies weigh only on its users. Built and tested on
// k8s.io/client-go v0.37.2 against a real kube-apiserver v1.37.2; the
// Lease API is coordination.k8s.io/v1, served since Kubernetes 1.14.
//
// # Guarantees
//
//   - Expiry: observed time, as client-go decides. A candidate takes over
//     another holder's Lease only after it has seen the same write (the
//     resourceVersion and, for fxelection holders, the record's per-write
//     nonce; for client-go holders, the renewTime) unchanged for the
//     lease's duration on its own clock. The holder's renewTime is its
//     clock, never compared with ours.
//   - Fencing term: in fxelection's record, in the annotation
//     fxelection.io/record: the larger of the previous term plus one and
//     the current time in microseconds (backendkit.NextTerm), so terms rise
//     across holders, incarnations, and a Lease deleted and created again
//     (where client-go's leaseTransitions, an int32, starts again).
//     leaseTransitions is kept as client-go keeps it: it counts changes of
//     holder.
//   - Push wake-up: one watch per Backend on the namespace's Leases wakes
//     followers when a Lease is released (by either kind of elector),
//     deleted or handed to another holder; the watch restarts with backoff
//     when the API server ends it (timeouts, 410 Gone). Polling is the
//     fallback. A watch the API server refuses (a Role without watch) is
//     reported once: see Permissions.
//   - Failover: a follower first sees a crashed leader's last write at its
//     next poll (up to 1.2 × RetryPeriod after the write), then waits
//     LeaseDuration on its own clock: within LeaseDuration + 2.4 ×
//     RetryPeriod of the leader's last renewal, plus round trips.
//   - Hand-over: Backend implements backendkit.Transferer: the caller's
//     lease replaced by the successor's record in one update on the
//     resourceVersion read.
//   - Edits from outside: Renew, Release and Transfer match the holder's
//     leadership (holder, incarnation and term in the spec and the
//     record), not the resourceVersion, so a label or another annotation
//     added to a held Lease does not cost the lease, and a renewal the
//     client gave up on but the API server applied is still released;
//     every write is still an update on the resourceVersion just read.
//   - A Lease deleted from outside while held: the backend never deletes a
//     Lease (release writes an empty holder, as client-go's does), so a
//     Lease absent after a read found it held was deleted by someone else,
//     and its holder believes until its next renewal finds it gone (it
//     then steps down, ReasonLost, and may take it back at once with a
//     higher term). A candidate whose Backend read the Lease held counts
//     the absence as that lease, observed from its first read of the
//     absence like a write, and creates the Lease only once that lease
//     could have expired: after its duration on the candidate's own
//     clock, with a higher term. A candidate that never read it held (a
//     Backend created after the delete) cannot know and creates it at
//     once; the old holder's writes are then fenced by the term (clock-
//     seeded, above the deleted one), not excluded in time.
//   - What it cannot promise: the API server's etcd must not lose
//     acknowledged writes; an election whose annotation holds something else than fxelection's
//     record is blocked (ErrInvalidRecord) until an operator fixes or
//     deletes the Lease.
//
// # Layout and compatibility with client-go
//
// The Lease of election is named LeaseName(election) in Options.Namespace.
// The spec is written as client-go writes it: holderIdentity (empty once
// released), leaseDurationSeconds (the lease's duration in whole seconds,
// rounded up; 1 once released, as client-go releases), acquireTime,
// renewTime (now, at every write; never behind the same holder's previous
// write) and leaseTransitions.
//
// Every write changes what a client-go follower compares. client-go
// restarts its observed time only when the Lease's spec, marshalled as
// resourcelock.LeaderElectionRecord with both times in whole seconds,
// differs from the one it last read; a holder that renews several times
// a second would otherwise write records it cannot tell apart, and its
// observed time would start up to a second before the holder's last
// renewal. So a write that would read as the previous one (same holder,
// duration, transitions and renewTime second) sets acquireTime one second
// before the previous write's: within a second, acquireTime counts down
// from the acquisition, one second per write, and returns to it in the
// next (it is off by at most the renewals per second, minus one; the
// exact acquisition is in the annotation). fxelection's own
// record (holder, incarnation, term, metadata, exact duration, per-write
// nonce) is the annotation fxelection.io/record. client-go keeps the
// annotations it finds when it takes a Lease over, so the spec decides who
// holds it: a holder the record does not name is a client-go elector, seen
// with the record's term plus one and the spec's duration.
//
// To share an election with client-go electors, give it a name that is a
// DNS-1123 label (LeaseName is then the name itself), distinct
// identities, and a RenewDeadline on the client-go side no longer than
// fxelection's rules allow (fxelection's Config.Validate). Each side
// waits the duration the holder wrote: client-go (v0.37) reads the
// Lease's leaseDurationSeconds, fxelection's LeaseDuration rounded up, and
// fxelection reads a client-go holder's, which client-go writes as its
// LeaseDuration truncated to whole seconds (so give client-go a whole
// number of seconds). client-go's
// electors do not use the term: fence writes only from fxelection holders.
//
// # Costs
//
// Acquire, Renew, Release and Transfer are a get and an update (or a
// create): two API requests; Get is one. A process with N elections makes
// about 2N requests per RetryPeriod while it leads them all, and N per
// RetryPeriod as a follower, so set the client's rate limit (rest.Config
// QPS and Burst; the config module defaults to 50 and 100, client-go to 5
// and 10) for the number of elections. Options.MaxInFlight bounds the
// requests in flight per Backend (default 32). The backend has no batch
// operations: a Lease update is one object per request.
//
// # Permissions
//
// A Role in the namespace with get, create, update and watch on leases in
// the coordination.k8s.io group. A missing
// permission is a store failure whose message names it (the API server's
// Forbidden error). Without watch, the elections still work but push
// wake-up is off (a hand-over waits for the follower's next retry
// instead of milliseconds), and the refusal is reported once per Backend
// while it lasts: a warning in Options.Logger, and an error matching
// ErrWatchRefused that wraps the Forbidden error, returned by the first
// Acquire that would have answered that another candidate holds the
// lease (so a follower's elector sees it as a failed operation, with its
// OnError and log, and no leadership is lost or delayed for it).
//
// # Configuration documents
//
// The module fxelection.backends.kubernetes (ConfigModule) makes its own
// client: in-cluster by default, or from a kubeconfig (kubeconfig,
// context), or from server and token (a secret, never in errors), with
// namespace, qps (default 50), burst (default 100), max_in_flight and
// push.
package kubelease
