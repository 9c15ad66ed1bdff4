package etcdlease

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fxelection/fxelection/fxelection"
	"github.com/fxelection/fxelection/fxelection/backendkit"
)

// maxAcquireAttempts bounds how often Acquire retries when its transaction
// lost a race to a release or to another Backend with the same identity.
const maxAcquireAttempts = 3

// Backend is the etcd implementation of fxelection.Backend,
// backendkit.Notifier and backendkit.Transferer. It is safe for concurrent use and does not own its
// client: closing the client is the caller's business (after the electors
// using the Backend have stopped).
type Backend struct {
	// Redacting is the operations' one way out: Acquire, Renew, Release,
	// Get and Transfer call the unexported methods below and redact every
	// error with the client's credentials.
	backendkit.Redacting

	client *clientv3.Client
	prefix string
	push   bool

	hub *backendkit.WakeHub // push wake-up: subscriptions and the watch

	// minTTL is the longest TTL, in seconds, that etcd granted above
	// what was asked (its minimum TTL); 0 before any.
	minTTL atomic.Int64
}

var (
	_ fxelection.Backend       = (*Backend)(nil)
	_ backendkit.Notifier      = (*Backend)(nil)
	_ backendkit.NamedBackend  = (*Backend)(nil)
	_ backendkit.Transferer    = (*Backend)(nil)
	_ backendkit.MinDurationer = (*Backend)(nil)
)

// DefaultMinTTL is etcd's minimum lease TTL with its default election
// timeout (1s): 1.5 election timeouts, rounded up to a whole second. etcd
// grants a shorter TTL asked for as this one.
const DefaultMinTTL = 2 * time.Second

// MinLeaseDuration returns the shortest lease etcd grants as asked
// (backendkit.MinDurationer): DefaultMinTTL, or the longest TTL etcd has
// granted this Backend above what it asked for (a cluster with a longer
// election timeout has a higher minimum), whichever is longer.
func (b *Backend) MinLeaseDuration() time.Duration {
	return max(DefaultMinTTL, time.Duration(b.minTTL.Load())*time.Second)
}

// granted notes the TTL etcd granted for a request of asked seconds: more
// than asked is etcd's minimum TTL.
func (b *Backend) granted(asked, ttl int64) {
	if ttl <= asked {
		return
	}
	for {
		cur := b.minTTL.Load()
		if ttl <= cur || b.minTTL.CompareAndSwap(cur, ttl) {
			return
		}
	}
}

// New returns a Backend storing leases through client. It validates opts
// with Options.Validate and does no I/O; a nil client is an error.
func New(client *clientv3.Client, opts Options) (*Backend, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidOptions)
	}
	prefix := opts.KeyPrefix
	if prefix == "" {
		prefix = DefaultKeyPrefix
	}
	b := &Backend{
		client: client,
		prefix: prefix,
		push:   !opts.DisablePush,
	}
	b.Redacting = backendkit.NewRedacting(backendkit.Ops{
		Acquire: b.acquireLease, Renew: b.renewLease, Release: b.releaseLease, Get: b.getLease,
		Transfer: b.transferLease,
	}, backendkit.Credentials(client.Username, client.Password, client.Token)...)
	b.hub = backendkit.NewWakeHub(b.listen)
	return b, nil
}

// BackendName returns "etcd".
func (b *Backend) BackendName() string { return "etcd" }

// Key returns the etcd key holding election's lease, for operators and
// tests.
func (b *Backend) Key(election string) string { return b.prefix + election }

// Prefix returns the key prefix (Options.KeyPrefix or DefaultKeyPrefix).
func (b *Backend) Prefix() string { return b.prefix }

// ttlSeconds is the etcd lease TTL for d: whole seconds, rounded up. etcd
// may grant more (its minimum TTL, 1.5 election timeouts rounded up to a
// second: 2s with the default 1s election timeout), never less.
func ttlSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second > 0 {
		s++
	}
	return max(s, 1)
}

func checkDuration(d time.Duration) error {
	if d < time.Millisecond || d > backendkit.MaxRecordDuration {
		return fmt.Errorf("%w: duration %v is not between 1ms and %v", backendkit.ErrDurationRange, d, backendkit.MaxRecordDuration)
	}
	return nil
}

