package redislease

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
	"github.com/fxelection/fxelection/modules/redis/internal/rediskey"
)

// Backend is the Redis implementation of fxelection.Backend and
// backendkit.Notifier. It is safe for concurrent use and does not own its
// client: closing the client is the caller's business (after the electors
// using the Backend have stopped).
type Backend struct {
	// Redacting and RedactingBatches are the operations' one way out:
	// Acquire, Renew, Release, Get, Transfer, RenewBatch and AcquireBatch
	// call the unexported methods below and redact every error with the
	// client's credentials.
	backendkit.Redacting
	backendkit.RedactingBatches

	client  redis.UniversalClient
	prefix  string
	channel string
	push    bool
	health  time.Duration // pushHealthInterval; shorter in tests

	acquire, renew, release, get, transfer *redis.Script

	hub *backendkit.WakeHub // push wake-up: subscriptions and the pub/sub listener
}

var (
	_ fxelection.Backend       = (*Backend)(nil)
	_ backendkit.Notifier      = (*Backend)(nil)
	_ backendkit.NamedBackend  = (*Backend)(nil)
	_ backendkit.BatchRenewer  = (*Backend)(nil)
	_ backendkit.BatchAcquirer = (*Backend)(nil)
	_ backendkit.Transferer    = (*Backend)(nil)
)

// New returns a Backend storing leases through client, which may be a
// single-node, Sentinel failover or Cluster client. It validates opts with
// Options.Validate and does no I/O. Set ContextTimeoutEnabled on the client
// so calls honour context deadlines.
func New(client redis.UniversalClient, opts Options) (*Backend, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	prefix := opts.KeyPrefix
	if prefix == "" {
		prefix = DefaultKeyPrefix
	}
	b := &Backend{
		client:   client,
		prefix:   prefix,
		channel:  prefix + "wake",
		push:     !opts.DisablePush,
		health:   pushHealthInterval,
		acquire:  redis.NewScript(acquireSrc),
		renew:    redis.NewScript(renewSrc),
		release:  redis.NewScript(releaseSrc),
		get:      redis.NewScript(getSrc),
		transfer: redis.NewScript(transferSrc),
	}
	b.Redacting = backendkit.NewRedacting(backendkit.Ops{
		Acquire: b.acquireLease, Renew: b.renewLease, Release: b.releaseLease, Get: b.getLease,
		Transfer: b.transferLease, RenewBatch: b.renewBatch, AcquireBatch: b.acquireBatch,
	}, clientSecrets(client)...)
	b.RedactingBatches = backendkit.NewRedactingBatches(b.Redacting)
	b.hub = backendkit.NewWakeHub(b.listen)
	return b, nil
}

// clientSecrets returns the credentials of client, when its type exposes
// them, for redaction. A user name is redacted too when it is at least 4
// bytes long: it is not a secret, and redacting a shorter one would withhold
// every message that contains its letters.
func clientSecrets(client redis.UniversalClient) []string {
	var user, pw string
	switch c := client.(type) {
	case *redis.Client:
		user, pw = c.Options().Username, c.Options().Password
	case *redis.ClusterClient:
		user, pw = c.Options().Username, c.Options().Password
	case *redis.Ring:
		user, pw = c.Options().Username, c.Options().Password
	}
	return backendkit.Credentials(user, pw)
}

// BackendName returns "redis".
func (b *Backend) BackendName() string { return "redis" }

// Keys returns the names of election's lease and term counter keys,
// for operators and tests. Both are in the same Redis Cluster hash slot.
func (b *Backend) Keys(election string) (lease, term string) {
	return rediskey.Key(b.prefix, election, "lease"), rediskey.Key(b.prefix, election, "term")
}

// leaseKey is Keys's lease key alone.
func (b *Backend) leaseKey(election string) string {
	return rediskey.Key(b.prefix, election, "lease")
}

// WakeChannel returns the pub/sub channel on which Release and Transfer
// publish the released election's name.
func (b *Backend) WakeChannel() string { return b.channel }

