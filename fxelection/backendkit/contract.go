package backendkit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"
)

// Lease is one election's lease record as a backend stores it: who holds it,
// what they advertise, the fencing term and the store's version of the record.
//
// A Lease returned by Acquire or Renew is the caller's proof of holding; pass
// it back unchanged to Renew and Release. A Lease returned by Get or carried
// in a HeldError describes the current holder as the store reported it.
type Lease struct {
	// Election is the election's name (Config.Name).
	Election string
	// Holder is the identity of the candidate holding the lease.
	Holder string
	// Metadata is what the holder advertises to followers (Config.Metadata).
	// Treat it as read-only.
	Metadata map[string]string
	// Term is the fencing token: it names one leadership of one
	// incarnation. It strictly increases every time the lease changes hands,
	// passes to a new incarnation of the same identity, or is released or
	// expires and is taken again, and it stays the same while one holder
	// renews. Guard external writes with it: a store that rejects writes
	// carrying a term lower than one it has seen cannot be corrupted by a
	// deposed leader that still believes it leads.
	Term uint64
	// Incarnation is the incarnation token (AcquireRequest.Incarnation) of
	// the candidate that acquired this term, where the backend records it;
	// empty otherwise. Backends keep it unchanged across renewals.
	Incarnation string
	// Version is the backend's opaque version of the record (an S3 ETag, an
	// Azure lease id, a cache CAS token, …). The core never interprets it.
	Version string
	// Duration is the lease duration the holder asked for.
	Duration time.Duration
	// AcquiredAt is when the holder acquired this term, by the store's clock
	// where the store reports it; zero if unknown.
	AcquiredAt time.Time
	// ExpiresAt is when the lease expires by the store's clock, where the
	// store knows it; zero if unknown (observed-time backends). It is for
	// display only: comparing it with a local clock is subject to clock skew,
	// which is why the elector never does.
	ExpiresAt time.Time
}

// Clone returns a copy of l whose Metadata map is not shared.
func (l Lease) Clone() Lease {
	l.Metadata = maps.Clone(l.Metadata)
	return l
}

// IsZero reports whether l is the zero Lease (no holder).
func (l Lease) IsZero() bool { return l.Holder == "" && l.Term == 0 }

// AcquireRequest asks a backend to take an election's lease.
type AcquireRequest struct {
	// Election is the election's name.
	Election string
	// Identity is the candidate asking for the lease.
	Identity string
	// Metadata is stored with the lease and shown to followers.
	Metadata map[string]string
	// Duration is how long the lease lasts without a renewal.
	Duration time.Duration
	// Incarnation names the requesting candidate's current run: an Elector
	// sends a random token (NewIncarnation) that is new for every Elector
	// and again after every leadership it announced has ended. A backend
	// keeps the term on a re-acquisition only when the live record's holder
	// is Identity and its incarnation is this one (a retry after a lost
	// response); the same Identity with another incarnation (a restarted
	// process, or the same process after a step-down) still takes the lease
	// at once, but with a strictly higher term, so that a paused predecessor
	// and its successor never write with one term.
	//
	// Empty means the request names no incarnation: a holder with Identity
	// keeps its term whatever the record's incarnation. The Elector's
	// hand-over hint names none, so that a successor that holds the lease
	// already keeps its term; a candidate that names none cannot be fenced
	// off its restarted successor. At most MaxIncarnationLen bytes of
	// ASCII letters, digits, '-', '_' and '.'.
	Incarnation string
}