// The operations whose errors checkRequest words: Acquire and Transfer.
const (
	opAcquire  = "acquire lease"
	opTransfer = "transfer lease"
)

// checkRequest checks req as Acquire and Transfer (op) need it: an
// identity, a duration etcd can hold, and req.Validate.
func checkRequest(op string, req backendkit.AcquireRequest) error {
	if req.Identity == "" {
		return fmt.Errorf("%s: empty identity", op)
	}
	if err := checkDuration(req.Duration); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := req.Validate(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// acquireLease is Acquire (see backendkit.Redacting), implementing
// fxelection.Backend. It reads the key first (so a follower's poll is one
// linearizable read and no Raft write); if the key is absent (free,
// released, expired or deleted: etcd deletes a lease's keys when the lease
// ends), or holds a valid record of req.Identity's own, it grants a fresh
// etcd lease of Duration (whole seconds, rounded up) and writes the record
// attached to it in one transaction whose compare is the key's absence
// (create revision 0) or the mod revision it read.
//
// The term is the revision of the transaction that started the leadership,
// which is above every revision etcd ever had and so above every earlier
// term, even after the key was deleted out of band or compacted. A new
// holder, and a new incarnation of the holder (req.Incarnation differs from
// the record's), get that revision: the value does not state it, and the
// key's mod revision is the term. Only when req continues the record
// (req.Continues: same identity and, if req names one, same incarnation)
// does the value state the record's term, which the leadership keeps. In
// both cases of a live key the record moves to the new etcd lease, and the
// old one, holding nothing now, expires with its TTL: the predecessor's
// Renew then fails and its Release does nothing.
//
// A key held by someone else gives a *backendkit.HeldError; a key that is
// not a valid record, an error matching backendkit.ErrInvalidRecord, and the
// key is left alone until its etcd lease expires. An etcd lease granted for
// an attempt that then fails is revoked (or, if that fails too, expires
// with its TTL). ExpiresAt is the call's start on the local clock plus the
// TTL etcd granted; the returned lease carries req.Incarnation.
func (b *Backend) acquireLease(ctx context.Context, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if err := ctx.Err(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	if err := checkRequest(opAcquire, req); err != nil {
		return fxelection.Lease{}, err
	}
	key := b.Key(req.Election)
	resp, err := b.client.Get(ctx, key)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	cur := firstKV(resp.Kvs)
	for attempt := 1; ; attempt++ {
		var keep uint64 // the term a continued leadership keeps; 0 for a new one
		if cur != nil {
			holder, err := decodeKV(req.Election, cur)
			if err != nil {
				return fxelection.Lease{}, fmt.Errorf("acquire lease: %w", err)
			}
			if holder.Holder != req.Identity {
				return fxelection.Lease{}, &backendkit.HeldError{Holder: holder}
			}
			if attempt > maxAcquireAttempts {
				// The caller's own identity keeps rewriting the key (another
				// incarnation racing this one): not held by someone else,
				// so not a HeldError, which would name the caller.
				return fxelection.Lease{}, errors.New("acquire lease: the key kept changing under the transaction")
			}
			if req.Continues(holder) {
				keep = holder.Term
			}
		} else if attempt > maxAcquireAttempts {
			return fxelection.Lease{}, errors.New("acquire lease: the key kept changing under the transaction")
		}
		l, next, err := b.tryAcquire(ctx, req, key, cur, keep)
		if err != nil || l.Term != 0 {
			return l, err
		}
		cur = next
	}
}

// tryAcquire grants an etcd lease and runs the transaction that puts the
// record if the key is still as read (cur; nil for absent): with term keep
// stated in the value when it is not 0 (a continued leadership), else with
// none (a new leadership, whose term is the transaction's revision). It
// returns the acquired lease, or on a lost compare the key as the
// transaction's else branch read it (nil and a zero Lease if it is gone
// now).
func (b *Backend) tryAcquire(ctx context.Context, req backendkit.AcquireRequest, key string, cur *mvccpb.KeyValue, keep uint64) (fxelection.Lease, *mvccpb.KeyValue, error) {
	value, err := encodeRecord(fxelection.Lease{
		Holder:      req.Identity,
		Incarnation: req.Incarnation,
		Metadata:    req.Metadata,
		Duration:    req.Duration,
		Term:        keep,
	})
	if err != nil {
		return fxelection.Lease{}, nil, fmt.Errorf("acquire lease: %w", err)
	}
	start := time.Now()
	g, err := b.client.Grant(ctx, ttlSeconds(req.Duration))
	if err != nil {
		return fxelection.Lease{}, nil, fmt.Errorf("acquire lease: grant: %w", err)
	}
	b.granted(ttlSeconds(req.Duration), g.TTL)
	cmp := clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
	if cur != nil {
		cmp = clientv3.Compare(clientv3.ModRevision(key), "=", cur.ModRevision)
	}
	tr, err := b.client.Txn(ctx).If(cmp).
		Then(clientv3.OpPut(key, value, clientv3.WithLease(g.ID))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		// The put may have been applied: revoking the lease deletes it.
		b.revoke(ctx, g.ID)
		return fxelection.Lease{}, nil, fmt.Errorf("acquire lease: %w", err)
	}
	if !tr.Succeeded {
		b.revoke(ctx, g.ID)
		var next *mvccpb.KeyValue
		if rs := tr.Responses; len(rs) == 1 && rs[0].GetResponseRange() != nil {
			next = firstKV(rs[0].GetResponseRange().Kvs)
		}
		return fxelection.Lease{}, next, nil
	}
	// A new leadership's term is the transaction's revision: the key's mod
	// revision now. When cur was live the record moved to the new etcd
	// lease; the old one holds nothing now and expires with its TTL. It is
	// not revoked: a record naming this identity may have been written by
	// another program on a lease it shares with other keys.
	term := keep
	if term == 0 {
		rev := tr.Header.Revision
		if rev <= 0 || cur != nil && rev <= cur.ModRevision {
			return fxelection.Lease{}, nil, fmt.Errorf("acquire lease: %w: revision %d", backendkit.ErrInvalidRecord, rev)
		}
		term = uint64(rev)
	}
	return grantedLease(req, term, g, start), nil, nil
}

// grantedLease is the Lease a write of req's record on etcd lease g, with
// term, gives its caller: ExpiresAt is start (the local clock before the
// Grant) plus the TTL etcd granted.
func grantedLease(req backendkit.AcquireRequest, term uint64, g *clientv3.LeaseGrantResponse, start time.Time) fxelection.Lease {
	return fxelection.Lease{
		Election:    req.Election,
		Holder:      req.Identity,
		Incarnation: req.Incarnation,
		Metadata:    maps.Clone(req.Metadata),
		Term:        term,
		Version:     formatLeaseID(int64(g.ID)),
		Duration:    req.Duration,
		ExpiresAt:   start.Add(time.Duration(g.TTL) * time.Second),
	}
}

// revoke revokes an etcd lease this Backend granted, ignoring failures: a
// lease that cannot be revoked expires with its TTL.
func (b *Backend) revoke(ctx context.Context, id clientv3.LeaseID) {
	_, _ = b.client.Revoke(ctx, id)
}

// renewLease is Renew (see backendkit.Redacting), implementing
// fxelection.Backend: a keep-alive of the lease's etcd lease (KeepAliveOnce,
// which etcd's leader applies by its own clock), then a transaction
// comparing that the key is still attached to that etcd lease (only the
// write that granted it put the key on it), reading it back to check the
// holder and the term. Anything else — the etcd lease expired or was
// revoked, the key deleted or taken over, by another identity or a new
// incarnation — gives an error matching backendkit.ErrLeaseLost (the etcd
// lease, if still alive, is left to expire: nothing is revoked on a failed
// compare). When lease.Duration asks for a longer TTL than the etcd lease
// has, the record moves to a new etcd lease of that TTL in one more
// transaction with the same compare and the mod revision read (etcd cannot
// change a lease's TTL); its value states the term, which stays. A shorter
// one keeps the longer etcd lease. ExpiresAt is the call's start on the
// local clock plus the TTL.
func (b *Backend) renewLease(ctx context.Context, l fxelection.Lease) (fxelection.Lease, error) {
	if err := ctx.Err(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	if err := checkDuration(l.Duration); err != nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	id, ok := parseLeaseID(l.Version)
	if !ok || l.Term == 0 || l.Term > backendkit.MaxTerm {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w: not a lease this backend issued", backendkit.ErrLeaseLost)
	}
	lid := clientv3.LeaseID(id)
	key := b.Key(l.Election)
	start := time.Now()
	ka, err := b.client.KeepAliveOnce(ctx, lid)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w: etcd lease expired or revoked", backendkit.ErrLeaseLost)
	}
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: keep-alive: %w", err)
	}
	ours := []clientv3.Cmp{clientv3.Compare(clientv3.LeaseValue(key), "=", lid)}
	tr, err := b.client.Txn(ctx).If(ours...).Then(clientv3.OpGet(key)).Commit()
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
	}
	if !tr.Succeeded {
		// The etcd lease is left to expire: a Lease not made by this
		// backend may name someone else's.
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", backendkit.ErrLeaseLost)
	}
	var kv *mvccpb.KeyValue
	if rs := tr.Responses; len(rs) == 1 && rs[0].GetResponseRange() != nil {
		kv = firstKV(rs[0].GetResponseRange().Kvs)
	}
	if kv == nil {
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", backendkit.ErrLeaseLost)
	}
	got, err := decodeKV(l.Election, kv)
	if err != nil || got.Holder != l.Holder || got.Term != l.Term {
		// Not the record we wrote; leave it and its lease alone.
		return fxelection.Lease{}, fmt.Errorf("renew lease: %w", backendkit.ErrLeaseLost)
	}
	ttl := ka.TTL
	if want := ttlSeconds(l.Duration); want > ttl {
		// The put states the term: the key's mod revision changes.
		ours = append(ours, clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision))
		// What is stored stays (a checked record), with the new duration.
		got.Duration = l.Duration
		value, err := encodeRecord(got)
		if err != nil {
			return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
		}
		g, err := b.client.Grant(ctx, want)
		if err != nil {
			return fxelection.Lease{}, fmt.Errorf("renew lease: grant: %w", err)
		}
		tr, err := b.client.Txn(ctx).If(ours...).Then(clientv3.OpPut(key, value, clientv3.WithLease(g.ID))).Commit()
		if err != nil {
			b.revoke(ctx, g.ID)
			return fxelection.Lease{}, fmt.Errorf("renew lease: %w", err)
		}
		if !tr.Succeeded {
			b.revoke(ctx, g.ID)
			return fxelection.Lease{}, fmt.Errorf("renew lease: %w", backendkit.ErrLeaseLost)
		}
		b.revoke(ctx, lid)
		l.Version, ttl = formatLeaseID(int64(g.ID)), g.TTL
	}
	l.ExpiresAt = start.Add(time.Duration(ttl) * time.Second)
	return l, nil
}