// acquireLease is Acquire (see backendkit.Redacting), implementing
// fxelection.Backend: one script that takes the lease if the key is absent,
// and otherwise decides by the live record. Held by req.Identity in the same
// run — req names no incarnation, or the record's nonce is the one derived
// from req.Incarnation — it refreshes the record (same term, new metadata
// and expiry). Held by req.Identity in another run (another incarnation; a
// record written by a request naming none counts as another) it takes the lease at once with a new term, as a new holder
// would. Held by another identity it returns a *backendkit.HeldError with
// the holder. A new term is above every term the counter has given and above
// the live record's (see the package documentation for when the counter can
// be lost); when the counter has reached backendkit.MaxTerm it refuses with
// an error matching backendkit.ErrTermExhausted. A record that fails
// validation gives an error matching backendkit.ErrInvalidRecord and is not
// taken over. AcquiredAt and ExpiresAt are by the Redis server's clock.
//
// The record stores the nonce, not the incarnation: req.Incarnation
// itself when it is 16 lowercase hex digits (backendkit.NewIncarnation's
// form), else 64 bits of a SHA-256 of it, or a new random nonce when req
// names no incarnation. The returned lease carries it as Version, which
// Release then requires (see Release), and req.Incarnation as Incarnation.
func (b *Backend) acquireLease(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if err := ctx.Err(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	a, err := b.prepareAcquire(opAcquire, req)
	if err != nil {
		return fxelection.Lease{}, err
	}
	res, err := b.acquire.Run(ctx, b.client, a.keys, a.args...).Slice()
	return a.outcome(res, err)
}

// The operations whose errors acquireCall words: Acquire (and
// AcquireBatch) and Transfer.
const (
	opAcquire  = "acquire lease"
	opTransfer = "transfer lease"
)

// acquireCall is one Acquire's script call, prepared: its keys and
// arguments, and what its outcome needs. Transfer prepares its call as
// one too (its script takes the same arguments first), and op, which
// starts every error, tells the two apart.
type acquireCall struct {
	op    string
	req   backendkit.AcquireRequest
	keys  []string
	args  []any
	nonce string
	durMS int64
}

// prepareAcquire checks req and prepares its script call for op
// (opAcquire or opTransfer).
func (b *Backend) prepareAcquire(op string, req backendkit.AcquireRequest) (acquireCall, error) {
	if req.Identity == "" {
		return acquireCall{}, fmt.Errorf("%s: empty identity", op)
	}
	if req.Duration < time.Millisecond || req.Duration > backendkit.MaxRecordDuration {
		return acquireCall{}, fmt.Errorf("%s: duration %v is not between 1ms and %v", op, req.Duration, backendkit.MaxRecordDuration)
	}
	if err := req.Validate(); err != nil {
		return acquireCall{}, fmt.Errorf("%s: %w", op, err)
	}
	meta, err := encodeMetadata(req.Metadata)
	if err != nil {
		return acquireCall{}, fmt.Errorf("%s: %w", op, err)
	}
	lease, term := b.Keys(req.Election)
	durMS := req.Duration.Milliseconds()
	nonce, derived := newNonce(), "0"
	if req.Incarnation != "" {
		nonce, derived = incarnationNonce(req.Incarnation), "1"
	}
	return acquireCall{
		op: op, req: req, keys: []string{lease, term}, nonce: nonce, durMS: durMS,
		args: []any{holderPart(req.Identity), meta, durMS, nonce, derived},
	}, nil
}

// outcome turns the acquire script's reply (or error) into Acquire's
// result, or the transfer script's into Transfer's (which never replies
// with another holder's record).
func (a acquireCall) outcome(res []any, err error) (fxelection.Lease, error) {
	req, durMS := a.req, a.durMS
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("%s: %w", a.op, storeError(err))
	}
	status, err := replyStatus(res)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("%s: %w", a.op, err)
	}
	switch status {
	case 1:
		if len(res) != 4 {
			return fxelection.Lease{}, fmt.Errorf("%s: %w", a.op, errReply)
		}
		t, err1 := replyUint(res[1])
		at, err2 := replyInt(res[2])
		now, err3 := replyInt(res[3])
		if err := errors.Join(err1, err2, err3); err != nil {
			return fxelection.Lease{}, fmt.Errorf("%s: %w", a.op, err)
		}
		return fxelection.Lease{
			Election:    req.Election,
			Holder:      req.Identity,
			Incarnation: req.Incarnation,
			Metadata:    maps.Clone(req.Metadata),
			Term:        t,
			Version:     a.nonce,
			Duration:    time.Duration(durMS) * time.Millisecond,
			AcquiredAt:  time.UnixMilli(at),
			ExpiresAt:   time.UnixMilli(now + durMS),
		}, nil
	case 0:
		holder, err := decodeReply(req.Election, res)
		if err != nil {
			return fxelection.Lease{}, fmt.Errorf("%s: %w", a.op, err)
		}
		return fxelection.Lease{}, &backendkit.HeldError{Holder: holder}
	case -2:
		return fxelection.Lease{}, fmt.Errorf("%s: %w", a.op, backendkit.ErrTermExhausted)
	default:
		return fxelection.Lease{}, fmt.Errorf("%s: %w", a.op, foreign(res))
	}
}

