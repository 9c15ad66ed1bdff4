// Package kubelease is the Kubernetes backend of fxelection: each election
// is a coordination.k8s.io/v1 Lease object, written as client-go's
// LeaseLock writes it, so that fxelection candidates and client-go
// leaderelection.LeaderElector instances on the same Lease never both
// lead. It is its own Go module (github.com/fxelection/fxelection/modules/kubernetes),
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
//     fallback.
//   - Failover: a follower first sees a crashed leader's last write at its
//     next poll (up to 1.2 × RetryPeriod after the write), then waits
//     LeaseDuration on its own clock: within LeaseDuration + 2.4 ×
//     RetryPeriod of the leader's last renewal, plus round trips.
//   - Hand-over: Backend implements backendkit.Transferer: the caller's
//     lease replaced by the successor's record in one update on the
//     resourceVersion read.
//   - Edits from outside: a holder is matched on its record's per-write
//     nonce, not on the resourceVersion, so a label or another annotation
//     added to a held Lease does not cost the lease; every write is still
//     an update on the resourceVersion just read. A Lease deleted while
//     held is lost at the holder's next renewal; the next term is higher.
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
// renewTime (now, at every write) and leaseTransitions. fxelection's own
// record (holder, incarnation, term, metadata, exact duration, per-write
// nonce) is the annotation fxelection.io/record. client-go keeps the
// annotations it finds when it takes a Lease over, so the spec decides who
// holds it: a holder the record does not name is a client-go elector, seen
// with the record's term plus one and the spec's duration.
//
// To share an election with client-go electors, give it a name that is a
// DNS-1123 label (LeaseName is then the name itself), use the same Lease
// duration on both sides (client-go waits its own configured
// LeaseDuration, not the Lease's leaseDurationSeconds), distinct
// identities, and a RenewDeadline on the client-go side no longer than
// fxelection's rules allow (fxelection's Config.Validate). client-go's
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
// Forbidden error).
//
// # Configuration documents
//
// The module fxelection.backends.kubernetes (ConfigModule) makes its own
// client: in-cluster by default, or from a kubeconfig (kubeconfig,
// context), or from server and token (a secret, never in errors), with
// namespace, qps (default 50), burst (default 100), max_in_flight and
// push.
package kubelease