// releaseLease is Release (see backendkit.Redacting), implementing
// fxelection.Backend: it reads the key and, if it still has lease.Term as
// its term, is attached to lease's etcd lease and names lease.Holder,
// revokes that etcd lease, which deletes the key in the same step (etcd
// deletes a lease's keys atomically with it). A key attached to another etcd
// lease is never touched, so a stale Release cannot remove a later holder's
// record. A lease that is no longer ours (expired, taken over, already
// released, or a foreign value) is left alone and nil is returned. The term
// survives: the next holder's term is the revision of a later write.
func (b *Backend) releaseLease(ctx context.Context, l fxelection.Lease) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	id, ok := parseLeaseID(l.Version)
	if !ok {
		return nil // not a lease this backend issued: nothing of ours to end
	}
	resp, err := b.client.Get(ctx, b.Key(l.Election))
	if err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	kv := firstKV(resp.Kvs)
	if kv == nil || kv.Lease != id {
		return nil
	}
	if got, err := decodeKV(l.Election, kv); err != nil || got.Holder != l.Holder || got.Term != l.Term {
		return nil
	}
	if _, err := b.client.Revoke(ctx, clientv3.LeaseID(id)); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("release lease: revoke: %w", err)
	}
	return nil
}

// transferLease is Transfer (see backendkit.Redacting), implementing
// backendkit.Transferer: it ends lease, matched as Release matches it (the
// key attached to lease's etcd lease, naming lease.Holder with lease.Term),
// and in the same etcd transaction writes the record Acquire writes for req
// on a free key: held by req.Identity, with req.Incarnation and
// req.Metadata, attached to a new etcd lease granted for req.Duration (whole
// seconds, rounded up). It reads the key, checks it is lease's, grants the
// new etcd lease and runs one transaction: if the key is still on lease's
// etcd lease and its mod revision is the one read, put the record on the new
// etcd lease. The value states no term, so the term is that transaction's
// revision, as for any new leadership: above every revision etcd ever had,
// so above every term the election had. The key is never absent in between:
// no other candidate can take it. lease's etcd lease, which holds the key no
// longer, is then revoked, as Release revokes it (best effort: if that fails
// it expires with its TTL, and the record is not on it either way); its
// holder's Renew then fails. The put wakes the election's subscribers
// through the push watch (see Subscribe). The returned lease is what Acquire
// would have returned for req.
//
// When lease is no longer the caller's (expired, released, taken over or
// re-acquired on another etcd lease, a foreign value, a Version this
// backend did not issue) or req.Election is not lease.Election, Transfer
// changes nothing and returns an error matching backendkit.ErrLeaseLost.
// req is checked first, as Acquire checks it. The new etcd lease of an
// attempt that fails is revoked; when the transaction's reply is lost the
// put may have been applied, and that revocation then deletes the record:
// the election is left either the caller's or free (or, if the revocation
// fails too, held by req.Identity until its TTL runs out). Get tells.
func (b *Backend) transferLease(ctx context.Context, l fxelection.Lease, req backendkit.AcquireRequest) (fxelection.Lease, error) {
	if err := ctx.Err(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("%s: %w", opTransfer, err)
	}
	if err := checkRequest(opTransfer, req); err != nil {
		return fxelection.Lease{}, err
	}
	if req.Election != l.Election {
		return fxelection.Lease{}, fmt.Errorf("%s: %w: the request is for another election", opTransfer, backendkit.ErrLeaseLost)
	}
	id, ok := parseLeaseID(l.Version)
	if !ok {
		return fxelection.Lease{}, fmt.Errorf("%s: %w: not a lease this backend issued", opTransfer, backendkit.ErrLeaseLost)
	}
	key := b.Key(l.Election)
	resp, err := b.client.Get(ctx, key)
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("%s: %w", opTransfer, err)
	}
	kv := firstKV(resp.Kvs)
	if kv == nil || kv.Lease != id {
		return fxelection.Lease{}, fmt.Errorf("%s: %w", opTransfer, backendkit.ErrLeaseLost)
	}
	if got, err := decodeKV(l.Election, kv); err != nil || got.Holder != l.Holder || got.Term != l.Term {
		return fxelection.Lease{}, fmt.Errorf("%s: %w", opTransfer, backendkit.ErrLeaseLost)
	}
	// No term in the value: a new leadership, whose term is the
	// transaction's revision.
	value, err := encodeRecord(fxelection.Lease{
		Holder:      req.Identity,
		Incarnation: req.Incarnation,
		Metadata:    req.Metadata,
		Duration:    req.Duration,
	})
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("%s: %w", opTransfer, err)
	}
	start := time.Now()
	g, err := b.client.Grant(ctx, ttlSeconds(req.Duration))
	if err != nil {
		return fxelection.Lease{}, fmt.Errorf("%s: grant: %w", opTransfer, err)
	}
	old := clientv3.LeaseID(id)
	tr, err := b.client.Txn(ctx).If(
		clientv3.Compare(clientv3.LeaseValue(key), "=", old),
		clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision),
	).Then(clientv3.OpPut(key, value, clientv3.WithLease(g.ID))).Commit()
	if err != nil {
		// The put may have been applied: revoking the lease deletes it.
		b.revoke(ctx, g.ID)
		return fxelection.Lease{}, fmt.Errorf("%s: %w", opTransfer, err)
	}
	if !tr.Succeeded {
		b.revoke(ctx, g.ID)
		return fxelection.Lease{}, fmt.Errorf("%s: %w", opTransfer, backendkit.ErrLeaseLost)
	}
	// The old etcd lease holds the key no longer: revoking it, as Release
	// does, deletes nothing of the new record.
	b.revoke(ctx, old)
	rev := tr.Header.Revision
	if rev <= kv.ModRevision {
		return fxelection.Lease{}, fmt.Errorf("%s: %w: revision %d", opTransfer, backendkit.ErrInvalidRecord, rev)
	}
	return grantedLease(req, uint64(rev), g, start), nil
}