// acquireBatch is AcquireBatch (see backendkit.RedactingBatches),
// implementing backendkit.BatchAcquirer: the acquire script for every
// request in one pipeline (one round trip; on Redis Cluster, one per node
// holding some of the keys), run by the server one after another in the
// order given. Each request gets what Acquire would have returned for it; a
// failure of the connection fails every request it carried. Scripts not yet
// cached by the server are sent again in full, in a second pipeline, as
// RenewBatch does.
func (b *Backend) acquireBatch(ctx context.Context, reqs []backendkit.AcquireRequest) []backendkit.AcquireResult {
	out := make([]backendkit.AcquireResult, len(reqs))
	if err := ctx.Err(); err != nil {
		for i := range out {
			out[i].Err = fmt.Errorf("acquire lease: %w", err)
		}
		return out
	}
	calls := make([]acquireCall, len(reqs))
	var idx []int
	for i, req := range reqs {
		var err error
		if calls[i], err = b.prepareAcquire(opAcquire, req); err != nil {
			out[i].Err = err
			continue
		}
		idx = append(idx, i)
	}
	cmds := pipelineScript(ctx, b.client, b.acquire, idx, func(i int) ([]string, []any) { return calls[i].keys, calls[i].args })
	for _, i := range idx {
		res, err := cmds[i].Slice()
		out[i].Lease, out[i].Err = calls[i].outcome(res, err)
	}
	return out
}

// pipelineScript runs script for each index in idx, with the keys and
// arguments call gives for it, in one pipeline, and returns the commands
// by index (nil for indexes not in idx). Scripts the server does not have
// cached (NOSCRIPT, as after a restart) are sent again in full, in a
// second pipeline. Errors are per command.
func pipelineScript(ctx context.Context, client redis.UniversalClient, script *redis.Script, idx []int, call func(i int) ([]string, []any)) []*redis.Cmd {
	n := 0
	for _, i := range idx {
		n = max(n, i+1)
	}
	cmds := make([]*redis.Cmd, n)
	send := func(idx []int, full bool) {
		pipe := client.Pipeline()
		for _, i := range idx {
			keys, args := call(i)
			if full {
				cmds[i] = script.Eval(ctx, pipe, keys, args...)
			} else {
				cmds[i] = script.EvalSha(ctx, pipe, keys, args...)
			}
		}
		_, _ = pipe.Exec(ctx) // errors are per command
	}
	if len(idx) == 0 {
		return cmds
	}
	send(idx, false)
	var again []int
	for _, i := range idx {
		if err := cmds[i].Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		send(again, true)
	}
	return cmds
}