// Validate checks r before a backend writes it: Election, Identity and
// Metadata follow the text rules that Config.Validate and Lease.Validate
// apply (one function for all three); Duration is in
// (0, MaxRecordDuration]; Incarnation, when set, is a valid token. So a
// record written from a request that passes is never refused by
// Lease.Validate when read back. Backends call it before writing. The
// error has the form "fxelection: <Field>: <what is wrong>" and quotes no
// value but a metadata key that is itself valid text.
func (r AcquireRequest) Validate() error {
	if field, problem := checkTexts(requestFields, r.Election, r.Identity, r.Metadata); field != "" {
		return fmt.Errorf("fxelection: %s: %s", field, problem)
	}
	switch {
	case r.Duration <= 0:
		return fmt.Errorf("fxelection: Duration: must be positive (is %v)", r.Duration)
	case r.Duration > MaxRecordDuration:
		return fmt.Errorf("fxelection: Duration: must be at most %v (is %v)", MaxRecordDuration, r.Duration)
	}
	if r.Incarnation != "" && !validIncarnation(r.Incarnation) {
		return fmt.Errorf("fxelection: Incarnation: %s", incarnationProblem)
	}
	return nil
}

// Continues reports whether cur, the live lease record of r.Election, is
// the requester's own leadership, which an Acquire therefore continues with
// cur's term: the same holder and, when r names an incarnation, the same
// incarnation. It is the rule every backend applies (in its own query
// language where the decision is made inside the store).
func (r AcquireRequest) Continues(cur Lease) bool {
	return cur.Holder == r.Identity && (r.Incarnation == "" || cur.Incarnation == r.Incarnation)
}

// Backend stores one lease record per election and changes it atomically.
// The Elector owns all timing (when to acquire, renew, retry or give up),
// events and metrics; a backend is storage operations, plus what its store
// needs underneath them: a push listener for Notifier (Redis, PostgreSQL,
// etcd, NATS, the in-memory backend), a wait within one operation (Azure
// Blob polls while a lease is being broken). The conformance suite in
// package electiontest checks every rule below.
//
// Errors: a refused Acquire returns a *HeldError (matching ErrLeaseHeld) that
// carries the current holder; a refused Renew returns an error matching
// ErrLeaseLost; Get on an election nobody holds returns ErrNoLease; a record
// the backend cannot decode returns an error matching ErrInvalidRecord. Any
// other error is a store failure (wrap the SDK error with %w): only those
// drive the elector's backoff and error events. Every method honours ctx
// and returns promptly once it is done.
//
// Expiry follows one of two models. Server-authoritative: the store expires
// the lease by its own clock (Redis PX, Postgres now(), etcd and Azure
// leases, memcached TTL). Observed time, for stores with compare-and-swap but
// no TTL (S3, NATS KV): a candidate may take over a record only after it has
// seen the same version unchanged for the record's full Duration on its own
// monotonic clock, then writes with a compare-and-swap on that version
// (ExpiryTracker). Either way no client clock is compared with
// another's. Each backend's package documentation says how its store maps
// onto this contract, and the README's guarantees table what it cannot
// promise.
//
// Backends that can tell followers about a release implement Notifier too;
// backends that can renew or acquire many leases in one round trip
// implement BatchRenewer and BatchAcquirer.
type Backend interface {
	// Acquire takes the lease for req.Election as req.Identity if it is free,
	// expired, or already held by req.Identity (so a candidate that crashed
	// and restarted with the same identity gets it back at once). It takes
	// effect atomically: one script, statement or transaction, or, where a
	// backend needs several requests (S3, Azure Blob), a compare-and-swap on
	// the version it read as the one deciding write, so that two candidates
	// never both succeed. The term stays the same only when req continues
	// the live record's leadership (req.Continues: same identity and
	// incarnation); in every other case — a change of holder, a new
	// incarnation of the holder, a lease that was released or expired — it
	// becomes strictly greater than any term the election had. Held by
	// someone else: a *HeldError with the current holder. The returned lease
	// carries req.Incarnation where the backend records it.
	Acquire(ctx context.Context, req AcquireRequest) (Lease, error)

	// Renew extends lease (as returned by Acquire or a previous Renew) by
	// lease.Duration from now. It succeeds only while the caller still holds
	// that term; it never resurrects a lease someone else took or one that
	// expired and was deleted. Otherwise it returns an error matching
	// ErrLeaseLost. The returned lease has the same Term.
	Renew(ctx context.Context, lease Lease) (Lease, error)

	// Release ends the caller's own lease so another candidate can take it
	// at once. It never removes someone else's lease; releasing a lease that
	// is no longer ours (expired, taken over, already released) returns nil.
	// The election's term survives: the next holder gets a higher one. A
	// backend should also match what the caller last got from the store
	// (version or expiry), so that a release delayed from an earlier
	// incarnation of the same identity cannot free the lease a later one
	// re-acquired; the README's guarantees table says which backends do.
	Release(ctx context.Context, lease Lease) error

	// Get returns the current holder without changing anything, or
	// ErrNoLease if nobody holds the lease.
	Get(ctx context.Context, election string) (Lease, error)
}