// getLease is Get (see backendkit.Redacting), implementing
// fxelection.Backend: the key's record and its etcd lease's remaining TTL
// (TimeToLive), or backendkit.ErrNoLease when the key is absent or its etcd
// lease was revoked (and the key deleted with it) since the read. A key is a
// lease for as long as etcd keeps it, which is what Acquire and Renew go by
// too: an etcd lease in its last second, or past its TTL but not yet revoked
// by the etcd leader, is still reported. ExpiresAt is the local clock plus
// the remaining TTL (whole seconds, rounded down, as etcd reports it; never
// before now); it is for display.
func (b *Backend) getLease(ctx context.Context, election string) (fxelection.Lease, error) {
	if err := ctx.Err(); err != nil {
		return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
	}
	// The key and its etcd lease's TTL are two reads. If the lease is gone
	// by the second, the key may have moved to another etcd lease in
	// between (its holder re-acquired), so the key is read again: only a
	// key that is gone, or still on the lease that is gone, is no lease.
	var prev *mvccpb.KeyValue
	for attempt := 1; ; attempt++ {
		resp, err := b.client.Get(ctx, b.Key(election))
		if err != nil {
			return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
		}
		kv := firstKV(resp.Kvs)
		if kv == nil || prev != nil && kv.ModRevision == prev.ModRevision && kv.Lease == prev.Lease {
			return fxelection.Lease{}, backendkit.ErrNoLease
		}
		l, err := decodeKV(election, kv)
		if err != nil {
			return fxelection.Lease{}, fmt.Errorf("get lease: %w", err)
		}
		ttl, err := b.client.TimeToLive(ctx, clientv3.LeaseID(kv.Lease))
		if errors.Is(err, rpctypes.ErrLeaseNotFound) || err == nil && leaseGone(ttl) {
			if attempt >= maxAcquireAttempts {
				return fxelection.Lease{}, errors.New("get lease: the key kept moving to other etcd leases")
			}
			prev = kv // revoked since the read: read the key again
			continue
		}
		if err != nil {
			return fxelection.Lease{}, fmt.Errorf("get lease: time to live: %w", err)
		}
		l.ExpiresAt = time.Now().Add(time.Duration(max(ttl.TTL, 0)) * time.Second)
		return l, nil
	}
}

// leaseGone reports whether a TimeToLive answer says the etcd lease no
// longer exists: etcd answers TTL -1 and no granted TTL then. A live lease
// in its last second reports TTL 0 (etcd rounds the remaining time down),
// and one past its TTL that the etcd leader has not yet revoked reports 0
// or less with its granted TTL: both still hold their keys, which Acquire
// and Renew treat as held, so Get must report them too.
func leaseGone(ttl *clientv3.LeaseTimeToLiveResponse) bool {
	return ttl.TTL < 0 && ttl.GrantedTTL <= 0
}

// firstKV returns the first of kvs, or nil.
func firstKV(kvs []*mvccpb.KeyValue) *mvccpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	return kvs[0]
}

// decodeKV is decodeRecord for a key etcd returned.
func decodeKV(election string, kv *mvccpb.KeyValue) (fxelection.Lease, error) {
	return decodeRecord(election, storedKey{
		Value:          kv.Value,
		CreateRevision: kv.CreateRevision,
		ModRevision:    kv.ModRevision,
		Lease:          kv.Lease,
	})
}