// renewLease is Renew (see backendkit.Redacting), implementing
// fxelection.Backend: one script that extends the lease by lease.Duration
// (PEXPIRE) only while lease.Holder holds lease.Term, and otherwise returns
// an error matching backendkit.ErrLeaseLost (which also matches
// backendkit.ErrInvalidRecord when a foreign value replaced the lease). A
// new incarnation of the holder always takes a new term, so its
// predecessor's Renew fails. The nonce (lease.Version) is not compared; the
// returned lease carries the record's current one, so that after a
// re-acquisition of the same term without an incarnation (by an earlier
// version of this package, say) the holder's own Release still matches. It
// keeps lease.Incarnation while the record's nonce is the one derived from
// it and clears it otherwise. The returned lease shares lease's Metadata map
// (read-only); its ExpiresAt is estimated on the local clock as the call's
// start plus Duration, since Redis sets the expiry by its own clock at most
// one round trip later.
func (b *Backend) renewLease(ctx context.Context, l fxelection.Lease) (fxelection.Lease, error) {
	if err := ctx.Err(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	if l.Duration < time.Millisecond || l.Duration > backendkit.MaxRecordDuration {
		return fxelection.Lease{}, fmt.Errorf("renew lease: duration %v is not between 1ms and %v", l.Duration, backendkit.MaxRecordDuration)
	}
	start := time.Now()
	lease := b.leaseKey(l.Election)
	durMS := l.Duration.Milliseconds()
	res, err := b.renew.Run(ctx, b.client, []string{lease}, termPart(l), durMS).Slice()
	return renewOutcome(l, start, res, err)
}

// renewOutcome turns the renew script's reply (or error) for l, sent at
// start, into Renew's result.
func renewOutcome(l fxelection.Lease, start time.Time, res []any, err error) (fxelection.Lease, error) {
	durMS := l.Duration.Milliseconds()
	if err != nil {
		if isWrongType(err) {
			return fxelection.Lease{}, fmt.Errorf("renew lease: %w: %w", backendkit.ErrLeaseLost, storeError(err))
		}
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	status, err := replyStatus(res)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	switch status {
	case 1:
		nonce, ok := "", len(res) == 2
		if ok {
			nonce, ok = res[1].(string)
		}
		if !ok || !validNonce(nonce) {
			return fxelection.Lease{}, fmt.Errorf("renew lease: %w", errReply)
		}
		if l.Incarnation != "" && nonce != incarnationNonce(l.Incarnation) {
			// This term was re-acquired by a request naming no
			// incarnation (a hand-over hint written for a successor
			// that held the lease already): the record no longer names
			// ours.
			l.Incarnation = ""
		}
		l.Version = nonce
		l.Duration = time.Duration(durMS) * time.Millisecond
		l.ExpiresAt = start.Add(l.Duration)
		return l, nil
	case 0:
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", backendkit.ErrLeaseLost)
	default:
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w: %w: our record is damaged",
			backendkit.ErrLeaseLost, backendkit.ErrInvalidRecord)
	}
}

// renewBatch is RenewBatch (see backendkit.RedactingBatches), implementing
// backendkit.BatchRenewer: the renew script for every lease in one pipeline
// (one round trip; on Redis Cluster, one per node holding some of the keys).
// Each lease gets what Renew would have returned for it: a lease no longer
// held gets an error matching backendkit.ErrLeaseLost while the others are
// renewed, and a failure of the connection fails every lease it carried.
// Scripts not yet cached by the server (NOSCRIPT, as after a restart) are
// sent again in full, in a second pipeline.
func (b *Backend) renewBatch(ctx context.Context, leases []fxelection.Lease) []backendkit.RenewResult {
	out := make([]backendkit.RenewResult, len(leases))
	if err := ctx.Err(); err != nil {
		for i := range out {
			out[i].Err = fmt.Errorf("renew lease: %w", err)
		}
		return out
	}
	start := time.Now()
	var idx []int
	for i, l := range leases {
		if l.Duration < time.Millisecond || l.Duration > backendkit.MaxRecordDuration {
			out[i].Err = fmt.Errorf("renew lease: duration %v is not between 1ms and %v", l.Duration, backendkit.MaxRecordDuration)
			continue
		}
		idx = append(idx, i)
	}
	cmds := pipelineScript(ctx, b.client, b.renew, idx, func(i int) ([]string, []any) {
		l := leases[i]
		return []string{b.leaseKey(l.Election)}, []any{termPart(l), l.Duration.Milliseconds()}
	})
	for _, i := range idx {
		res, err := cmds[i].Slice()
		out[i].Lease, out[i].Err = renewOutcome(leases[i], start, res, err)
	}
	return out
}

// releaseLease is Release (see backendkit.Redacting), implementing
// fxelection.Backend: one script that deletes the lease only if lease.Holder
// still holds lease.Term under the nonce lease.Version (the one the record
// got at the acquisition that Acquire, Renew, RenewBatch or Get last
// reported), and then publishes the election's name on WakeChannel. So a
// delayed Release from an earlier incarnation of a holder that has since
// re-acquired its lease frees nothing: a new incarnation has a new term and
// nonce, and a re-acquisition that names no incarnation keeps the term but
// writes a new nonce. A lease that is no longer ours (or a foreign value) is
// left alone and nil is returned. The term counter is kept. A Lease with an
// empty Version (built by hand rather than returned by the backend) is
// matched on holder and term only, without that protection; a Version that
// is not a nonce this backend writes matches nothing.
func (b *Backend) releaseLease(ctx context.Context, l fxelection.Lease) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	part := termPart(l)
	if l.Version != "" {
		if !validNonce(l.Version) {
			return nil // cannot be a lease of ours
		}
		part += l.Version + "|"
	}
	lease := b.leaseKey(l.Election)
	err := b.release.Run(ctx, b.client, []string{lease}, part, l.Election, b.channel).Err()
	if err != nil && !isWrongType(err) { // a foreign type is not ours: nothing to do
		return fmt.Errorf("release lease: %w", err)
	}
	return nil
}