// Notifier is the optional push wake-up capability: a backend that can learn
// that an election's lease was released or changed (Redis pub/sub, Postgres
// LISTEN/NOTIFY, etcd and NATS KV watches, the in-memory backend) tells
// waiting candidates at once, so
// they acquire within milliseconds instead of at their next retry.
type Notifier interface {
	// Subscribe calls wake whenever election's lease may have become free.
	// wake must not block; calls may be coalesced, spurious or missed (the
	// elector keeps polling), and may come from any goroutine. cancel stops
	// the calls; after it returns, wake is not called again.
	Subscribe(election string, wake func()) (cancel func())
}

// NamedBackend is optionally implemented by a backend to name its kind
// ("redis", "postgres", …) in metrics and logs.
type NamedBackend interface {
	// BackendName returns a short, constant name for the kind of store.
	BackendName() string
}

// Name returns b's name if it implements NamedBackend, else "custom".
func Name(b Backend) string {
	if n, ok := b.(NamedBackend); ok {
		return n.BackendName()
	}
	return "custom"
}

var (
	// ErrLeaseHeld means another candidate holds the lease. Errors matching it
	// are *HeldError values carrying the holder.
	ErrLeaseHeld = errors.New("fxelection: lease held by another candidate")
	// ErrLeaseLost means a renewal found the lease no longer ours: it
	// expired, was released, or was taken over.
	ErrLeaseLost = errors.New("fxelection: lease lost")
	// ErrNoLease means nobody holds the election's lease.
	ErrNoLease = errors.New("fxelection: no lease")
	// ErrInvalidRecord means the stored record could not be decoded (written
	// by something else, or a format this version does not know). It counts
	// as a store failure; the record is never taken over before it expires.
	ErrInvalidRecord = errors.New("fxelection: invalid lease record")
)

// HeldError is returned by Backend.Acquire when another candidate holds the
// lease. errors.Is(err, ErrLeaseHeld) is true for it.
type HeldError struct {
	// Holder is the current lease as the store reported it.
	Holder Lease
}

// Error implements error.
func (e *HeldError) Error() string {
	return fmt.Sprintf("fxelection: lease %q held by %q (term %d)", e.Holder.Election, e.Holder.Holder, e.Holder.Term)
}

// Is makes errors.Is(err, ErrLeaseHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrLeaseHeld }

// IsStoreFailure reports whether err is a store failure rather than one of
// the contract's expected outcomes (ErrLeaseHeld, ErrLeaseLost, ErrNoLease).
func IsStoreFailure(err error) bool {
	return err != nil && !errors.Is(err, ErrLeaseHeld) && !errors.Is(err, ErrLeaseLost) && !errors.Is(err, ErrNoLease)
}