// transferLease is Transfer (see backendkit.Redacting), implementing
// backendkit.Transferer: one script that ends lease, matched as Release
// matches it (holder, term and the nonce in lease.Version; holder and term
// alone for an empty Version), and in the same atomic step
// writes the record Acquire would write for req on a free lease: held by
// req.Identity, with a new term from the counter (after raising the counter
// to the released record's term, so the new term is above it even when the
// counter was lost; see the package documentation for what that promises),
// for req.Duration, with req.Metadata and the nonce derived from
// req.Incarnation (random when req names none). It then publishes the
// election's name on WakeChannel, as Release does. The returned lease is
// what Acquire would have returned for req.
//
// When lease is no longer the caller's — no key, another holder, term or
// nonce, a foreign value or a key of another type — or req.Election is
// not lease.Election, Transfer changes nothing and returns an error
// matching backendkit.ErrLeaseLost. req is checked first, as Acquire
// checks it. A term counter that is not a term (backendkit.ErrInvalidRecord)
// or that has reached backendkit.MaxTerm (backendkit.ErrTermExhausted)
// also changes nothing: the lease stays the caller's. A store failure
// (say, a lost reply) leaves it unknown whether the transfer happened.
func (b *Backend) transferLease(ctx context.Context, l fxelection.Lease, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if err := ctx.Err(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("%s: %w", opTransfer, err)
	}
	a, err := b.prepareAcquire(opTransfer, req)
	if err != nil {
		return fxelection.Lease{}, err
	}
	if req.Election != l.Election {
		return fxelection.Lease{}, fmt.Errorf("%s: %w: the request is for another election", opTransfer, backendkit.ErrLeaseLost)
	}
	part := termPart(l)
	if l.Version != "" {
		if !validNonce(l.Version) {
			return fxelection.Lease{}, fmt.Errorf("%s: %w", opTransfer, backendkit.ErrLeaseLost) // cannot be a lease of ours
		}
		part += l.Version + "|"
	}
	args := append(a.args[:len(a.args):len(a.args)], part, l.Election, b.channel)
	res, err := b.transfer.Run(ctx, b.client, a.keys, args...).Slice()
	if err == nil {
		if status, err := replyStatus(res); err == nil && status == 0 {
			return fxelection.Lease{}, fmt.Errorf("%s: %w", opTransfer, backendkit.ErrLeaseLost)
		}
	}
	return a.outcome(res, err)
}

// getLease is Get (see backendkit.Redacting), implementing
// fxelection.Backend: the current holder, read in one script, or
// backendkit.ErrNoLease. ExpiresAt is the server's clock plus the key's
// remaining PTTL, to the millisecond; it is for display. The lease's
// Incarnation is always empty, since the record keeps only a nonce derived
// from it; its Version is that nonce, which for an incarnation made by
// backendkit.NewIncarnation is the incarnation itself.
func (b *Backend) getLease(ctx context.Context, election string) (fxelection.Lease, error) {
	if err := ctx.Err(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
	}
	lease := b.leaseKey(election)
	res, err := b.get.Run(ctx, b.client, []string{lease}).Slice()
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("get lease: %w", storeError(err))
	}
	status, err := replyStatus(res)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
	}
	switch status {
	case 1:
		l, err := decodeReply(election, res)
		if err != nil {
			return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
		}
		return l, nil
	case 0:
		return fxelection.Lease{}, backendkit.ErrNoLease
	default:
		return fxelection.Lease{}, fmt.Errorf("get lease: %w", foreign(res))
	}
}