// BatchRenewer is an optional Backend capability for processes that run
// many elections on one backend: renewing many leases in one round trip to
// the store (Redis: a pipeline of the renew script; Postgres: one UPDATE
// over many rows; the in-memory backend: one lock).
//
// Electors sharing a backend value that implements it use it on their own:
// no configuration. Their renewals are scheduled on a grid of RetryPeriod/64
// slots, rounded down (a renewal may come up to one slot early, never
// late), so that renewals falling due in the same slot go to the store
// together; a shared batcher, whose goroutine runs only while renewals
// wait, sends them in batches of at most MaxRenewBatch. The elector's
// timing rules are unchanged: belief is still measured from the moment it
// asked for the renewal, and every renewal is still bounded by its renew
// deadline (an elector whose deadline passes while its batch is in flight
// stops waiting at once, as with Renew).
//
// Backend authors: RenewBatch must give every lease exactly the outcome
// Renew would have given it, as if each were renewed on its own: a lease no
// longer held gets an error matching ErrLeaseLost while the others in the
// same batch are renewed; a store failure that hits the whole call (a
// broken connection) gives every lease that failure. It must return one
// result per lease, in the order given, and honour ctx (which bounds the
// whole batch). The electiontest conformance suite checks this for every
// backend that implements it.
type BatchRenewer interface {
	// RenewBatch renews leases as Renew would renew each one, in as few
	// round trips as the store allows, and returns one result per lease,
	// in order.
	RenewBatch(ctx context.Context, leases []Lease) []RenewResult
}

// BatchProber is implemented by a Backend that implements BatchRenewer on
// behalf of another it forwards to, and so can batch only when that one
// can: a wrapper that exists before the store it stands for (the one
// config.Build hands its electors, resolved when the app starts). An
// elector asks when it starts; false makes it renew lease by lease with
// Renew, as on a backend without BatchRenewer, so that one slow renewal
// never holds up another election's result.
type BatchProber interface {
	// CanRenewBatch reports whether RenewBatch now reaches a store that
	// renews many leases in one round trip.
	CanRenewBatch() bool
}

// RenewResult is one lease's outcome in BatchRenewer.RenewBatch: what Renew
// would have returned for it.
type RenewResult struct {
	// Lease is the renewed lease when Err is nil.
	Lease Lease
	// Err is nil, an error matching ErrLeaseLost, or a store failure.
	Err error
}

// MaxRenewBatch is the most leases the core passes to one RenewBatch call.
const MaxRenewBatch = 1024

// BatchAcquirer is an optional Backend capability, the counterpart of
// BatchRenewer for acquisitions: many Acquire requests in one round trip to
// the store (Redis: a pipeline of the acquire script; Postgres: a pipeline
// of the acquire statement, each in a transaction of its own; the
// in-memory backend: one lock). Followers' polls are acquisitions too, so a process
// running many elections on a backend with it sends its campaigns' attempts
// in batches as well as its renewals.
//
// Electors in one Group on a backend that implements it use it on their
// own, and send renewals first: while renewals wait, no acquisition batch
// is started, and acquisition batches never take more than half of the
// batches one backend has in flight at once. So work that changes
// leadership queues behind work that keeps it, and a slow store sees
// fewer, larger requests rather than a growing pile. Every attempt is
// still bounded by its elector's RenewDeadline from the moment it was
// asked for; an attempt given up while its batch is in flight (Stop, or
// the deadline passed) and won nonetheless is released again by a
// stopping elector and otherwise kept for its next attempt to continue.
//
// Backend authors: AcquireBatch must give every request exactly the
// outcome Acquire would have given it, as if the requests were made one
// after another in the order given (two requests for one election: the
// second sees what the first did). It must return one result per request,
// in order, honour ctx (which bounds the whole batch), and fail every
// request a whole-call failure hits. The electiontest conformance suite
// checks this for every backend that implements it.
type BatchAcquirer interface {
	// AcquireBatch makes each request as Acquire would, in as few round
	// trips as the store allows, and returns one result per request, in
	// order.
	AcquireBatch(ctx context.Context, reqs []AcquireRequest) []AcquireResult
}

// AcquireBatchProber is BatchProber for BatchAcquirer: a wrapper that
// implements AcquireBatch on behalf of a backend it resolves later reports
// whether that backend batches acquisitions; false makes electors acquire
// with Acquire.
type AcquireBatchProber interface {
	// CanAcquireBatch reports whether AcquireBatch now reaches a store that
	// acquires many leases in one round trip.
	CanAcquireBatch() bool
}

// AcquireResult is one request's outcome in BatchAcquirer.AcquireBatch:
// what Acquire would have returned for it.
type AcquireResult struct {
	// Lease is the lease won when Err is nil.
	Lease Lease
	// Err is nil, a *HeldError, or another error as Acquire returns.
	Err error
}

// MaxAcquireBatch is the most requests the core passes to one AcquireBatch
// call.
const MaxAcquireBatch = 1024

// LeaseKey is the context key under which a leader context carries its
// lease (see ContextWithLease and LeaseFromContext).
type LeaseKey struct{}

// TokenKey is the one context key of the fencing token, a Lease of which
// only Election and Term matter: every context that carries a lease
// (leader contexts, lock contexts, ContextWithLease) sets it to that lease,
// and fence.WithToken sets it alone. A context derived from several of them
// carries the innermost one's token, so a leadership or lock never fences
// with a token its caller's context carried (see TokenFromContext).
type TokenKey struct{}

// ContextWithLease returns ctx carrying lease, as leader contexts do: both
// the lease (LeaseFromContext) and its fencing token (TokenFromContext),
// which override any ctx carried.
func ContextWithLease(ctx context.Context, lease Lease) context.Context {
	return context.WithValue(context.WithValue(ctx, TokenKey{}, lease), LeaseKey{}, lease)
}

// ContextWithToken returns ctx carrying the fencing token of election and
// term alone (no lease), overriding any token ctx carried.
func ContextWithToken(ctx context.Context, election string, term uint64) context.Context {
	return context.WithValue(ctx, TokenKey{}, Lease{Election: election, Term: term})
}

// TokenFromContext returns the election and term of the innermost fencing
// token ctx carries: the lease of the innermost leader or lock context, or
// a token set with ContextWithToken inside it.
func TokenFromContext(ctx context.Context) (election string, term uint64, ok bool) {
	l, ok := ctx.Value(TokenKey{}).(Lease)
	return l.Election, l.Term, ok
}

// LeaseFromContext returns the lease carried by a leader context (given to
// OnStartedLeading and RunIfLeader functions). Use its Term as the fencing
// token for writes made under that leadership.
func LeaseFromContext(ctx context.Context) (Lease, bool) {
	l, ok := ctx.Value(LeaseKey{}).(Lease)
	return l, ok
}

// Transferer is the optional capability of handing a held lease to
// another identity in one atomic step, which Elector.ResignTo uses. A
// backend without it still hands over: the elector releases, then writes
// the hint record with Acquire, and a candidate woken in between may take
// the free lease first. A wrapper (fault injection, a backend made
// later) implements it by forwarding with Transfer, and returns an error
// matching errors.ErrUnsupported, having changed nothing, when the
// backend behind it cannot transfer; the elector then releases and
// writes the hint itself.
type Transferer interface {
	// Transfer ends lease (the caller's own, matched as Release matches
	// it) and, in the same atomic step, writes the record Acquire would
	// write for req on a free lease: held by req.Identity, with a term
	// strictly greater than any the election had, for req.Duration. It
	// wakes subscribers (Notifier) as Release does. If lease is no longer
	// the caller's it changes nothing and returns an error matching
	// ErrLeaseLost.
	Transfer(ctx context.Context, lease Lease, req AcquireRequest) (Lease, error)
}

// Transfer calls b.Transfer when b is a Transferer, and otherwise returns
// an error matching errors.ErrUnsupported without calling b.
func Transfer(ctx context.Context, b Backend, lease Lease, req AcquireRequest) (Lease, error) {
	if t, ok := b.(Transferer); ok {
		return t.Transfer(ctx, lease, req)
	}
	return Lease{}, fmt.Errorf("fxelection: transfer: %w", errors.ErrUnsupported)
}

// Operation names, as in fxelection.OpError.Op and observers' events: the
// Backend method an Elector, Locker or Watcher called. An Elector calls
// Acquire, Renew and Release, and Get while it defers
// (fxelection.Candidacy.Defer); a Watcher calls Get. Hand-overs add
// handover.OpHandOver and handover.OpPreempt.
const (
	OpAcquire = "acquire"
	OpRenew   = "renew"
	OpRelease = "release"
	OpGet     = "get"
)