// recordFormat starts every lease record the scripts write.
const recordFormat = "fxe2"

// nonceLen is the length of a record's nonce: 16 lowercase hex digits.
const nonceLen = 16

// newNonce returns a random nonce for an acquisition that names no
// incarnation.
func newNonce() string {
	return fmt.Sprintf("%016x", rand.Uint64())
}

// incarnationNonce is the nonce a record gets for an acquisition by
// incarnation inc (non-empty): inc itself when it is already a nonce (16
// lowercase hex digits, as backendkit.NewIncarnation makes them), else the
// first 64 bits of a SHA-256 of it, in hex. Two incarnations share a nonce
// only by a 64-bit collision.
func incarnationNonce(inc string) string {
	if validNonce(inc) {
		return inc
	}
	sum := sha256.Sum256([]byte("fxelection/redis incarnation\x00" + inc))
	return hex.EncodeToString(sum[:nonceLen/2])
}

// validNonce reports whether s is a nonce as the scripts store it.
func validNonce(s string) bool {
	if len(s) != nonceLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// holderPart is "|<len>|<holder>|", the holder's part of a record.
func holderPart(holder string) string {
	return "|" + strconv.Itoa(len(holder)) + "|" + holder + "|"
}

// termPart is "|<term>|<len>|<holder>|", what follows the format in the
// prefix of l's record.
func termPart(l fxelection.Lease) string {
	return "|" + strconv.FormatUint(l.Term, 10) + holderPart(l.Holder)
}

// parseRecord decodes a lease record (see scripts.go) and
// validates every field with Lease.Validate: numbers in canonical
// decimal form, a term in [1, MaxTerm], a duration in (0,
// MaxRecordDuration], a printable UTF-8 holder and metadata, an acquisition
// time in the years 1–9999, and a nonce of 16 lowercase hex
// digits, returned as the lease's Version. It never panics; anything else
// gives an error matching ErrInvalidRecord that quotes no stored text.
func parseRecord(election, v string) (fxelection.Lease, error) {
	bad := func(what string) (fxelection.Lease, error) {
		return fxelection.Lease{}, fmt.Errorf("%w: %s", backendkit.ErrInvalidRecord, what)
	}
	field := func() (string, bool) {
		i := strings.IndexByte(v, '|')
		if i < 0 {
			return "", false
		}
		f := v[:i]
		v = v[i+1:]
		return f, true
	}
	format, ok := field()
	if !ok || format != recordFormat {
		return bad("not a lease record")
	}
	termS, ok1 := field()
	lenS, ok2 := field()
	if !ok1 || !ok2 {
		return bad("truncated record")
	}
	term, ok := parseDecimal(termS)
	if !ok || term == 0 {
		return bad("term is not a positive integer")
	}
	n64, ok := parseDecimal(lenS)
	if !ok || n64 <= 0 || n64 >= int64(len(v)) || v[n64] != '|' {
		return bad("bad holder")
	}
	n := int(n64)
	holder := v[:n]
	v = v[n+1:]
	nonce, ok := field()
	if !ok {
		return bad("truncated record")
	}
	if !validNonce(nonce) {
		return bad("bad nonce")
	}
	durS, ok1 := field()
	atS, ok2 := field()
	if !ok1 || !ok2 {
		return bad("truncated record")
	}
	durMS, ok := parseDecimal(durS)
	if !ok {
		return bad("duration is not a positive integer")
	}
	dur, err := backendkit.DurationFromMillis(durMS)
	if err != nil {
		return fxelection.Lease{}, err
	}
	atMS, ok := parseDecimal(atS)
	if !ok {
		return bad("acquisition time is not a Unix time")
	}
	md, err := decodeMetadata(v)
	if err != nil {
		return fxelection.Lease{}, err
	}
	l := fxelection.Lease{
		Holder:   holder,
		Metadata: md,
		Term:     uint64(term),
		Version:  nonce,
		Duration: dur,
	}
	if atMS > 0 {
		l.AcquiredAt = time.UnixMilli(atMS)
	}
	if err := l.Validate(); err != nil {
		return fxelection.Lease{}, err
	}
	l.Election = election // the key's, not the record's: the caller chose it
	return l, nil
}

// decodeReply decodes {status, record, pttl, now ms}.
func decodeReply(election string, res []any) (fxelection.Lease, error) {
	if len(res) != 4 {
		return fxelection.Lease{}, errReply
	}
	v, ok := res[1].(string)
	if !ok {
		return fxelection.Lease{}, errReply
	}
	l, err := parseRecord(election, v)
	if err != nil {
		return fxelection.Lease{}, err
	}
	pttl, err1 := replyInt(res[2])
	now, err2 := replyInt(res[3])
	if err := errors.Join(err1, err2); err != nil {
		return fxelection.Lease{}, err
	}
	if pttl >= 0 {
		l.ExpiresAt = time.UnixMilli(now + pttl)
	}
	return l, nil
}

// errReply is a script reply of an unexpected shape (a bug, or a script of
// another version under our SHA, which cannot happen).
var errReply = errors.New("redislease: unexpected script reply")

// storeError maps a Redis error to the contract: WRONGTYPE (a foreign value
// under a key) matches backendkit.ErrInvalidRecord; anything else is
// returned as is (a store failure).
func storeError(err error) error {
	if isWrongType(err) {
		return fmt.Errorf("%w: a key holds another type: %w", backendkit.ErrInvalidRecord, err)
	}
	return err
}

// isWrongType reports whether err is Redis's WRONGTYPE error, raised by a
// script that met a key of another type.
func isWrongType(err error) bool {
	return strings.Contains(err.Error(), "WRONGTYPE")
}

// foreign is the error for a {-1, reason} reply.
func foreign(res []any) error {
	reason := "foreign value"
	if len(res) > 1 {
		if s, ok := res[1].(string); ok {
			reason = s
		}
	}
	return fmt.Errorf("%w: %s", backendkit.ErrInvalidRecord, reason)
}

func replyStatus(res []any) (int64, error) {
	if len(res) == 0 {
		return 0, errReply
	}
	s, ok := res[0].(int64)
	if !ok || s < -2 || s > 1 {
		return 0, errReply
	}
	return s, nil
}

func replyInt(v any) (int64, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %q is not an integer", backendkit.ErrInvalidRecord, v)
		}
		return n, nil
	}
	return 0, errReply
}

// replyUint reads a term from a script reply: a string of digits (the
// scripts never turn a term into a Lua number) in [1, backendkit.MaxTerm].
func replyUint(v any) (uint64, error) {
	if s, ok := v.(string); ok {
		if n, ok := parseDecimal(s); ok && n > 0 && n <= backendkit.MaxTerm {
			return uint64(n), nil
		}
	}
	return 0, fmt.Errorf("%w: term is not an integer in [1, %d]", backendkit.ErrInvalidRecord, int64(backendkit.MaxTerm))
}

// parseDecimal parses a non-negative int64 in canonical decimal form: digits
// only, no sign, no leading zero (except "0" itself). Canonical form keeps a
// record's text and its decoded value one-to-one, which Renew and Release
// rely on (they compare record prefixes as text).
func parseDecimal(s string) (int64, bool) {
	if s == "" || len(s) > 19 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

func encodeMetadata(m map[string]string) (string, error) {
	if len(m) == 0 {
		return "", nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encode metadata: %w", err)
	}
	return string(b), nil
}

func decodeMetadata(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	if !utf8.ValidString(s) { // encoding/json would turn bad bytes into U+FFFD
		return nil, fmt.Errorf("%w: metadata is not UTF-8", backendkit.ErrInvalidRecord)
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil || m == nil {
		return nil, fmt.Errorf("%w: metadata is not a JSON object of strings", backendkit.ErrInvalidRecord)
	}
	return m, nil
}
